"""The trust boundary of a remediation run: a host's findings choose nothing the controller runs,
writes or sets. The roles come from the registry, their variables from the registry's REMEDIATION
and the user; what a host advised besides is named as dropped. The forged findings below are what
a compromised host can return (issue 32's cases)."""
import datetime
import os

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import remediation, role_specs

from ...helpers.paths import REPO_ROOT

LLAMA = 'homelab.postmortem.llama_server'
DOCKER = 'homelab.postmortem.docker_overlay_recover'
PI = 'homelab.postmortem.pi_ir_tx'
TODAY = datetime.date(2026, 12, 2)


def finding(cid, status, advised=None, role=None):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {},
            'remediation': {'role': role or registry.BY_ID[cid].REMEDIATION['role'], 'vars': advised or {},
                            'module': None, 'manual': [], 'disruption': 'none'}, 'references': []}


def before(*findings):
    return {'changed': False, 'ansible_facts': {'postmortem': dict((f['id'], f) for f in findings)}}


def choose(result, user_vars=()):
    chosen = remediation.plan('host', result, ['all'], [], False, TODAY)
    findings, _refused = remediation.findings_of(result)
    specs = dict((role, role_specs.load(role, os.path.join(REPO_ROOT, 'roles'))) for role in chosen['roles'])
    chosen['role_vars'], chosen['conflicts'], chosen['dropped'] = remediation.advice(chosen, findings, set(user_vars), specs)
    return chosen


def test_the_role_vars_are_the_registrys_never_the_hosts():
    """llama_lora_cache's REMEDIATION declares cache_ram_off and lora_global_path (and the restart switch);
    the host advises other values, a switch, a reserved name and a variable of no role."""
    forged = finding('llama_lora_cache', 'affected', advised={
        'llama_server_cache_ram_off': False, 'llama_server_restart': True, 'postmortem_report_dir': '/tmp/evil',
        'ansible_ssh_common_args': '-o ProxyCommand=touch /tmp/pwned', 'ansible_become': True,
        '_postmortem_plan': {'roles': ['/tmp/evilrole']}, 'some_other_var': 1})
    chosen = choose(before(forged))
    assert chosen['roles'] == [LLAMA]
    assert chosen['role_vars'] == {'llama_server_cache_ram_off': True, 'llama_server_lora_global_path': True}
    dropped = '\n'.join(chosen['dropped'])
    for name, why in (("'llama_server_cache_ram_off'=False", 'the registry gives True'),
                      ("'llama_server_restart'=True", 'a disruptive switch'),
                      ("'postmortem_report_dir'", 'never takes from a host'),
                      ("'ansible_ssh_common_args'", 'never takes from a host'),
                      ("'ansible_become'", 'never takes from a host'),
                      ("'_postmortem_plan'", 'never takes from a host'),
                      ("'some_other_var'", 'not a variable the registry gives')):
        assert any(name in line and why in line for line in chosen['dropped']), (name, dropped)


def test_a_user_variable_wins_and_an_honest_host_drops_nothing():
    honest = finding('llama_lora_cache', 'affected', advised=dict(registry.BY_ID['llama_lora_cache'].REMEDIATION['vars']))
    chosen = choose(before(honest), user_vars=['llama_server_cache_ram_off'])
    assert chosen['role_vars'] == {'llama_server_lora_global_path': True}
    # The host advised what the registry declares; the user's variable and the switch are not "dropped advice"
    # the user needs to hear about twice ... but they are named, with why, so nothing is silent.
    assert all(('you set it' in line) or ('disruptive switch' in line) for line in chosen['dropped']), chosen['dropped']
    plain = choose(before(finding('llama_sleep_race', 'at_risk')))
    assert plain['dropped'] == [] and plain['role_vars'] == {'llama_server_restart_on_failure': True}


@pytest.mark.parametrize('advised,expected', [
    (['llama_server_cache_ram_off'], 'vars is a list, not a mapping'),
    ('llama_server_cache_ram_off=true', 'vars is a str, not a mapping'),
    ({1: True}, 'not a variable name'),
])
def test_wrongly_typed_advice_is_dropped_with_a_note(advised, expected):
    forged = finding('llama_lora_cache', 'affected')
    forged['remediation']['vars'] = advised
    chosen = choose(before(forged))
    assert chosen['role_vars'] == {'llama_server_cache_ram_off': True, 'llama_server_lora_global_path': True}
    assert any(expected in line for line in chosen['dropped']), chosen['dropped']


