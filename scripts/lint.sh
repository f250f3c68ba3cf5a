#!/usr/bin/env bash
# ansible-lint as people run it: a plain `ansible-lint` (production profile, see .ansible-lint) in a
# fresh copy of the checkout (the files git knows, as scripts/sanity.sh copies them), with no
# collections path from make and a HOME of its own (ansible-lint puts ~/.ansible/collections first,
# where Molecule's prerun or a user's `make install` may have left an older copy of this collection).
# Then the changelog fragments.
source "$(dirname "$0")/lib.sh"
cd "${REPO_ROOT}" || exit 1
fresh="${BUILD}/lint/checkout"
rm -rf "${BUILD}/lint" && mkdir -p "${fresh}" "${BUILD}/lint/home"
git ls-files -z --cached --others --exclude-standard | \
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf - | tar -C "${fresh}" -xf -
log "ansible-lint (production profile) in a fresh copy of the checkout"
(cd "${fresh}" && env -u ANSIBLE_COLLECTIONS_PATH -u POSTMORTEM_COLLECTIONS_PATH HOME="${BUILD}/lint/home" \
  PATH="${VENV}/bin:${PATH}" "${VENV}/bin/ansible-lint" --nocolor)
log "antsibull-changelog lint"
"${VENV}/bin/antsibull-changelog" lint
