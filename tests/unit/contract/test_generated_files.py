"""What is derived from the detections is generated, never written by hand, and a new detection is what
docs/architecture.md's "Adding a detection" table says: proved by adding a throwaway detection with a
throwaway role to a copy of the repository, row by row of that table, running the generators and the
contract tests there, and taking each file of the role away again to see the contract name it."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from ..helpers.paths import REPO_ROOT, load_script
from . import test_role_contract as role_contract


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
    remediation=make_remediation(role='homelab.postmortem.pi_zz_throwaway', manual=['Remove the marker file.'],
                                 disruption='none'),
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


ROLE_TASKS = """---
- name: Remove the marker
  homelab.postmortem.pi_zz_throwaway_fix:
    marker: "{{ pi_zz_throwaway_marker }}"
"""

ROLE_SPEC = """---
argument_specs:
  main:
    short_description: Remove the throwaway marker
    description:
      - Removes the marker file the C(pi_zz_throwaway) detection finds.
    examples: |
      - name: Remove the marker
        hosts: all
        roles:
          - role: homelab.postmortem.pi_zz_throwaway
            vars:
              pi_zz_throwaway_marker: /etc/zz-marker
    options:
      pi_zz_throwaway_marker:
        type: path
        default: /etc/zz-marker
        description: The marker file.
"""

ROLE_DEFAULTS = """---
pi_zz_throwaway_marker: /etc/zz-marker
"""

FIX_MODULE = """#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pi_zz_throwaway_fix
short_description: Remove the throwaway marker
version_added: 0.2.0
description: [Removes the marker file.]
options:
  marker:
    description: The marker file.
    type: path
    required: true
'''

EXAMPLES = r'''
- homelab.postmortem.pi_zz_throwaway_fix:
    marker: /etc/zz-marker
'''

RETURN = r'''
diff:
  description: The marker's text before, and nothing after.
  returned: always
  type: list
  elements: dict
backups:
  description: None (the marker is not kept).
  returned: always
  type: list
  elements: str
verified:
  description: Whether the marker is gone.
  returned: always
  type: bool
rolled_back:
  description: Whether a removal that did not hold was undone.
  returned: always
  type: bool
msg:
  description: What was done.
  returned: always
  type: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, hostio


class RemoveMarker(fix_protocol.Fix):
    def __init__(self, marker):
        self.marker = marker

    def plan(self):
        if not os.path.exists(self.marker):
            return fix_protocol.Plan()
        return fix_protocol.Plan(writes=[(self.marker, hostio.read_text(self.marker), None)])


def main():
    module = AnsibleModule(argument_spec=dict(marker=dict(type='path', required=True)), supports_check_mode=True)
    fix_protocol.run(module, RemoveMarker(module.params['marker']))


if __name__ == '__main__':
    main()
"""

FIX_TEST = """from ...helpers.modules import run_module


def test_the_marker_is_removed_once(tmp_path):
    marker = tmp_path / 'zz-marker'
    marker.write_text('x')
    assert run_module('pi_zz_throwaway_fix', {'marker': str(marker)}, check_mode=True)['changed'] and marker.exists()
    done = run_module('pi_zz_throwaway_fix', {'marker': str(marker)})
    assert done['changed'] and done['verified'] and not marker.exists()
    assert not run_module('pi_zz_throwaway_fix', {'marker': str(marker)})['changed']
"""

FRAGMENT = """---
minor_changes:
  - pi_zz_throwaway - a throwaway detection.
"""

MOLECULE = """---
driver:
  name: default
"""

ID, ROLE, ISSUE = 'pi_zz_throwaway', 'pi_zz_throwaway', '999'
# What the throwaway writes for each row of the guide's table written by hand, by its path (<id>, <role>, <issue>).
BY_HAND = {
    'plugins/module_utils/detections/<id>.py': THROWAWAY,
    'plugins/module_utils/registry.py': None,    # its line in DETECTIONS: _add_to_registry
    'tests/unit/plugins/module_utils/detections/test_<id>.py': TEST,
    'docs/<id>.md': PAGE,
    'changelogs/fragments/<issue>-<id>.yml': FRAGMENT,
    'roles/<role>/tasks/main.yml': ROLE_TASKS,
    'roles/<role>/meta/argument_specs.yml': ROLE_SPEC,
    'roles/<role>/meta/main.yml': None,          # the ollama_gemma4_renderer role's, as it is
    'roles/<role>/molecule/default/molecule.yml': MOLECULE,
    'plugins/modules/<role>_fix.py': FIX_MODULE,
    'tests/unit/plugins/modules/test_<role>_fix.py': FIX_TEST,
}
# The parts of a role the contract requires, each taken away in turn, and what the contract then says.
ROLE_PARTS = {
    'roles/<role>/tasks/main.yml': 'roles/<role>/tasks/main.yml is missing',
    'roles/<role>/meta/argument_specs.yml': 'roles/<role>/meta/argument_specs.yml is missing',
    'roles/<role>/molecule/default/molecule.yml': 'roles/<role> has no Molecule scenario',
    'tests/unit/plugins/modules/test_<role>_fix.py': 'the fix module <role>_fix (roles/<role>) has no unit test',
    'plugins/modules/<role>_fix.py': 'roles/<role> calls no fix module of the collection',
}


def checklist():
    """[(step, path template, by hand)] from docs/architecture.md's "Adding a detection" table."""
    with open(os.path.join(REPO_ROOT, 'docs', 'architecture.md'), encoding='utf-8') as handle:
        section = handle.read().split('\n## Adding a detection\n', 1)[1].split('\n## ', 1)[0]
    rows = re.findall(r'^\| (\d+) \| `([^`]+)` \| ([^|]+) \|$', section, re.M)
    assert rows, 'docs/architecture.md: "Adding a detection" has no table of files'
    return [(int(step), path, not written.strip().startswith('generated')) for step, path, written in rows]


