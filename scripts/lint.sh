#!/usr/bin/env bash
# ansible-lint (production profile, see .ansible-lint) and the changelog fragments.
source "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}" || exit 1
log "ansible-lint (production profile)"
# A HOME of its own: ansible-lint puts ~/.ansible/collections first, where Molecule's prerun
# (or a user's `make install`) may have left an older copy of this collection.
mkdir -p "${BUILD}/lint-home"
HOME="${BUILD}/lint-home" PATH="${VENV}/bin:${PATH}" "${VENV}/bin/ansible-lint" --nocolor
log "antsibull-changelog lint"
"${VENV}/bin/antsibull-changelog" lint
