"""The contract covers the whole path from a finding to its fix.

Every detection has a changelog fragment (or a released changelog entry) that names it. Every role a
detection names in its REMEDIATION has its tasks, its argument spec, a Molecule scenario (found as
scripts/molecule.sh finds them: roles/<role>/molecule/<scenario>/molecule.yml; molecule.sh fails on a
role without one) and calls at least one fix module, each run by a unit test under tests/unit.

The checks are functions of a repository root, so that test_generated_files.py can show each one
fail on a throwaway role in a copy of the repository.
"""
import glob
import os
import re
import subprocess

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry

from ..helpers.paths import REPO_ROOT

COLLECTION = 'homelab.postmortem.'
ROLE_DETECTIONS = [(d.REMEDIATION['role'].split('.')[-1], d.ID) for d in registry.DETECTIONS if d.REMEDIATION.get('role')]


def _read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def _tasks(items):
    """Every task in a task list, blocks opened."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(item.get(key))


def fix_modules(root, role):
    """The collection's modules the role's tasks call, other than the detections' facts modules and the
    audit's own: the role's fix modules."""
    found = set()
    for path in glob.glob(os.path.join(root, 'roles', role, 'tasks', '*.yml')):
        for task in _tasks(yaml.safe_load(_read(path))):
            for key in task:
                name = key[len(COLLECTION):] if key.startswith(COLLECTION) else None
                if (name and os.path.isfile(os.path.join(root, 'plugins', 'modules', name + '.py'))
                        and not name.endswith('_facts') and not name.startswith('audit_')):
                    found.add(name)
    return sorted(found)


def unit_tests_of(root, module):
    """The files under tests/unit that run ``module``: by name in quotes (run_module, a runner of the module's
    file) or imported from plugins.modules. The contract tests are left out: they name modules without testing them."""
    pattern = re.compile(r'''['"]%s(\.py)?['"]|plugins\.modules(\.|\s+import\s+[\w, ]*\b)%s\b''' % (module, module))
    contract = os.path.join(root, 'tests', 'unit', 'contract', '')
    return sorted(path for path in glob.glob(os.path.join(root, 'tests', 'unit', '**', '*.py'), recursive=True)
                  if not path.startswith(contract) and pattern.search(_read(path)))


def scenarios(root, role):
    """The role's Molecule scenarios, as scripts/molecule.sh finds them."""
    return sorted(glob.glob(os.path.join(root, 'roles', role, 'molecule', '*', 'molecule.yml')))


def role_problems(root, role):
    """What the role lacks, one line each; [] when it is complete."""
    problems = []
    for part in ('tasks/main.yml', 'meta/argument_specs.yml'):
        if not os.path.isfile(os.path.join(root, 'roles', role, part)):
            problems.append('roles/%s/%s is missing' % (role, part))
    if not scenarios(root, role):
        problems.append('roles/%s has no Molecule scenario (roles/%s/molecule/default/molecule.yml)' % (role, role))
    if os.path.isdir(os.path.join(root, 'roles', role, 'tasks')):
        modules = fix_modules(root, role)
        if not modules:
            problems.append('roles/%s calls no fix module of the collection' % role)
        for module in modules:
            if not unit_tests_of(root, module):
                problems.append('the fix module %s (roles/%s) has no unit test under tests/unit' % (module, role))
    return problems


def changelog_problem(root, detection_id):
    """None when a changelog fragment (or the released changelog) names the detection, else why not."""
    word = re.compile(r'\b%s\b' % re.escape(detection_id))
    paths = glob.glob(os.path.join(root, 'changelogs', 'fragments', '*.y*ml'))
    paths.append(os.path.join(root, 'changelogs', 'changelog.yaml'))
    if any(os.path.isfile(path) and word.search(_read(path)) for path in paths):
        return None
    return 'no changelog fragment names %s (changelogs/fragments/<issue>-%s.yml)' % (detection_id, detection_id)


@pytest.mark.parametrize('role, detection_id', ROLE_DETECTIONS, ids=['%s-%s' % pair for pair in ROLE_DETECTIONS])
def test_every_role_a_detection_names_is_complete(role, detection_id):
    assert role_problems(REPO_ROOT, role) == [], detection_id


@pytest.mark.parametrize('detection', registry.DETECTIONS, ids=[d.ID for d in registry.DETECTIONS])
def test_every_detection_has_a_changelog_fragment(detection):
    assert changelog_problem(REPO_ROOT, detection.ID) is None


def test_the_fix_modules_found_are_the_ones_the_roles_run():
    """The reading of the tasks finds the modules (a check that found none would pass every role)."""
    assert fix_modules(REPO_ROOT, 'pi_ir_tx') == ['pi_ir_tx_fix']
    assert fix_modules(REPO_ROOT, 'podman_quadlet') == ['podman_quadlet']
    assert fix_modules(REPO_ROOT, 'docker_overlay_recover') == ['docker_overlay_recover_plan']
    assert unit_tests_of(REPO_ROOT, 'no_such' + '_module') == []  # built here, so that this file does not name it


def test_molecule_sh_fails_on_a_role_without_a_scenario():
    """scripts/molecule.sh checks every role for a scenario before it runs any (a loop over scenarios alone
    would skip such a role without a word)."""
    script = _read(os.path.join(REPO_ROOT, 'scripts', 'molecule.sh'))
    assert 'has no Molecule scenario' in script and 'exit 1' in script


