#!/usr/bin/env bash
# Before publishing (README.md, "Releasing"): the release is cut, galaxy.yml names the repository
# given, and galaxy-importer passes on the built tarball with that address, with no error and no warning.
# Usage: make release-check REPOSITORY=https://github.com/<owner>/<repo>
source "$(dirname "$0")/lib.sh"
repository="${1:-}"
[ -n "${repository}" ] || die "usage: make release-check REPOSITORY=<the collection's public repository address>"
case "${repository}" in
  https://*.invalid/* | https://example.* | http://*) die "REPOSITORY must be the real https address, not ${repository}" ;;
  https://*) ;;
  *) die "REPOSITORY must be an https address: ${repository}" ;;
esac
"${VENV}/bin/python" "${REPO_ROOT}/scripts/release_state.py" --released || die "the release is not cut"
named="$("${VENV}/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1])).get("repository") or "")' "${REPO_ROOT}/galaxy.yml")"
[ "${named}" = "${repository}" ] || \
  die "galaxy.yml says repository: '${named}'; set it to ${repository} (the tarball you publish carries galaxy.yml's, not this check's)"
"${REPO_ROOT}/scripts/galaxy-import.sh" "${repository}"
log "release $("${VENV}/bin/python" "${REPO_ROOT}/scripts/release_state.py" --version) is ready to publish: ansible-galaxy collection publish ${BUILD}/dist/homelab-postmortem-*.tar.gz"
