#!/usr/bin/env bash
# galaxy-importer, what Galaxy and Automation Hub run on every upload, on the tarball make built
# (build/dist), offline: ansible-test off (make test runs sanity itself), ansible-lint on. It must
# pass with no error and no warning.
#
# galaxy.yml names no repository: the project has no public address yet, and the importer refuses a
# collection without one. So the check gives one only to a copy: it unpacks the built tarball, writes
# a galaxy.yml with a repository beside it and builds that again, then proves the two tarballs carry
# the same files, byte for byte. The address it gives is https://example.invalid/... (".invalid" is
# reserved and can never resolve), unless REPOSITORY names the real one:
#   make release-check REPOSITORY=https://github.com/<owner>/<repo>   (scripts/release-check.sh)
# Usage: scripts/galaxy-import.sh [repository URL]
source "$(dirname "$0")/lib.sh"
# The address: the one given, else galaxy.yml's own once it has one, else the placeholder.
repository="${1:-$("${VENV}/bin/python" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1])).get("repository") or "")' "${REPO_ROOT}/galaxy.yml")}"
repository="${repository:-https://example.invalid/homelab.postmortem}"
work="${BUILD}/galaxy-import"
tarballs=("${BUILD}"/dist/homelab-postmortem-*.tar.gz)
tarball="${tarballs[0]}"
[ -f "${tarball}" ] || die "no tarball in ${BUILD}/dist: run make collection first"
venv="$("${REPO_ROOT}/scripts/core-venv.sh" 2.21 requirements/release.txt)"

rm -rf "${work}" && mkdir -p "${work}/copy" "${work}/dist" "${work}/tmp"
tar -C "${work}/copy" -xzf "${tarball}"
"${venv}/bin/python" - "${REPO_ROOT}/galaxy.yml" "${work}/copy/galaxy.yml" "${repository}" <<'PY'
import sys, yaml
source, dest, repository = sys.argv[1:]
with open(source, encoding='utf-8') as handle:
    galaxy = yaml.safe_load(handle)
galaxy['repository'] = repository
galaxy.pop('build_ignore', None)  # the copy holds only what was built: nothing left to ignore
with open(dest, 'w', encoding='utf-8') as handle:
    yaml.safe_dump(galaxy, handle, sort_keys=False)
PY
"${venv}/bin/ansible-galaxy" collection build "${work}/copy" --output-path "${work}/dist" >/dev/null
copies=("${work}"/dist/homelab-postmortem-*.tar.gz)
copy="${copies[0]}"
"${venv}/bin/python" - "${tarball}" "${copy}" "${repository}" <<'PY' || die "the tarball built for the import is not the one make built"
import json, sys, tarfile
def read(path):
    with tarfile.open(path) as archive:
        manifest = json.load(archive.extractfile('MANIFEST.json'))
        files = json.load(archive.extractfile('FILES.json'))['files']
    return manifest['collection_info'], dict((f['name'], (f['ftype'], f['chksum_sha256'])) for f in files)
built, copy = read(sys.argv[1]), read(sys.argv[2])
info = dict(built[0], repository=sys.argv[3])
if copy[0] != info or copy[1] != built[1]:
    sys.exit('differs: %s' % sorted(set(copy[1].items()) ^ set(built[1].items()))[:10])
PY

# The importer's settings (galaxy_importer/config.py reads GALAXY_IMPORTER_CONFIG first).
cat >"${work}/galaxy-importer.cfg" <<CFG
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
RUN_ANSIBLE_DOC = True
CHECK_CHANGELOG = True
LOG_LEVEL_MAIN = INFO
TMP_ROOT_DIR = ${work}/tmp
CFG
log "galaxy-importer $("${venv}/bin/python" -c 'from importlib.metadata import version; print(version("galaxy-importer"))') on $(basename "${tarball}") (repository ${repository} in the copy only)"
status=0
# It writes importer_result.json into the working directory; HOME of its own, so no collection a
# user installed in ~/.ansible/collections can stand in for what the tarball lacks.
mkdir -p "${work}/home"
(cd "${work}" && env -u ANSIBLE_COLLECTIONS_PATH HOME="${work}/home" PATH="${venv}/bin:${PATH}" \
  GALAXY_IMPORTER_CONFIG="${work}/galaxy-importer.cfg" \
  "${venv}/bin/python" -m galaxy_importer.main "${copy}") >"${work}/import.log" 2>&1 || status=$?
cat "${work}/import.log"
grep -q '^Importer processing completed successfully' "${work}/import.log" || status=1
# Any error or warning fails the check: each one is Galaxy telling a user something about this
# collection.
if grep -nE '^(ERROR|WARNING|CRITICAL)' "${work}/import.log" >&2; then
  log "FAILED: galaxy-importer reported the errors or warnings above (${work}/import.log)"
  status=1
fi
[ "${status}" -eq 0 ] || die "galaxy-importer did not pass (${work}/import.log)"
log "galaxy-importer passed: no error, no warning"
