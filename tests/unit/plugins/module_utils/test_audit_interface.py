"""The audit's interface, declared once (module_utils/audit_interface.py): what a user may set, what
the playbooks set themselves, and how mistakes are named."""
import os
import re

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_interface as interface
from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables as variables

from ...helpers.paths import REPO_ROOT

PLAYBOOKS = os.path.join(REPO_ROOT, 'playbooks')


def _set_names(node, found):
    """Names a playbook or role sets: register, set_fact keys, vars keys (play, task, block, import)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'register' and isinstance(value, str):
                found.add(value)
            elif key in ('vars', 'ansible.builtin.set_fact', 'set_fact') and isinstance(value, dict):
                found.update(k for k in value if k not in ('cacheable',))
            _set_names(value, found)
    elif isinstance(node, list):
        for item in node:
            _set_names(item, found)
    return found


def _yaml_files():
    for base in ('playbooks', 'roles'):
        for directory, _dirs, files in os.walk(os.path.join(REPO_ROOT, base)):
            for name in files:
                if name.endswith(('.yml', '.yaml')) and 'molecule' not in directory:
                    yield os.path.join(directory, name)


def test_nothing_the_collection_sets_can_be_taken_for_a_users_mistake():
    """Every postmortem_* name our playbooks and roles set is a declared output or input (inputs are
    only read), and working variables carry the internal prefix, so the unknown-variable check can
    never trip on our own names."""
    for path in _yaml_files():
        with open(path) as handle:
            names = _set_names(yaml.safe_load(handle), set())
        ours = [n for n in names if n.startswith(interface.PREFIX)]
        assert not interface.unknown_variables(ours), (path, interface.unknown_variables(ours))
        assert not [n for n in ours if n in interface.NAMES], (path, 'sets a user variable', ours)


def test_every_variable_the_playbooks_read_is_declared():
    used = set()
    for directory, _dirs, files in os.walk(PLAYBOOKS):
        for name in files:
            with open(os.path.join(directory, name)) as handle:
                used.update(re.findall(r'\b(postmortem_[a-z_]+)\b', handle.read()))
    assert not interface.unknown_variables(used), interface.unknown_variables(used)
    assert set(interface.NAMES) <= used | {'postmortem_fail_on_no_hosts'}


@pytest.mark.parametrize('playbook', ['audit', 'remediate'])
def test_each_playbook_header_documents_its_variables(playbook):
    with open(os.path.join(PLAYBOOKS, playbook + '.yml')) as handle:
        header = ''.join(line for line in handle if line.startswith('#'))
    for name, _kind, _default, playbooks, _doc in variables.VARIABLES:
        if playbook in playbooks and (playbook == 'audit' or 'audit' not in playbooks):
            assert name in header, (playbook, name)


@pytest.mark.parametrize('name,suggestion', [
    ('postmortem_check', 'postmortem_checks'),
    ('postmortem_prob', 'postmortem_probes'),
    ('postmortem_failon', 'postmortem_fail_on'),
    ('postmortem_become_user', 'postmortem_become'),
    ('postmortem_something_else_entirely', None),
])
def test_unknown_names_get_the_closest_known_one(name, suggestion):
    assert interface.unknown_variables([name, 'postmortem_checks', 'postmortem_gather', '_postmortem_open']) == [(name, suggestion)]


@pytest.mark.parametrize('name,value,problem', [
    ('postmortem_task_timeout', 'abc', "postmortem_task_timeout must be a whole number of seconds, got 'abc'"),
    ('postmortem_task_timeout', 10 ** 10, 'postmortem_task_timeout must be at most 604800 seconds (a week)'),
    ('postmortem_command_timeout', True, 'postmortem_command_timeout must be a whole number of seconds, got True'),
    ('postmortem_fail_on', 'critical', "postmortem_fail_on: 'critical' is not one of never"),
    ('postmortem_serial', '0', "postmortem_serial must be a number of hosts (at least 1) or a percentage (1% to 100%), got '0'"),
    ('postmortem_serial', '150%', 'got \'150%\''),
    ('postmortem_checks', ['pi_ir_rx'], "postmortem_checks: unknown check 'pi_ir_rx'"),
    ('postmortem_probes', [{'a': 1}], 'postmortem_probes'),
    ('postmortem_remediate', ['ollama_schema_order'], 'ollama_schema_order has no remediation role'),
    ('postmortem_report_dir', '', 'postmortem_report_dir must be a non-empty string'),
])
def test_values_are_checked_and_named_by_variable(name, value, problem):
    found = interface.check_value(name, value)
    assert found is not None and problem in found, found


@pytest.mark.parametrize('name,value', [
    ('postmortem_task_timeout', '600'), ('postmortem_serial', '25%'), ('postmortem_serial', [1, '50%']),
    ('postmortem_become', 'yes'), ('postmortem_remediate', ['all']), ('postmortem_remediate', 'pi_ir_tx'),
    ('postmortem_checks', ['all', '!llama']),
])
def test_good_values_pass(name, value):
    assert interface.check_value(name, value) is None


def test_tags_must_name_detections():
    assert interface.check_tags(['pi_ir_tx', 'always'], []) == []
    problems = interface.check_tags(['pi_ir_txx'], ['podman'])
    assert problems[0].startswith('--tags pi_ir_txx names no detection (did you mean pi_ir_tx?)')
    assert problems[1].startswith('--skip-tags podman names no detection')


@pytest.mark.parametrize('name', sorted(variables.MODULE_OPTIONS))
def test_each_module_option_a_variable_feeds_documents_the_variables_default(name):
    """The playbooks pass default(omit): the module's own default must be the declared one, and its
    documentation must say so (ansible-doc shows it)."""
    import importlib
    for module, option in variables.MODULE_OPTIONS[name]:
        source = importlib.import_module('ansible_collections.homelab.postmortem.plugins.modules.%s' % module)
        doc = yaml.safe_load(source.DOCUMENTATION)
        options = dict(doc.get('options') or {})
        if option not in options:  # audit_facts takes its common options from the detection doc fragment
            from ansible_collections.homelab.postmortem.plugins.doc_fragments import detection
            options.update(yaml.safe_load(detection.ModuleDocFragment.DOCUMENTATION)['options'])
        assert options[option].get('default') == variables.DEFAULTS[name], (name, module, option)


def test_the_playbooks_write_no_default_of_their_own():
    """Every postmortem_* variable a playbook reads falls back to default(omit) (the module's declared
    default) or to the audit_default lookup: no literal default."""
    for directory, _dirs, files in os.walk(PLAYBOOKS):
        for name in files:
            with open(os.path.join(directory, name)) as handle:
                text = handle.read()
            literal = re.findall(r'(?<![_a-z.])(postmortem_[a-z_]+) \| default\((?!omit\)|lookup\()', text)
            assert not literal, (name, literal)
