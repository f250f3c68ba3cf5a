"""The audit's interface, declared once (module_utils/audit_interface.py): what a user may set, what
the playbooks set themselves, and how mistakes are named."""
import os
import re

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_interface as interface
from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables as variables
from ansible_collections.homelab.postmortem.plugins.module_utils import registry

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


# A list option's string, as ansible-core's argspec converts it (check_type_list,
# ansible/module_utils/common/validation.py: ``value.split(",")``, nothing stripped) and as the
# setup module's gather_subset (type list, elements str) therefore takes it.
def _ansible_list(value):
    from ansible.module_utils.common.validation import check_type_list
    return check_type_list(value)


@pytest.mark.parametrize('value', ['pi_ir_tx,podman', 'pi_ir_tx, podman', 'podman', '!llama,all', 'all,!pi'])
def test_checks_typed_as_gather_subset_takes_them_pass(value):
    assert interface.check_value('postmortem_checks', value) is None


def test_checks_typed_with_commas_select_what_the_module_selects():
    """The controller's check and the module's argspec read one string the same way."""
    from ansible_collections.homelab.postmortem.plugins.module_utils import registry
    assert interface.typed_list('pi_ir_tx,podman', 'postmortem_checks') == _ansible_list('pi_ir_tx,podman')
    ids = [d.ID for d in registry.select(_ansible_list('pi_ir_tx,podman'))]
    assert ids == ['pi_ir_tx', 'podman_restart_userns', 'podman_export_idmap']


@pytest.mark.parametrize('value,problem', [
    ('pi_ir_tx,', "check names must be non-empty strings, got ''"),
    ('pi_ir_tx,pi_irtx', "unknown check 'pi_irtx' (did you mean pi_ir_tx?)"),
    ('!podmn', "unknown check 'podmn' (did you mean podman?)"),
    (['pi_irtx'], "unknown check 'pi_irtx' (did you mean pi_ir_tx?)"),
    ('zzzz', "unknown check 'zzzz'; known checks:"),
])
def test_checks_typed_badly_are_refused_with_the_closest_name(value, problem):
    found = interface.check_value('postmortem_checks', value)
    assert found is not None and problem in found, found
    assert ('did you mean' in found) == ('did you mean' in problem), found  # no guess for a name like none


@pytest.mark.parametrize('name,value,form', [
    ('postmortem_checks', '["pi"]', '''-e '{"postmortem_checks": ["pi"]}' or -e postmortem_checks=pi'''),
    ('postmortem_checks', '[pi_ir_tx, podman]', '''-e '{"postmortem_checks": ["pi_ir_tx", "podman"]}' or -e postmortem_checks=pi_ir_tx,podman'''),
    ('postmortem_checks', " ['pi_ir_tx','podman'] ", '''-e '{"postmortem_checks": ["pi_ir_tx", "podman"]}\''''),
    ('postmortem_probes', '["ollama_format_think_probe"]', '''-e '{"postmortem_probes": ["ollama_format_think_probe"]}\''''),
    ('postmortem_remediate', '[pi_ir_tx]', '''-e '{"postmortem_remediate": ["pi_ir_tx"]}\''''),
    ('postmortem_checks', '[]', '''-e '{"postmortem_checks": []}\''''),
    # -e 'postmortem_checks=[pi_ir_tx, podman]': Ansible's key=value parser ends the value at the space.
    ('postmortem_checks', '[pi_ir_tx,', '''never reads JSON, and a space ends its value): write -e '{"postmortem_checks": ["pi_ir_tx"]}\''''),
])
def test_a_json_list_typed_as_text_is_refused_with_the_form_that_works(name, value, form):
    found = interface.check_value(name, value)
    assert found is not None and form in found and 'not a list' in found, found


def test_probes_and_fixes_compared_as_typed_refuse_a_space_after_a_comma():
    """The host compares probe names, and remediation_plan fix ids, as the argspec split them: ' x'
    would match nothing, silently."""
    found = interface.check_value('postmortem_remediate', 'pi_ir_tx, podman_restart_userns')
    assert "' podman_restart_userns'" in found and 'write a,b' in found, found
    assert interface.check_value('postmortem_remediate', 'pi_ir_tx,podman_restart_userns') is None


def test_unknown_probes_get_the_closest_name():
    from ansible_collections.homelab.postmortem.plugins.module_utils import registry
    offered = sorted(p for d in registry.DETECTIONS for p in d.PROBES)
    assert offered, 'no detection offers a probe'
    typo = offered[0][:-1] + 'x'
    found = interface.check_value('postmortem_probes', typo)
    assert '(did you mean %s?)' % offered[0] in found, found
    assert interface.check_value('postmortem_probes', ','.join(offered)) is None


def test_the_host_names_no_suggestion_of_its_own():
    """A host's registry has no suggest: its message is the one it always gave (no difflib on the host)."""
    from ansible_collections.homelab.postmortem.plugins.module_utils import registry
    with pytest.raises(registry.SelectionError) as raised:
        registry.select(['pi_irtx'])
    assert 'did you mean' not in str(raised.value)


@pytest.mark.parametrize('variable', ['postmortem_probes', 'postmortem_remediate', 'postmortem_checks'])
def test_a_hundred_thousand_unknown_names_get_a_bounded_did_you_mean(monkeypatch, variable):
    """#49: refusing 100,000 unknown probe names took 6.8 s, a "did you mean" computed for each. The work is
    bounded by count, not by a clock (no timed test): at most NAMES_SHOWN suggestions, the rest counted."""
    calls = []
    real = interface.closest
    monkeypatch.setattr(interface, 'closest', lambda name, known: calls.append(name) or real(name, known))
    names = ['nope%06d' % n for n in range(100000)]
    problem = interface.check_value(variable, names)
    assert problem.startswith(variable) and len(problem) < 2000, problem[:300]
    assert len(calls) <= registry.NAMES_SHOWN, len(calls)
    if variable != 'postmortem_checks':  # a selection stops at its first unknown name
        assert '99995 more' in problem, problem[:300]


def test_a_hundred_thousand_unknown_tags_get_a_bounded_did_you_mean(monkeypatch):
    calls = []
    real = interface.closest
    monkeypatch.setattr(interface, 'closest', lambda name, known: calls.append(name) or real(name, known))
    found = interface.check_tags(['t%06d' % n for n in range(100000)], [])
    assert len(calls) == registry.NAMES_SHOWN and found[-1] == 'and 99995 more tag(s) that name no detection'
