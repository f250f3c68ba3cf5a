#!/usr/bin/env bash
# The controller's pinned requirements (requirements/controller.txt: ansible-core and what it needs)
# as wheels in build/wheels/controller, for virtualenvs that must install without an index: the
# audit_schedule role's Molecule scenario mounts them into its container (which has no network)
# and installs with pip --no-index --find-links. The wheels are for Debian 12's Python 3.11,
# the container's; they are downloaded again when controller.txt changes.
source "$(dirname "$0")/lib.sh"
requirements="${REPO_ROOT}/requirements/controller.txt"
dest="${BUILD}/wheels/controller"
stamp="$(sha256sum "${requirements}" | cut -c1-16)"
[ "$(cat "${dest}/.requirements-sha256" 2>/dev/null)" = "${stamp}" ] && exit 0
log "downloading the wheels of requirements/controller.txt for Python 3.11 into ${dest}"
rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
"${VENV}/bin/pip" download --disable-pip-version-check -q --only-binary=:all: --python-version 3.11 \
  -r "${requirements}" -d "${dest}.tmp"
printf '%s\n' "${stamp}" >"${dest}.tmp/.requirements-sha256"
rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