def test_a_role_named_by_the_host_never_runs():
    forged = finding('pi_ir_tx', 'affected', role='/tmp/x/evilrole')
    chosen = choose(before(forged))
    assert chosen['roles'] == [PI]
    assert any("role '/tmp/x/evilrole'" in line for line in chosen['dropped'])
    forged = finding('pi_ir_tx', 'affected')
    forged['remediation'] = ['not', 'a', 'mapping']
    assert choose(before(forged))['dropped'] == ['pi_ir_tx: remediation is a list, not a mapping']


def test_a_host_answering_for_unknown_checks_gets_nothing_fixed():
    forged = before(finding('pi_ir_tx', 'affected'))
    forged['ansible_facts']['postmortem']['x\nGate: passed'] = {'id': 'x', 'status': 'affected'}
    chosen = remediation.plan('host', forged, ['all'], [], False, TODAY)
    assert chosen['roles'] == []
    assert chosen['left'][0]['check'] == '(host)'
    assert "'x\\nGate: passed'" in chosen['left'][0]['why']


def test_the_switches_are_the_roles_disruptive_options():
    """Derived from the specs: docker_overlay_recover has three (the hand list of 0.3 missed two)."""
    specs = dict((role, role_specs.load(role, os.path.join(REPO_ROOT, 'roles'))) for role in (DOCKER, PI, LLAMA))
    switches = remediation.role_switches([DOCKER, PI, LLAMA], specs)
    assert sorted(switches[DOCKER]) == ['docker_overlay_recover_restart', 'docker_overlay_recover_scale_down',
                                        'docker_overlay_recover_scale_down_failing']
    assert sorted(switches[PI]) == ['pi_ir_tx_reboot'] and sorted(switches[LLAMA]) == ['llama_server_restart']
    forged = finding('docker_overlay_sandbox', 'affected', advised={
        'docker_overlay_recover_scale_down': ['web'], 'docker_overlay_recover_scale_down_failing': True})
    chosen = choose(before(forged))
    assert chosen['role_vars'] == {}
    assert sum('disruptive switch' in line for line in chosen['dropped']) == 2
    off = remediation.switches_off([DOCKER], specs, {'docker_overlay_recover_scale_down': ['web']})
    assert off == {DOCKER: ['docker_overlay_recover_restart', 'docker_overlay_recover_scale_down_failing']}


def test_the_remediate_playbook_and_the_readme_name_every_switch():
    """The playbook's header and the README list the switches for their readers; each must be the specs' list."""
    roles = sorted(set(d.REMEDIATION['role'] for d in registry.DETECTIONS if d.REMEDIATION.get('role')))
    specs = dict((role, role_specs.load(role, os.path.join(REPO_ROOT, 'roles'))) for role in roles)
    names = sorted(n for switches in remediation.role_switches(roles, specs).values() for n in switches)
    with open(os.path.join(REPO_ROOT, 'playbooks', 'remediate.yml'), encoding='utf-8') as handle:
        header = ' '.join(line.lstrip('# ') for line in handle.read().split('\n- name:')[0].splitlines())
    listed = header.split('"Disruptive:"):', 1)[1].split('.', 1)[0]
    assert sorted(n.strip() for n in listed.split(',')) == names
    with open(os.path.join(REPO_ROOT, 'README.md'), encoding='utf-8') as handle:
        readme = ' '.join(handle.read().split())
    listed = readme.split('mark "Disruptive:" (', 1)[1].split(')', 1)[0]
    assert sorted(n.strip(' `') for n in listed.split(',')) == names


def test_every_registry_variable_is_a_typed_option_of_its_role():
    """What the controller gives a role is declared by the role: the name exists in its spec, is not a
    reserved name, and the registry's value has the spec's type."""
    types = {'bool': bool, 'int': int, 'str': str, 'path': str, 'list': list, 'dict': dict}
    for detection in registry.DETECTIONS:
        role = detection.REMEDIATION.get('role')
        if not role:
            continue
        options = role_specs.load(role, os.path.join(REPO_ROOT, 'roles')).get('options') or {}
        for key, value in (detection.REMEDIATION.get('vars') or {}).items():
            assert key in options, (detection.ID, key)
            assert not key.startswith(remediation.RESERVED_PREFIXES), (detection.ID, key)
            assert isinstance(value, types[options[key].get('type', 'str')]), (detection.ID, key, value)


