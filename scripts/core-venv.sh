#!/usr/bin/env bash
# The virtualenv of one newer ansible-core for the test matrix: build/venv-core-<series>, on Python
# 3.12 (ansible-core 2.20 and later need a 3.12+ controller; .venv stays on the system's 3.11 and
# ansible-core 2.19). One virtualenv per series serves its unit tests, sanity and audit run; the
# 2.21 one also carries make docs and the Galaxy import check (requirements/release.txt).
# Usage: scripts/core-venv.sh 2.20|2.21 [more requirement files]; prints the virtualenv's path.
# POSTMORTEM_PYTHON312=/path/to/python3.12 chooses the interpreter.
source "$(dirname "$0")/lib.sh"
series="${1:?usage: core-venv.sh 2.20|2.21 [requirements ...]}"
shift
req="requirements/core-${series}.txt"
[ -f "${REPO_ROOT}/${req}" ] || die "no ${req}: see requirements/core-*.txt for the series the matrix knows"

is_312() { [ -x "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

find_python312() {
  local tried=() candidate
  if [ -n "${POSTMORTEM_PYTHON312:-}" ]; then
    is_312 "${POSTMORTEM_PYTHON312}" && { echo "${POSTMORTEM_PYTHON312}"; return; }
    die "POSTMORTEM_PYTHON312=${POSTMORTEM_PYTHON312} is not a Python 3.12 interpreter"
  fi
  # A pyenv shim may exist for a version pyenv has not selected (it then fails): each candidate is run.
  for candidate in "$(command -v python3.12 2>/dev/null || true)" \
                   $(printf '%s\n' "${PYENV_ROOT:-${HOME}/.pyenv}"/versions/3.12.*/bin/python3 | sort -V -r) \
                   /usr/local/bin/python3.12 /usr/bin/python3.12; do
    [ -n "${candidate}" ] || continue
    tried+=("${candidate}")
    is_312 "${candidate}" && { echo "${candidate}"; return; }
  done
  die "ansible-core ${series} needs a Python 3.12 controller and none was found (tried: ${tried[*]:-python3.12 on PATH, ${PYENV_ROOT:-${HOME}/.pyenv}/versions/3.12.*}). Install one (pyenv install 3.12) or set POSTMORTEM_PYTHON312=/path/to/python3.12."
}

venv="${BUILD}/venv-core-${series}"
python="$(find_python312)"
if [ -x "${venv}/bin/python" ] && ! is_312 "${venv}/bin/python"; then
  log "${venv} is not on Python 3.12: recreating it"
  rm -rf "${venv}"
fi
VENV="${venv}" PYTHON="${python}" "${REPO_ROOT}/scripts/venv.sh" "${req}" "$@" >&2
echo "${venv}"
