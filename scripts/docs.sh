#!/usr/bin/env bash
# The documentation site, into build/docs (open build/docs/index.html): antsibull-docs' pages for every
# module and role of the collection as built (build/collections), a page per playbook, and the
# Markdown pages of docs/ with README.md and CHANGELOG.rst (scripts/docsite.py), rendered by Sphinx
# with docsite/conf.py. Offline: nothing is fetched. Any warning fails the build (-W), and so does
# any error antsibull-docs reports about a plugin's documentation.
# Uses the ansible-core 2.21 virtualenv (scripts/core-venv.sh), so the pages are the newest ansible-doc's.
source "$(dirname "$0")/lib.sh"
venv="$("${REPO_ROOT}/scripts/core-venv.sh" 2.21 requirements/release.txt)"
collections="${ANSIBLE_COLLECTIONS_PATH:-${BUILD}/collections}"
installed="${collections}/ansible_collections/homelab/postmortem"
[ -f "${installed}/MANIFEST.json" ] || die "the collection is not installed in ${collections}: run make collection first"
export ANSIBLE_COLLECTIONS_PATH="${collections}" POSTMORTEM_COLLECTIONS_PATH="${collections}"
export ANSIBLE_NOCOLOR=1 PATH="${venv}/bin:${PATH}"
src="${BUILD}/docs-src"
out="${BUILD}/docs"
rm -rf "${src}" "${out}" && mkdir -p "${src}"
# antsibull-docs wants its output directory writable by its owner only.
chmod og-w "${src}"

log "antsibull-docs lint-collection-docs"
# On a copy outside the repository: given a path inside a git work tree, antsibull-docs copies only the files
# git tracks, and build/ is not tracked, so it would lint no plugin at all and report nothing.
lint_copy="$(mktemp -d)"
trap 'rm -rf "${lint_copy}"' EXIT
mkdir -p "${lint_copy}/ansible_collections/homelab"
cp -r "${installed}" "${lint_copy}/ansible_collections/homelab/postmortem"
"${venv}/bin/antsibull-docs" lint-collection-docs --plugin-docs "${lint_copy}/ansible_collections/homelab/postmortem"

log "antsibull-docs: a page for every module and role"
"${venv}/bin/antsibull-docs" --config-file "${REPO_ROOT}/docsite/antsibull-docs.cfg" collection --use-current \
  --dest-dir "${src}" --no-add-antsibull-docs-version homelab.postmortem 2>"${BUILD}/docs-antsibull.log" || {
  cat "${BUILD}/docs-antsibull.log" >&2
  die "antsibull-docs failed"
}
if grep -qE 'ERROR|WARNING' "${BUILD}/docs-antsibull.log"; then
  cat "${BUILD}/docs-antsibull.log" >&2
  die "antsibull-docs could not document everything (above)"
fi

log "the docs pages, README, changelog and a page per playbook"
"${venv}/bin/python" "${REPO_ROOT}/scripts/docsite.py" "${src}"

log "sphinx-build -W into ${out}"
"${venv}/bin/sphinx-build" -W --keep-going -q -b html -c "${REPO_ROOT}/docsite" "${src}" "${out}"
log "docs site: ${out}/index.html"
