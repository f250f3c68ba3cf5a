#!/usr/bin/env bash
# The ansible-core versions beyond the 2.19 that the rest of make test runs on: the newest 2.20 and
# 2.21 (requirements/core-<series>.txt), each on Python 3.12 in a virtualenv of its own
# (scripts/core-venv.sh). Each runs only what a new ansible-core or a new controller Python can break:
#   units   the unit tests (Python 3.12, that release's module_utils and plugin loader);
#   sanity  ansible-test sanity (each release adds checks; ignore files stay empty);
#   audit   the audit playbook against this machine and an SD-card image (that release's playbook
#           engine, templating, action plugins and AnsiballZ), with the controller's Python as the target and with the
#           oldest target Python the release supports where one is installed (3.8 for 2.19, 3.9 for
#           2.20 and later: ansible/module_utils/basic.py _PY_MIN). Every report must give every
#           detection the status 2.19 gives it on the same machine.
# The e2e tests, Molecule and ansible-lint stay on 2.19: they exercise our code and the services
# under test, not the ansible-core release.
# Usage: scripts/core-matrix.sh [series ...] (default: 2.20 2.21); MATRIX_STEPS="units sanity audit".
source "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}" || exit 1
series_list=("$@")
[ "${#series_list[@]}" -gt 0 ] || series_list=(2.20 2.21)
steps="${MATRIX_STEPS:-units sanity audit}"
out="${BUILD}/matrix"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-${BUILD}/collections}"
export POSTMORTEM_COLLECTIONS_PATH="${POSTMORTEM_COLLECTIONS_PATH:-${BUILD}/collections}"
export ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
[ -f "${ANSIBLE_COLLECTIONS_PATH}/ansible_collections/homelab/postmortem/MANIFEST.json" ] || \
  die "the collection is not installed in ${ANSIBLE_COLLECTIONS_PATH}: run make collection first"

failures=()
timed() {  # label command...: runs it, logs how long it took; a failure is reported at the end
  local label="$1" start=${SECONDS}
  shift
  log "${label}"
  if "$@"; then
    log "${label}: $((SECONDS - start)) s"
  else
    log "FAILED: ${label} ($((SECONDS - start)) s)"
    failures+=("${label}")
  fi
}

oldest_target() {  # series -> the oldest target Python that ansible-core series supports, if installed here
  local minor=9 candidate
  [ "$1" = 2.19 ] && minor=8
  for candidate in $(printf '%s\n' "${PYENV_ROOT:-${HOME}/.pyenv}"/versions/3."${minor}".*/bin/python3 | sort -V -r) \
                   "/usr/bin/python3.${minor}"; do
    if [ -x "${candidate}" ] && "${candidate}" -c "import sys; sys.exit(sys.version_info[:2] != (3, ${minor}))" 2>/dev/null; then
      echo "${candidate}"
      return
    fi
  done
}

audit() {  # series virtualenv target_python|'' -> writes ${out}/<series>[-<target>]/postmortem.json
  local series="$1" playbook_venv="$2" target="${3:-}" dir extra=()
  dir="${out}/${series}${target:+-target-$("${target}" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}"
  rm -rf "${dir}" && mkdir -p "${dir}"
  [ -z "${target}" ] || extra=(-e "ansible_python_interpreter=${target}")
  "${playbook_venv}/bin/ansible-playbook" homelab.postmortem.audit -i "${out}/inventory.yml" \
    -e "{\"postmortem_report_dir\": \"${dir}\"}" "${extra[@]}" >"${dir}/output.txt" 2>&1 || {
    cat "${dir}/output.txt" >&2
    return 1
  }
  if grep -n 'DEPRECATION WARNING' "${dir}/output.txt" >&2; then
    log "ansible-core ${series} deprecates something the audit uses (${dir}/output.txt)"
    return 1
  fi
}

contains() { case " ${steps} " in *" $1 "*) return 0 ;; esac; return 1; }

venvs=()
for series in "${series_list[@]}"; do
  venvs+=("$(scripts/core-venv.sh "${series}")")
done
core_version() { "$1/bin/python" -c 'from ansible.release import __version__; print(__version__)'; }

