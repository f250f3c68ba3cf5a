"""What a release claims and ships: one version, fragments no linter takes for a playbook, a tarball
with only what an installed collection uses, and version claims that match the test matrix."""
import fnmatch
import os
import re
import subprocess
import sys
import tarfile

import pytest
import yaml

from ..helpers.paths import REPO_ROOT, load_script


RELEASE = load_script('release_state')


def _read(relative):
    with open(os.path.join(REPO_ROOT, relative), encoding='utf-8') as handle:
        return handle.read()


def test_galaxy_version_and_changelog_agree():
    assert RELEASE.problems() == []


def test_release_state_catches_a_version_that_is_already_released(monkeypatch):
    monkeypatch.setattr(RELEASE, 'galaxy_version', lambda: '0.1.0')
    monkeypatch.setattr(RELEASE, 'releases', lambda: ['0.1.0'])
    monkeypatch.setattr(RELEASE, 'fragments', lambda: ['27-release.yml'])
    assert [p for p in RELEASE.problems() if 'already released' in p]
    monkeypatch.setattr(RELEASE, 'galaxy_version', lambda: '0.0.9')
    assert [p for p in RELEASE.problems() if 'older than the last release' in p]
    monkeypatch.setattr(RELEASE, 'galaxy_version', lambda: '0.2.0')
    assert RELEASE.problems() == []
    assert [p for p in RELEASE.problems(released=True) if 'not cut' in p]


# ansible-lint's own kinds (ansiblelint/config.py DEFAULT_KINDS) that would take a YAML file under
# changelogs/fragments/ for a playbook.
PLAYBOOK_KINDS = ('*playbook*.yml', '*playbook*.yaml')


def test_no_changelog_fragment_is_taken_for_a_playbook():
    taken = [f for f in RELEASE.fragments() if any(fnmatch.fnmatch(f, kind) for kind in PLAYBOOK_KINDS)]
    assert not taken, 'ansible-lint (and Galaxy) read these as playbooks: rename them (git mv): %s' % taken


# What ships: top-level entries of the tarball, and what a role directory may hold. Everything else
# (tests, Molecule scenarios, the Makefile's scripts, build recipes) is for a checkout.
SHIPS = {'MANIFEST.json', 'FILES.json', 'README.md', 'CHANGELOG.rst', 'LICENSES', 'changelogs', 'docs', 'examples', 'meta',
         'playbooks', 'plugins', 'roles'}
ROLE_PARTS = {'README.md', 'defaults', 'files', 'handlers', 'meta', 'tasks', 'templates', 'vars'}
NEVER = ('*/__pycache__/*', '*.pyc', '.ansible/*', '*/molecule/*', 'tests/*', 'changelogs/fragments/*')


@pytest.fixture(scope='module')
def built_tarball(tmp_path_factory):
    """The tarball ansible-galaxy builds from this checkout now, with galaxy.yml's build_ignore."""
    out = tmp_path_factory.mktemp('dist')
    galaxy = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')
    subprocess.run([galaxy, 'collection', 'build', REPO_ROOT, '--output-path', str(out)], check=True,
                   capture_output=True, timeout=300)
    [name] = os.listdir(str(out))
    with tarfile.open(os.path.join(str(out), name)) as archive:
        return sorted(m.name for m in archive.getmembers())


def test_built_tarball_holds_only_what_ships(built_tarball):
    assert set(m.split('/')[0] for m in built_tarball) <= SHIPS, sorted(set(m.split('/')[0] for m in built_tarball) - SHIPS)
    for member in built_tarball:
        assert not any(fnmatch.fnmatch(member, pattern) for pattern in NEVER), member
        parts = member.split('/')
        if parts[0] == 'roles' and len(parts) > 2:
            assert parts[2] in ROLE_PARTS, member
        if parts[0] == 'changelogs' and len(parts) > 1:
            assert parts[1] in ('changelog.yaml', 'config.yaml'), member


def test_built_tarball_holds_everything_an_installed_collection_uses(built_tarball):
    wanted = ['README.md', 'CHANGELOG.rst', 'meta/runtime.yml', 'changelogs/changelog.yaml']
    for folder in ('plugins', 'playbooks', 'docs', 'roles', 'examples'):
        for root, dirs, files in os.walk(os.path.join(REPO_ROOT, folder)):
            dirs[:] = [d for d in dirs if d not in ('__pycache__', 'molecule')]
            wanted += [os.path.relpath(os.path.join(root, f), REPO_ROOT) for f in files if not f.endswith('.pyc')]
    missing = sorted(set(wanted) - set(built_tarball))
    assert not missing, missing


