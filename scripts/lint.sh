#!/usr/bin/env bash
# ansible-lint (production profile, see .ansible-lint) and the changelog fragments.
source "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}" || exit 1
log "ansible-lint (production profile)"
PATH="${VENV}/bin:${PATH}" "${VENV}/bin/ansible-lint" --nocolor
log "antsibull-changelog lint"
"${VENV}/bin/antsibull-changelog" lint
