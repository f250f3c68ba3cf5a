#!/usr/bin/env bash
# containers.podman (connection plugin for the systemd-container tests, driver
# for Molecule) without a Galaxy server: take it from the `ansible` wheel on
# PyPI, extracting only that collection (1 MB of the 470 MB wheel).
source "$(dirname "$0")/lib.sh"
ANSIBLE_WHEEL_VERSION=12.3.0
target="${BUILD}/collections/ansible_collections/containers/podman"
[ -f "${target}/MANIFEST.json" ] && exit 0
wheels="${BUILD}/wheels"
mkdir -p "${wheels}"
find_wheel() { find "${wheels}" -maxdepth 1 -name "ansible-${ANSIBLE_WHEEL_VERSION}-*.whl" | head -n1; }
wheel="$(find_wheel)"
if [ -z "${wheel}" ]; then
  log "downloading the ansible ${ANSIBLE_WHEEL_VERSION} wheel for containers.podman"
  "${VENV}/bin/pip" download --disable-pip-version-check -q --no-deps "ansible==${ANSIBLE_WHEEL_VERSION}" -d "${wheels}"
  wheel="$(find_wheel)"
fi
"${VENV}/bin/python" - "${wheel}" "${BUILD}/collections" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = 'ansible_collections/containers/podman/'
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.namelist() if m.startswith(prefix)]
    archive.extractall(dest, members)
print('extracted %d files of containers.podman' % len(members), file=sys.stderr)
PY