def _pinned_core(requirements):
    return re.search(r'^ansible-core==(\S+)$', _read(requirements), re.M).group(1)


# (ansible-core pinned, the Python it is tested on). 2.19 is .venv's (the system's 3.11); 2.20 and
# 2.21 run on 3.12 in scripts/core-matrix.sh.
MATRIX = [(_pinned_core('requirements/controller.txt'), '3.11'),
          (_pinned_core('requirements/core-2.20.txt'), '3.12'),
          (_pinned_core('requirements/core-2.21.txt'), '3.12')]


def _series(version):
    return tuple(int(p) for p in version.split('.')[:2])


def test_the_matrix_is_one_release_per_series():
    assert [_series(pair[0]) for pair in MATRIX] == [(2, 19), (2, 20), (2, 21)]


def test_requires_ansible_is_what_is_tested():
    requires = yaml.safe_load(_read('meta/runtime.yml'))['requires_ansible']
    # A lower bound at the oldest series the matrix runs, and no upper bound: the matrix runs the
    # newest release there is, and a cap would claim that the next one breaks, which nobody knows yet.
    match = re.match(r'^>=(\d+)\.(\d+)\.0$', requires)
    assert match, requires
    assert (int(match.group(1)), int(match.group(2))) == _series(MATRIX[0][0])


def test_readme_requirements_name_what_is_tested():
    readme = _read('README.md')
    section = readme.split('\n## Requirements\n', 1)[1].split('\n## ', 1)[0]
    for version, python in MATRIX:
        assert version in section, 'README.md, Requirements, does not name ansible-core %s' % version
        assert 'Python %s' % python in section
    # ansible/module_utils/basic.py _PY_MIN: (3, 8) in 2.19, (3, 9) in 2.20 and 2.21.
    assert 'Python 3.8' in section and 'Python 3.9' in section


def test_execution_environment_is_a_tested_pair():
    ee = yaml.safe_load(_read('execution-environment.yml'))
    core = re.match(r'^ansible-core==(\S+)$', ee['dependencies']['ansible_core']['package_pip']).group(1)
    python = re.match(r'^/usr/bin/python(\d+\.\d+)$', ee['dependencies']['python_interpreter']['python_path']).group(1)
    assert (core, python) in MATRIX
    assert ee['dependencies']['python_interpreter']['package_system'] == 'python%s' % python


def test_summary_points_at_the_installed_collections_docs():
    """The summary's docs path is the installed collection's own docs/ (it ships), with a page per detection."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.registry import DETECTIONS
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_summary
    docs = report_summary.docs_dir()
    assert docs.endswith(os.path.join('ansible_collections', 'homelab', 'postmortem', 'docs'))
    assert not docs.startswith(REPO_ROOT + os.sep + 'docs')
    for detection in DETECTIONS:
        assert os.path.isfile(os.path.join(docs, detection.ID + '.md')), detection.ID


def test_matrix_without_python312_says_how_to_get_one(tmp_path):
    """ansible-core 2.20 and later need a Python 3.12 controller: where none is found, the matrix stops
    with what it tried and how to give it one, before creating anything."""
    if any(os.path.exists(p) for p in ('/usr/bin/python3.12', '/usr/local/bin/python3.12')):
        pytest.skip('this machine has a system Python 3.12, which the matrix would use')
    env = {'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path), 'PYENV_ROOT': str(tmp_path / 'pyenv')}
    proc = subprocess.run([os.path.join(REPO_ROOT, 'scripts', 'core-venv.sh'), '2.21'], capture_output=True,
                          text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 1
    assert 'ansible-core 2.21 needs a Python 3.12 controller and none was found' in proc.stderr
    assert 'POSTMORTEM_PYTHON312=' in proc.stderr
    assert 'creating' not in proc.stderr and 'installing' not in proc.stderr


def test_the_playbooks_stop_an_older_ansible_core_at_their_first_task():
    """#44: Debian's ansible-core 2.14 only warned and ran the audit. The first task of each playbook asserts
    the version meta/runtime.yml requires, so an older core stops there, saying which version is needed."""
    requires = yaml.safe_load(_read('meta/runtime.yml'))['requires_ansible']
    assert requires.startswith('>=')
    for name in ('audit.yml', 'remediate.yml'):
        plays = yaml.safe_load(_read('playbooks/' + name))
        first = plays[0]['tasks'][0]
        assert first['ansible.builtin.assert']['that'] == "ansible_version.full is version('%s', '>=')" % requires[2:], name
        assert ('ansible-core %s or later' % requires[2:]) in first['ansible.builtin.assert']['fail_msg'], name
        assert first.get('any_errors_fatal') is True and first.get('tags') == ['always'], name
