#!/usr/bin/env bash
# The execution environment's build context: build the collection, then ansible-builder create.
# No registry is reachable here, so the image itself is built where one is:
#   podman build -f build/ee-context/Containerfile -t homelab-postmortem-ee build/ee-context
source "$(dirname "$0")/lib.sh"
"${REPO_ROOT}/scripts/install-collection.sh"
cp "$(ls "${BUILD}"/dist/homelab-postmortem-*.tar.gz)" "${BUILD}/dist/homelab-postmortem.tar.gz"
rm -rf "${BUILD}/ee-context"
(cd "${REPO_ROOT}" && "${VENV}/bin/ansible-builder" create -f execution-environment.yml -c "${BUILD}/ee-context" \
  --output-filename Containerfile -v 1)
log "build context in ${BUILD}/ee-context (Containerfile, _build/)"