if contains units; then
  # One hostile-input test takes its verdict from PEFT's own get_pattern_key, compiled from PEFT's
  # source without importing PEFT (which would load torch): the package alone, no dependencies.
  peft_pin="$(grep -oP '^peft==\S+' "${REPO_ROOT}/requirements/test-peft.txt")"
  [ -n "${peft_pin}" ] || die "requirements/test-peft.txt pins no peft"
  for core_venv in "${venvs[@]}"; do
    "${core_venv}/bin/pip" install --disable-pip-version-check -q --no-deps "${peft_pin}" || \
      die "cannot install ${peft_pin} into ${core_venv}"
  done
  # The unit tests mostly wait (on commands, timeouts, sockets): the series run side by side.
  logs="${BUILD}/matrix-units"
  rm -rf "${logs}" && mkdir -p "${logs}"
  start=${SECONDS}
  pids=()
  for i in "${!series_list[@]}"; do
    log "unit tests on ansible-core $(core_version "${venvs[$i]}") (log: ${logs}/${series_list[$i]}.log)"
    "${venvs[$i]}/bin/python" -m pytest tests/unit -q -p no:cacheprovider >"${logs}/${series_list[$i]}.log" 2>&1 &
    pids+=($!)
  done
  failed=()
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${series_list[$i]}")
  done
  for series in "${failed[@]}"; do
    tail -n 60 "${logs}/${series}.log" >&2
  done
  [ "${#failed[@]}" -eq 0 ] || failures+=("unit tests on ansible-core ${failed[*]} (logs in ${logs})")
  log "unit tests on ansible-core ${series_list[*]}: $((SECONDS - start)) s"
fi
if contains sanity; then
  for i in "${!series_list[@]}"; do
    timed "sanity on ansible-core $(core_version "${venvs[$i]}")" \
      env SANITY_VENV="${venvs[$i]}" SANITY_PYTHON=3.12 scripts/sanity.sh
  done
fi
if contains audit; then
  rm -rf "${out}" && mkdir -p "${out}/pi-image/boot/firmware" "${out}/pi-image/lib/modules/6.18.34+rpt-rpi-v8"
  # This machine, and a Raspberry Pi SD-card image whose next boot is affected (pi_ir_tx at_risk), so
  # a detection has something to find and a fix to offer on every version.
  printf 'dtoverlay=pwm-ir-tx\n' >"${out}/pi-image/boot/firmware/config.txt"
  cat >"${out}/inventory.yml" <<INVENTORY
all:
  vars:
    ansible_connection: local
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  hosts:
    localhost: {}
    pi-image:
      postmortem_root: ${out}/pi-image
INVENTORY
  timed "audit on ansible-core 2.19 (the reference)" audit 2.19 "${VENV}"
  old="$(oldest_target 2.19)"
  if [ -n "${old}" ]; then
    timed "audit on ansible-core 2.19, target ${old}" audit 2.19 "${VENV}" "${old}"
  else
    log "no Python 3.8 here: the oldest target 2.19 supports is not audited"
  fi
  for i in "${!series_list[@]}"; do
    series="${series_list[$i]}"
    timed "audit on ansible-core $(core_version "${venvs[$i]}")" audit "${series}" "${venvs[$i]}"
    old="$(oldest_target "${series}")"
    if [ -n "${old}" ]; then
      timed "audit on ansible-core $(core_version "${venvs[$i]}"), target ${old}" audit "${series}" "${venvs[$i]}" "${old}"
    else
      log "no Python 3.9 here: the oldest target ${series} supports is not audited"
    fi
  done
fi
if contains audit; then
  # Every run must agree with 2.19's: the same hosts, states and status per detection.
  "${VENV}/bin/python" - "${out}" <<'PY' || failures+=("the audit differs between ansible-core versions (reports in ${out})")
import json, os, sys
out = sys.argv[1]
def statuses(run):
    with open(os.path.join(out, run, 'postmortem.json'), encoding='utf-8') as handle:
        report = json.load(handle)
    return dict((h['name'], (h['state'], dict((i, f['status']) for i, f in sorted(h['findings'].items()))))
                for h in report['hosts'])
runs = sorted(d for d in os.listdir(out) if os.path.isfile(os.path.join(out, d, 'postmortem.json')))
reference = statuses('2.19')
different = [run for run in runs if statuses(run) != reference]
for run in different:
    print('%s: %s\n   2.19: %s' % (run, statuses(run), reference), file=sys.stderr)
if not different:
    print('==> the same statuses in every audit run: %s' % ', '.join(runs), file=sys.stderr)
sys.exit(1 if different else 0)
PY
fi
if [ "${#failures[@]}" -gt 0 ]; then
  printf 'FAILED: %s\n' "${failures[@]}" >&2
  exit 1
fi
log "ansible-core ${series_list[*]}: ${steps} passed"
