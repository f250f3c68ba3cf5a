"""What is derived from the detections is generated, never written by hand, and a new detection is its
file, its registry line, its docs page and its tests: proved by adding a throwaway detection to a copy
of the repository and running the generators and the contract tests there."""
import os
import shutil
import subprocess
import sys

import pytest

from ..helpers.paths import REPO_ROOT, load_script


def test_generated_files_are_current():
    generator = load_script('gen_detection_files')
    stale = []
    for path, text in sorted(generator.outputs().items()):
        with open(path) as handle:
            if handle.read() != text:
                stale.append(os.path.relpath(path, REPO_ROOT))
    assert not stale, '%s stale: run .venv/bin/python scripts/gen_detection_files.py' % ', '.join(stale)


THROWAWAY = '''# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pi_zz_throwaway: a detection that exists only to prove what adding one takes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation


def _marker(ctx, detection, settings):
    if os.path.exists(ctx.path(settings['marker'])):
        return make_finding(detection, 'affected', 'The marker %s is there.' % settings['marker'])
    return make_finding(detection, 'ok', 'No marker.')


DETECTION = Detection(
    'pi_zz_throwaway',
    group='pi',
    title='A throwaway detection finds a marker file',
    applies={'image': True, 'binary': None, 'root': None},
    references=['https://example.invalid/zz'],
    remediation=make_remediation(manual=['Remove the marker file.'], disruption='none'),
    settings={'marker': {'type': 'str', 'default': '/etc/zz-marker', 'description': 'The file whose presence is the failure.'}},
    question=_marker,
)
'''

PAGE = '''# pi_zz_throwaway: a marker file

## What breaks

A marker file stands for a failure that every command hides.

## How we detect it

Its presence under `root`.

| status | when |
| --- | --- |
| `affected` | the marker exists |
| `ok` | it does not |

## Evidence

None beyond the summary.

## The fix

Remove the marker.

## References

- https://example.invalid/zz
'''

TEST = '''from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.pi_zz_throwaway import DETECTION as pi_zz_throwaway


def test_marker(tmp_path):
    (tmp_path / 'etc').mkdir()
    assert registry.run_one(AuditContext(root=str(tmp_path)), pi_zz_throwaway)['status'] == 'ok'
    (tmp_path / 'etc' / 'zz-marker').write_text('x')
    assert registry.run_one(AuditContext(root=str(tmp_path)), pi_zz_throwaway)['status'] == 'affected'
'''


def _git(copy, *args):
    return subprocess.run(['git', '-C', copy] + list(args), capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.mark.skipif(shutil.which('git') is None, reason='needs git to copy the repository')
def test_a_new_detection_is_its_file_registry_line_docs_page_and_tests(tmp_path):
    copy = str(tmp_path / 'ansible_collections' / 'homelab' / 'postmortem')
    os.makedirs(copy)
    files = subprocess.run(['git', '-C', REPO_ROOT, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
                           capture_output=True, check=True, timeout=120).stdout.decode().split('\0')
    for name in [f for f in files if f and os.path.isfile(os.path.join(REPO_ROOT, f))]:
        os.makedirs(os.path.dirname(os.path.join(copy, name)), exist_ok=True)
        shutil.copy2(os.path.join(REPO_ROOT, name), os.path.join(copy, name))
    _git(copy, 'init', '-q')
    _git(copy, 'add', '-A')
    _git(copy, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'copy')

    # The four things a new detection is.
    with open(os.path.join(copy, 'plugins', 'module_utils', 'detections', 'pi_zz_throwaway.py'), 'w') as out:
        out.write(THROWAWAY)
    registry = os.path.join(copy, 'plugins', 'module_utils', 'registry.py')
    with open(registry) as handle:
        text = handle.read()
    text = text.replace('from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_weight_cache\n',
                        'from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_weight_cache\n'
                        'from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_zz_throwaway\n')
    text = text.replace('    vllm_lora_patterns.DETECTION,\n)', '    vllm_lora_patterns.DETECTION,\n    pi_zz_throwaway.DETECTION,\n)')
    with open(registry, 'w') as out:
        out.write(text)
    with open(os.path.join(copy, 'docs', 'pi_zz_throwaway.md'), 'w') as out:
        out.write(PAGE)
    with open(os.path.join(copy, 'tests', 'unit', 'plugins', 'module_utils', 'detections', 'test_pi_zz_throwaway.py'), 'w') as out:
        out.write(TEST)

    env = dict(os.environ, POSTMORTEM_COLLECTIONS_PATH=str(tmp_path))
    for script in ('gen_detection_docs.py', 'gen_detection_files.py'):
        subprocess.run([sys.executable, os.path.join(copy, 'scripts', script)], cwd=copy, env=env, check=True,
                       capture_output=True, timeout=300)
    changed = set(line[3:] for line in _git(copy, 'status', '--porcelain', '--untracked-files=all').splitlines())
    written_by_hand = {'plugins/module_utils/detections/pi_zz_throwaway.py', 'plugins/module_utils/registry.py',
                       'docs/pi_zz_throwaway.md',
                       'tests/unit/plugins/module_utils/detections/test_pi_zz_throwaway.py'}
    generated = {'plugins/modules/pi_zz_throwaway_facts.py', 'plugins/modules/audit_facts.py', 'README.md'}
    assert changed == written_by_hand | generated, sorted(changed)

    tests = ['tests/unit/contract/test_detection_contract.py',
             'tests/unit/contract/test_generated_files.py::test_generated_files_are_current',
             'tests/unit/plugins/module_utils/test_settings.py', 'tests/unit/plugins/module_utils/detections/test_pi_zz_throwaway.py']
    run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider'] + tests, cwd=copy, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
