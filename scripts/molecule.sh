#!/usr/bin/env bash
# Every Molecule scenario of every role (check, check-wrote-nothing, converge,
# idempotence, verify), with the base images scripts/setup-podman.sh built.
source "$(dirname "$0")/lib.sh"
set -a
# shellcheck disable=SC1091
source "${BUILD}/podman.env"
set +a
export PATH="${VENV}/bin:${PATH}"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 NO_COLOR=1
status=0
for scenario in "${REPO_ROOT}"/roles/*/molecule/*/molecule.yml; do
  [ -e "${scenario}" ] || continue
  role_dir="$(dirname "$(dirname "$(dirname "${scenario}")")")"
  name="$(basename "$(dirname "${scenario}")")"
  log "molecule test: $(basename "${role_dir}") / ${name}"
  (cd "${role_dir}" && molecule test -s "${name}") || status=1
done
exit "${status}"
