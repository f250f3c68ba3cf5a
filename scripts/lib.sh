# shellcheck shell=bash
# Shared by the setup scripts: paths, logging, root handling.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${REPO_ROOT}/build"
VENV="${VENV:-${REPO_ROOT}/.venv}"
PYTHON="${PYTHON:-python3}"
mkdir -p "${BUILD}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# Run a command as root: directly when we are root, through sudo -n otherwise.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    die "needs root (or passwordless sudo): $*"
  fi
}