def concrete(template):
    return template.replace('<id>', ID).replace('<role>', ROLE).replace('<issue>', ISSUE)


def _git(copy, *args):
    return subprocess.run(['git', '-C', copy] + list(args), capture_output=True, text=True, check=True, timeout=120).stdout


def _write(copy, relative, text):
    path = os.path.join(copy, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as out:
        out.write(text)


def _add_to_registry(copy):
    registry = os.path.join(copy, 'plugins', 'module_utils', 'registry.py')
    with open(registry) as handle:
        text = handle.read()
    text = text.replace('from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_weight_cache\n',
                        'from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_weight_cache\n'
                        'from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_zz_throwaway\n')
    text = text.replace('    vllm_lora_patterns.DETECTION,\n)', '    vllm_lora_patterns.DETECTION,\n    pi_zz_throwaway.DETECTION,\n)')
    with open(registry, 'w') as out:
        out.write(text)


def test_the_guide_lists_every_file_the_throwaway_writes():
    """Both ways: a row this test cannot write fails here, and so does a file it writes that the guide does not list."""
    rows = checklist()
    hand = set(path for _step, path, by_hand in rows if by_hand)
    assert hand == set(BY_HAND), 'the guide lists %s; this test writes %s' % (sorted(hand), sorted(BY_HAND))
    assert [step for step, _path, _hand in rows] == sorted(step for step, _path, _hand in rows)


@pytest.mark.skipif(shutil.which('git') is None, reason='needs git to copy the repository')
def test_a_new_detection_is_what_the_guide_says(tmp_path):
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

    rows = checklist()
    for _step, template, by_hand in rows:
        if not by_hand:
            continue
        if template == 'plugins/module_utils/registry.py':
            _add_to_registry(copy)
        elif template == 'roles/<role>/meta/main.yml':
            with open(os.path.join(REPO_ROOT, 'roles', 'ollama_gemma4_renderer', 'meta', 'main.yml')) as handle:
                _write(copy, concrete(template), handle.read())
        else:
            _write(copy, concrete(template), BY_HAND[template])
    # Not a row of the guide (the role works without it): the defaults a play without the argument spec sees.
    _write(copy, 'roles/%s/defaults/main.yml' % ROLE, ROLE_DEFAULTS)

    env = dict(os.environ, POSTMORTEM_COLLECTIONS_PATH=str(tmp_path))
    for script in ('gen_detection_docs.py', 'gen_detection_files.py', 'gen_role_readmes.py'):
        subprocess.run([sys.executable, os.path.join(copy, 'scripts', script)], cwd=copy, env=env, check=True,
                       capture_output=True, timeout=300)
    changed = set(line[3:] for line in _git(copy, 'status', '--porcelain', '--untracked-files=all').splitlines())
    assert changed == set(concrete(path) for _step, path, _hand in rows) | {'roles/%s/defaults/main.yml' % ROLE}, \
        sorted(changed)

    tests = ['tests/unit/contract/test_detection_contract.py', 'tests/unit/contract/test_role_contract.py',
             'tests/unit/contract/test_role_readmes.py',
             'tests/unit/contract/test_generated_files.py::test_generated_files_are_current',
             'tests/unit/plugins/module_utils/test_settings.py', concrete('tests/unit/plugins/module_utils/detections/test_<id>.py'),
             concrete('tests/unit/plugins/modules/test_<role>_fix.py')]
    run = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider'] + tests, cwd=copy, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

    # Each part of the role the contract requires, taken away, is named; and so is the changelog fragment.
    assert role_contract.role_problems(copy, ROLE) == []
    for template, problem in sorted(ROLE_PARTS.items()):
        path = os.path.join(copy, concrete(template))
        os.rename(path, path + '.away')
        try:
            found = role_contract.role_problems(copy, ROLE)
        finally:
            os.rename(path + '.away', path)
        assert [p for p in found if p.startswith(concrete(problem))], (template, found)
    assert role_contract.changelog_problem(copy, ID) is None
    os.unlink(os.path.join(copy, concrete('changelogs/fragments/<issue>-<id>.yml')))
    assert role_contract.changelog_problem(copy, ID) == ('no changelog fragment names %s (changelogs/fragments/<issue>-%s.yml)'
                                                         % (ID, ID))