def test_molecule_sh_stops_on_a_role_without_a_scenario_before_running_any(tmp_path):
    """The script itself, in a copy beside a throwaway role with no scenario: it fails naming that role, and
    runs no scenario (Molecule is never reached)."""
    scripts = tmp_path / 'scripts'
    scripts.mkdir()
    for name in ('molecule.sh', 'lib.sh'):
        (scripts / name).write_text(_read(os.path.join(REPO_ROOT, 'scripts', name)))
    build = tmp_path / 'build'
    build.mkdir()
    (build / 'podman.env').write_text('')
    (build / 'llama.env').write_text('LLAMA_SERVER_BIN=/nonexistent/bin/llama-server\nLLAMA_MODEL=/nonexistent/m.gguf\n')
    for role in ('zz_complete', 'zz_without_scenario'):
        (tmp_path / 'roles' / role / 'tasks').mkdir(parents=True)
        (tmp_path / 'roles' / role / 'tasks' / 'main.yml').write_text('---\n[]\n')
    (tmp_path / 'roles' / 'zz_complete' / 'molecule' / 'default').mkdir(parents=True)
    (tmp_path / 'roles' / 'zz_complete' / 'molecule' / 'default' / 'molecule.yml').write_text('---\n{}\n')
    env = dict(os.environ, VENV=str(tmp_path / 'no-venv'), PATH='/usr/bin:/bin')
    env.pop('MOLECULE_ROLE', None)
    run = subprocess.run(['bash', str(scripts / 'molecule.sh')], capture_output=True, text=True, env=env, timeout=60,
                         check=False)
    assert run.returncode == 1, run.stderr
    assert 'FAILED: role zz_without_scenario has no Molecule scenario' in run.stderr
    assert 'zz_complete has no' not in run.stderr and 'molecule test:' not in run.stderr


def _switches():
    """{switch: its role}: the options the roles' argument specs mark "Disruptive:"
    (plugin_utils/role_specs.py), the one declaration of them."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import role_specs
    roles_dir = os.path.join(REPO_ROOT, 'roles')
    return dict((name, role) for role in os.listdir(roles_dir)
                for name, _option in role_specs.switches(role_specs.load(role, roles_dir)))


def test_every_text_that_lists_the_switches_lists_them_all():
    """A paragraph (of README.md, CONTRIBUTING.md, docs/, a playbook's comments) that names the switches of
    more than one role is a list of them, and must be the declared list: a switch added to a role's spec
    shows up in every such list, or this fails naming the file. (A role's own page may name its own.)"""
    by_switch = _switches()
    switches = sorted(by_switch)
    assert len(set(by_switch.values())) >= 3
    names = re.compile(r'\b(%s)\b' % '|'.join(switches))
    paths = [os.path.join(REPO_ROOT, name) for name in ('README.md', 'CONTRIBUTING.md')]
    paths += glob.glob(os.path.join(REPO_ROOT, 'docs', '*.md')) + glob.glob(os.path.join(REPO_ROOT, 'playbooks', '*.yml'))
    lists = 0
    for path in paths:
        text = _read(path)
        if path.endswith('.yml'):
            text = '\n'.join(line.lstrip('# ') if line.startswith('#') else '' for line in text.splitlines())
        for paragraph in re.split(r'\n\s*\n', text):
            named = set(names.findall(paragraph))
            if len(set(by_switch[name] for name in named)) >= 2:
                lists += 1
                assert sorted(named) == switches, '%s lists %s but not %s' % (
                    os.path.relpath(path, REPO_ROOT), sorted(named), sorted(set(switches) - named))
    assert lists >= 3  # README.md, docs/awx.md, playbooks/remediate.yml at least


def _all_fix_modules():
    """The modules the registry's roles run to fix, and the modules REMEDIATION names without a role."""
    modules = set(m for role, _id in ROLE_DETECTIONS for m in fix_modules(REPO_ROOT, role))
    modules.update(d.REMEDIATION['module'].split('.')[-1] for d in registry.DETECTIONS if d.REMEDIATION.get('module'))
    return sorted(modules)


@pytest.mark.parametrize('module', _all_fix_modules())
def test_every_fix_module_follows_the_fix_protocol(module):
    """One shape for every fix (module_utils/fix_protocol.py): the module hands a Fix to fix_protocol.run,
    which alone ends it on success. That its RETURN documents the keys every fix module returns is
    test_fix_returns.py's, for every module that imports fix_protocol."""
    source = _read(os.path.join(REPO_ROOT, 'plugins', 'modules', module + '.py'))
    assert 'fix_protocol.run(module, ' in source, module
    assert 'exit_json(' not in source, '%s ends itself; fix_protocol.run does' % module


def test_the_fix_modules_are_all_there():
    # A subset: a copy of the repository with a throwaway role adds its own (test_generated_files.py).
    assert set(['docker_overlay_recover_plan', 'llama_server_fix', 'ollama_gemma4_renderer_fix', 'pi_ir_tx_fix',
                'podman_quadlet', 'podman_safe_export', 'vllm_lora_fold']) <= set(_all_fix_modules())
