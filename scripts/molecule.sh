#!/usr/bin/env bash
# Every Molecule scenario of every role (check, check-wrote-nothing, converge,
# idempotence, verify), with the base images scripts/setup-podman.sh built.
source "$(dirname "$0")/lib.sh"
set -a
# shellcheck disable=SC1091
source "${BUILD}/podman.env"
# shellcheck disable=SC1091
source "${BUILD}/llama.env"
set +a
LLAMA_BIN_DIR="$(dirname "${LLAMA_SERVER_BIN}")"
LLAMA_MODEL_DIR="$(dirname "${LLAMA_MODEL}")"
export LLAMA_BIN_DIR LLAMA_MODEL_DIR
export PATH="${VENV}/bin:${PATH}"
# The Python the docker_overlay_recover scenario's local hosts and fleet script run with.
export POSTMORTEM_PYTHON="${VENV}/bin/python"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-${BUILD}/collections}"
export CONTAINERS_CONF="${CONTAINERS_CONF:-${BUILD}/containers.conf}"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 NO_COLOR=1
status=0
# MOLECULE_ROLE=<role> runs one role's scenarios only.
for scenario in "${REPO_ROOT}"/roles/"${MOLECULE_ROLE:-}"*/molecule/*/molecule.yml; do
  [ -e "${scenario}" ] || continue
  role_dir="$(dirname "$(dirname "$(dirname "${scenario}")")")"
  name="$(basename "$(dirname "${scenario}")")"
  log "molecule test: $(basename "${role_dir}") / ${name}"
  (cd "${role_dir}" && molecule test -s "${name}") || status=1
done
# The docker_overlay_recover scenario's swarm is this machine's: stop it whatever happened.
"${VENV}/bin/python" "${REPO_ROOT}/tests/e2e/docker_fleet.py" down >/dev/null 2>&1 || true
exit "${status}"
