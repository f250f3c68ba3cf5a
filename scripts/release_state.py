"""The collection's one version, read against its changelog (tests/unit/contract/test_release.py, make release-check).

galaxy.yml's `version` is the version being prepared. Between releases it is ahead of the changelog's
last release (changelogs/changelog.yaml) and changelogs/fragments/ holds what it will contain; a
release (`antsibull-changelog release`, which takes the version from galaxy.yml) moves the fragments
into the changelog under that version, and then the two are equal and no fragment is left.

Usage: python scripts/release_state.py [--released]   (prints the problems, exits 1 if any)
       python scripts/release_state.py --version      (galaxy.yml's version)
"""
import os
import re
import sys

import yaml

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEMVER = re.compile(r'^(\d+)\.(\d+)\.(\d+)$')


def _load(relative):
    with open(os.path.join(REPO_ROOT, relative), encoding='utf-8') as handle:
        return yaml.safe_load(handle)


def version_key(version):
    match = SEMVER.match(str(version))
    if not match:
        raise ValueError('%r is not a release version (X.Y.Z)' % version)
    return tuple(int(part) for part in match.groups())


def galaxy_version():
    return str(_load('galaxy.yml')['version'])


def releases():
    return sorted((str(v) for v in (_load('changelogs/changelog.yaml').get('releases') or {})), key=version_key)


def fragments():
    folder = os.path.join(REPO_ROOT, 'changelogs', 'fragments')
    return sorted(f for f in os.listdir(folder) if not f.startswith('.'))


def problems(released=False):
    found = []
    version = galaxy_version()
    try:
        key = version_key(version)
    except ValueError as exc:
        return ['galaxy.yml: %s' % exc]
    history = releases()
    last = history[-1] if history else None
    pending = fragments()
    if last is not None and key < version_key(last):
        found.append('galaxy.yml says %s, older than the last release in the changelog (%s)' % (version, last))
    if pending and last is not None and key == version_key(last):
        found.append('galaxy.yml says %s, which is already released, and %d changelog fragments are waiting: '
                     'set the next version in galaxy.yml (and facts_module.COLLECTION_VERSION)' % (version, len(pending)))
    if released:
        if version != last:
            found.append('the release of %s is not cut: the changelog\'s last release is %s (run antsibull-changelog '
                         'release; README.md, "Releasing")' % (version, last))
        if pending:
            found.append('changelog fragments not released yet: %s' % ', '.join(pending))
        with open(os.path.join(REPO_ROOT, 'CHANGELOG.rst'), encoding='utf-8') as handle:
            if ('v%s\n' % version) not in handle.read():
                found.append('CHANGELOG.rst has no section for v%s (run antsibull-changelog generate)' % version)
    return found


def main(argv):
    if '--version' in argv:
        print(galaxy_version())
        return 0
    found = problems(released='--released' in argv)
    for problem in found:
        print('release: %s' % problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
