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
# Molecule must test exactly the collection make just built into build/collections (prerun: false in
# every molecule.yml keeps it from building its own copy into ~/.ansible/collections). To prove it, the
# scenarios run with a HOME of their own whose ~/.ansible/collections holds a decoy homelab.postmortem
# that fails every role: if Molecule or Ansible ever searched there, a scenario would fail, and Ansible's
# "Another version of 'homelab.postmortem'" warning fails the run below.
decoy_home="${BUILD}/molecule-home"
decoy="${decoy_home}/.ansible/collections/ansible_collections/homelab/postmortem"
rm -rf "${decoy_home}" && mkdir -p "${decoy}/meta"
printf '{"collection_info": {"namespace": "homelab", "name": "postmortem", "version": "0.0.0-decoy"}, "file_manifest_file": {"name": "FILES.json"}, "format": 1}\n' >"${decoy}/MANIFEST.json"
printf '{"files": [], "format": 1}\n' >"${decoy}/FILES.json"
printf -- '---\nrequires_ansible: ">=2.19.0"\n' >"${decoy}/meta/runtime.yml"
for role_dir in "${REPO_ROOT}"/roles/*/; do
  mkdir -p "${decoy}/roles/$(basename "${role_dir}")/tasks"
  printf -- '---\n- name: Fail, this is the decoy\n  ansible.builtin.fail:\n    msg: the decoy homelab.postmortem in ~/.ansible/collections was used\n' \
    >"${decoy}/roles/$(basename "${role_dir}")/tasks/main.yml"
done
export HOME="${decoy_home}"
# Check mode says "would" (#35): every scenario's check step records the messages it shows
# (tests/callback_plugins/check_mode_messages.py; runs without --check record nothing), and
# tests/check_mode_wording.py fails the scenario on a message that claims a change.
export ANSIBLE_CALLBACK_PLUGINS="${REPO_ROOT}/tests/callback_plugins" ANSIBLE_CALLBACKS_ENABLED=check_mode_messages
status=0
# A role without a scenario is a failure, not a role with nothing to run: looping over the scenarios
# alone would pass it without a word (tests/unit/contract/test_role_contract.py holds the same).
for role_dir in "${REPO_ROOT}"/roles/"${MOLECULE_ROLE:-}"*/; do
  if ! compgen -G "${role_dir}molecule/*/molecule.yml" >/dev/null; then
    log "FAILED: role $(basename "${role_dir}") has no Molecule scenario (roles/$(basename "${role_dir}")/molecule/default/molecule.yml)"
    status=1
  fi
done
if [ "${status}" -ne 0 ]; then
  exit 1
fi
# MOLECULE_ROLE=<role> runs one role's scenarios only.
for scenario in "${REPO_ROOT}"/roles/"${MOLECULE_ROLE:-}"*/molecule/*/molecule.yml; do
  [ -e "${scenario}" ] || continue
  role_dir="$(dirname "$(dirname "$(dirname "${scenario}")")")"
  name="$(basename "$(dirname "${scenario}")")"
  log "molecule test: $(basename "${role_dir}") / ${name}"
  log_file="${BUILD}/molecule-$(basename "${role_dir}")-${name}.log"
  POSTMORTEM_CHECK_MESSAGES="${BUILD}/molecule-$(basename "${role_dir}")-${name}-check-messages.jsonl"
  export POSTMORTEM_CHECK_MESSAGES
  rm -f "${POSTMORTEM_CHECK_MESSAGES}"
  (cd "${role_dir}" && molecule test -s "${name}") 2>&1 | tee "${log_file}"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  if [ ! -s "${POSTMORTEM_CHECK_MESSAGES}" ]; then
    log "FAILED: the check step of $(basename "${role_dir}") / ${name} recorded nothing (${POSTMORTEM_CHECK_MESSAGES})"
    status=1
  elif ! "${VENV}/bin/python" "${REPO_ROOT}/tests/check_mode_wording.py" "${POSTMORTEM_CHECK_MESSAGES}"; then
    log "FAILED: $(basename "${role_dir}") / ${name}: check mode claims a change (above; ${POSTMORTEM_CHECK_MESSAGES})"
    status=1
  fi
  if grep -q "Another version of 'homelab.postmortem'" "${log_file}"; then
    log "FAILED: Molecule saw another copy of homelab.postmortem besides ${BUILD}/collections (see ${log_file})"
    status=1
  fi
done
# The docker_overlay_recover scenario's swarm is this machine's: stop it whatever happened.
"${VENV}/bin/python" "${REPO_ROOT}/tests/e2e/docker_fleet.py" down >/dev/null 2>&1 || true
exit "${status}"