def test_the_record_never_says_fixed_and_names_what_did_not_run():
    chosen = {'roles': [PI, LLAMA], 'checks_by_role': {PI: ['pi_ir_tx'], LLAMA: ['llama_sleep_race']},
              'left': [{'check': 'ollama_gemma4_renderer', 'why': 'not selected by --tags/--skip-tags'}], 'manual': [],
              'dropped': ['pi_ir_tx: x=1 (not a variable the registry gives)']}
    done = remediation.record(chosen, [PI, LLAMA], None, False, {PI: ['pi_ir_tx_reboot'], LLAMA: []})
    assert done['state'] == 'ran' and [r['result'] for r in done['roles']] == ['ran', 'ran']
    assert done['roles'][0]['switch'].startswith('pi_ir_tx_reboot is off') and 'switch' not in done['roles'][1]
    assert done['dropped'] == chosen['dropped']
    failed = remediation.record(chosen, [PI], {'task': 'Restart', 'reason': 'boom\x1b[2J', 'lost': False}, True, {})
    assert failed['state'] == 'failed' and [r['result'] for r in failed['roles']] == ['ran', 'failed']
    assert failed['roles'][0]['note'] == 'check mode: nothing was changed'
    assert failed['reason'] == 'boom\x1b[2J'  # the record (and the report files) keep the original text
    assert remediation.failure_message(failed, 'pi-1').startswith("REMEDIATION FAILED on pi-1 in 'Restart': boom\x1b[2J.")
    # A check run (this one) wrote nothing: no talk of backups or of a file "fixed" (#35).
    assert "boom\x1b[2J. Check mode: nothing was written. Later batches" in remediation.failure_message(failed, 'pi-1')
    real = remediation.record(chosen, [PI], {'task': 'Restart', 'reason': 'boom', 'lost': False}, False, {})
    assert 'so a file is either as it was or fixed' in remediation.failure_message(real, 'pi-1')
    nothing = remediation.record({'roles': [], 'checks_by_role': {}, 'left': [], 'manual': ['ollama_schema_order']}, [], None,
                                 False, {})
    assert nothing['state'] == 'nothing_to_run' and nothing['manual'] == ['ollama_schema_order']
    assert remediation.failure_message(nothing, 'pi-1') is None


def test_the_pi_role_fixes_the_image_the_user_audited():
    """pi_ir_tx_root is never advised by a finding: the role's default is the user's postmortem_root."""
    with open(os.path.join(REPO_ROOT, 'roles', 'pi_ir_tx', 'defaults', 'main.yml'), encoding='utf-8') as handle:
        defaults = yaml.safe_load(handle)
    assert defaults['pi_ir_tx_root'] == "{{ postmortem_root | default('/') }}"


def test_a_roles_notes_reach_the_record_bounded_and_only_as_strings():
    """#38: a role hands notes to the record in <its short name>_notes; the roles are the plan's (the
    registry's), a role the registry does not name is never read, and only a list of strings is kept."""
    no_trial = 'No trial boot, config.txt is changed directly: board pi3: the trial boot is used on Raspberry Pi 4 and 5 only.'
    values = {'pi_ir_tx_notes': [no_trial], 'llama_server_notes': {'not': 'a list'}, 'evil_notes': ['from nowhere']}
    notes = remediation.role_notes([PI, LLAMA, 'evil'], values)
    assert notes == [{'role': PI, 'note': no_trial},
                     {'role': LLAMA, 'note': 'llama_server_notes is a dict, not a list of strings: its notes are not kept'}]
    assert remediation.role_notes([PI], {'pi_ir_tx_notes': ['ok', 3]}) == [
        {'role': PI, 'note': 'pi_ir_tx_notes is a list with an item that is not a string, not a list of strings: its notes are not kept'}]
    assert remediation.role_notes([PI], {}) == []
    many = remediation.role_notes([PI, DOCKER], {'pi_ir_tx_notes': ['x' * 600] * 15, 'docker_overlay_recover_notes': ['y'] * 10})
    assert len(many) == remediation.NOTES_MAX == 20
    assert all(len(n['note']) <= remediation.NOTE_CHARS == 500 for n in many) and many[0]['note'].endswith('...')
    assert many[-1] == {'role': DOCKER, 'note': '... and 6 more note(s), not kept'}
    chosen = {'roles': [PI], 'checks_by_role': {PI: ['pi_ir_tx']}, 'left': [], 'manual': []}
    assert remediation.record(chosen, [PI], None, False, {}, notes[:1])['notes'] == notes[:1]
    assert 'notes' not in remediation.record(chosen, [PI], None, False, {}, [])
    failed = remediation.record(chosen, [], {'task': 'T', 'reason': 'r', 'lost': False}, False, {}, notes[:1])
    assert failed['state'] == 'failed' and failed['notes'] == notes[:1]


def test_the_notes_var_is_the_roles_short_name():
    assert remediation.notes_var(PI) == 'pi_ir_tx_notes'
    assert PI in remediation.remediation_roles() and 'evil' not in remediation.remediation_roles()
