#!/usr/bin/env bash
# Build the collection tarball and install it into build/collections, the
# collections path `make audit` and the tests use: what users get is what we test.
source "$(dirname "$0")/lib.sh"
out="${BUILD}/dist"
rm -rf "${out}" && mkdir -p "${out}"
"${VENV}/bin/ansible-galaxy" collection build "${REPO_ROOT}" --output-path "${out}" --force >/dev/null
tarball="$(ls "${out}"/homelab-postmortem-*.tar.gz)"
if [ "${1:-}" = "--user" ]; then
  # The first path of the default collections path: what a plain ansible-playbook searches.
  dest="${HOME}/.ansible/collections"
  # Without make's ANSIBLE_COLLECTIONS_PATH (build/collections): with it, ansible-galaxy warns that
  # ${dest} "will not be picked up", which is true inside make and false for the user's own runs.
  env -u ANSIBLE_COLLECTIONS_PATH "${VENV}/bin/ansible-galaxy" collection install "${tarball}" -p "${dest}" --force --no-deps >/dev/null
  log "installed $(basename "${tarball}") into ${dest}"
  log "run: '${VENV}/bin/ansible-playbook' homelab.postmortem.audit -i INVENTORY   (add -b for root-only checks)"
  exit 0
fi
rm -rf "${BUILD}/collections/ansible_collections/homelab/postmortem"
"${VENV}/bin/ansible-galaxy" collection install "${tarball}" -p "${BUILD}/collections" --force --no-deps >/dev/null
log "installed $(basename "${tarball}") into ${BUILD}/collections"
