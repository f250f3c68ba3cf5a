#!/usr/bin/env bash
# Create the virtualenv and install pinned requirements; a stamp skips the work
# when the requirements file has not changed.
# Usage: scripts/venv.sh requirements/controller.txt [more.txt ...]
source "$(dirname "$0")/lib.sh"
[ -x "${VENV}/bin/python" ] || { log "creating ${VENV}"; "${PYTHON}" -m venv "${VENV}"; }
for req in "$@"; do
  stamp="${VENV}/.stamp-$(basename "${req}")"
  sum="$(sha256sum "${REPO_ROOT}/${req}" | cut -c1-16)"
  if [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${sum}" ]; then
    continue
  fi
  log "installing ${req} into ${VENV}"
  "${VENV}/bin/pip" install --disable-pip-version-check -q -r "${REPO_ROOT}/${req}"
  echo "${sum}" > "${stamp}"
done
