#!/usr/bin/env bash
# Build the collection tarball and install it into build/collections, the
# collections path `make audit` and the tests use: what users get is what we test.
source "$(dirname "$0")/lib.sh"
out="${BUILD}/dist"
rm -rf "${out}" && mkdir -p "${out}"
"${VENV}/bin/ansible-galaxy" collection build "${REPO_ROOT}" --output-path "${out}" --force >/dev/null
tarball="$(ls "${out}"/homelab-postmortem-*.tar.gz)"
rm -rf "${BUILD}/collections/ansible_collections/homelab/postmortem"
"${VENV}/bin/ansible-galaxy" collection install "${tarball}" -p "${BUILD}/collections" --force --no-deps >/dev/null
log "installed $(basename "${tarball}") into ${BUILD}/collections"
