"""Each open finding of a remediation run gets one outcome from a closed set, decided from data (#44):
the plan, the role's outcome fact, check mode and the audit after the run. The expectations are the
issue's: a by-hand step is never "would apply", and "fixed" needs the audit after to measure it closed."""
import json
import os
import shlex

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import fix_outcome, report, report_summary

from ...helpers.paths import REPO_ROOT

PI = 'homelab.postmortem.pi_ir_tx'
LLAMA = 'homelab.postmortem.llama_server'
CHECKS = [(d.ID, d.TITLE) for d in registry.DETECTIONS]


def chosen(**extra):
    found = {'roles': [PI, LLAMA], 'checks_by_role': {PI: ['pi_ir_tx'], LLAMA: ['llama_lora_cache']},
             'manual': ['llama_spec_logprobs'], 'left': [{'check': 'vllm_weight_cache', 'why': 'not in postmortem_remediate'}]}
    found.update(extra)
    return found


def finding(cid, status):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {}, 'remediation': {}, 'references': []}


def result(**statuses):
    return {'changed': False, 'ansible_facts': {'postmortem': dict((c, finding(c, s)) for c, s in statuses.items())}}


def test_check_mode_would_fix_only_a_change_with_nothing_left_by_hand():
    reported = {PI: {'changed': True, 'by_hand': []},
                LLAMA: {'changed': False, 'by_hand': ['llama-server pid 7: not started by a system service: add --cache-ram 0']}}
    found = fix_outcome.planned(chosen(), [PI, LLAMA], None, True, reported)
    assert found['pi_ir_tx']['outcome'] == 'would_fix'
    assert found['llama_lora_cache'] == {'outcome': 'manual', 'changed': False,
                                         'why': 'llama-server pid 7: not started by a system service: add --cache-ram 0'}
    assert found['llama_spec_logprobs']['outcome'] == 'manual'
    assert found['llama_spec_logprobs']['why'].startswith('no automatic fix: Send requests that need logprobs')
    assert found['vllm_weight_cache'] == {'outcome': 'not_run', 'why': 'not in postmortem_remediate'}


def test_a_role_that_would_change_nothing_or_said_nothing_is_by_hand_never_would_fix():
    found = fix_outcome.planned(chosen(), [PI, LLAMA], None, True, {PI: {'changed': False, 'by_hand': []}})
    assert found['pi_ir_tx']['outcome'] == 'manual'
    assert found['llama_lora_cache']['outcome'] == 'manual'  # no outcome fact at all
    bad = fix_outcome.read_role_outcome('pi_ir_tx_outcome', {'changed': 'yes', 'by_hand': []})
    assert bad == {'problem': 'pi_ir_tx_outcome.changed is a str, not true or false'}
    assert fix_outcome.read_role_outcome('x', {'changed': True, 'by_hand': [1]}) == {'problem': 'x.by_hand is not a list of strings'}
    many = fix_outcome.read_role_outcome('x', {'changed': True, 'by_hand': ['s' * 900] * 50})
    assert len(many['by_hand']) == fix_outcome.BY_HAND_MAX and len(many['by_hand'][0]) == fix_outcome.BY_HAND_CHARS


def test_a_failed_role_fails_its_checks_and_the_rest_are_not_run():
    found = fix_outcome.planned(chosen(), [], {'reason': 'EROFS'}, False, {})
    assert found['pi_ir_tx'] == {'outcome': 'failed', 'why': 'the role failed: EROFS'}
    assert found['llama_lora_cache'] == {'outcome': 'not_run', 'why': 'an earlier role on this host failed'}


@pytest.mark.parametrize('after, changed, expected', [
    ('ok', True, 'fixed'),
    ('not_applicable', True, 'fixed'),
    ('ok', False, 'nothing_to_do'),
    ('at_risk', True, 'failed'),
    # The audit after could not tell: nothing confirms the fix, so it is never counted fixed.
    ('unknown', True, 'failed'),
    ('error', True, 'failed'),
])
def test_a_real_run_is_judged_by_the_audit_after_it(after, changed, expected):
    record = {'state': 'ran', 'outcomes': {'pi_ir_tx': {'outcome': 'ran', 'changed': changed}}}
    built = report.build(['pi'], {'pi': result(pi_ir_tx=after)}, CHECKS, '0.2.0', before={'pi': result(pi_ir_tx='at_risk')},
                         remediation={'pi': record}, scope={'check_mode': False})
    assert built['hosts'][0]['remediation']['outcomes']['pi_ir_tx']['outcome'] == expected
    assert built['outcomes'] == {expected: 1}


def test_declared_checks_are_by_hand_and_unrecorded_hosts_not_run():
    described = {'site.x': {'docs': 'https://wiki', 'advice': ['Rotate it.']}}
    checks = CHECKS + [('site.x', 'x')]
    built = report.build(['a', 'b'], {'a': result(**{'site.x': 'affected'}), 'b': result(pi_ir_tx='at_risk')}, checks, '0.2.0',
                         before={'a': result(**{'site.x': 'affected'}), 'b': result(pi_ir_tx='at_risk')},
                         remediation={'a': {'state': 'nothing_to_run'}, 'b': None}, scope={'check_mode': True},
                         described=described)
    assert built['hosts'][0]['remediation']['outcomes'] == {
        'site.x': {'outcome': 'manual', 'why': 'a declared check has no automatic fix: Rotate it.'}}
    assert built['hosts'][1]['remediation']['outcomes']['pi_ir_tx']['outcome'] == 'not_run'
    lines = report_summary.remediation_lines(built)
    assert lines[:2] == ['Remediation (CHECK MODE: nothing was changed):',
                         '  a run without --check would fix 0; 1 need a change by hand; 1 not run']
    assert '  by hand: a/site.x: a declared check has no automatic fix: Rotate it.' in lines


def test_the_outcome_a_host_forges_into_its_record_is_not_kept():
    record = {'state': 'ran', 'outcomes': {'pi_ir_tx': {'outcome': 'pwned', 'why': 'x'}, 7: {'outcome': 'fixed'}}}
    built = report.build(['pi'], {'pi': result(pi_ir_tx='at_risk')}, CHECKS, '0.2.0', before={'pi': result(pi_ir_tx='at_risk')},
                         remediation={'pi': record}, scope={'check_mode': True})
    assert built['hosts'][0]['remediation']['outcomes']['pi_ir_tx'] == {
        'outcome': 'manual', 'why': 'no outcome was recorded for it: check it by hand'}


def test_the_fix_command_is_quoted_and_never_holds_a_credential():
    argv, note = fix_outcome.command(['/inv/hosts.yml', 'odd host,'], "pi-07; rm -rf /", 'pi_ir_tx',
                                     {'postmortem_root': '/mnt/sd card', 'postmortem_become': True,
                                      'postmortem_settings': {'ollama_gemma4_renderer': {'token': 's3cret'}}}, '/r')
    text = fix_outcome.shell_text(argv)
    assert shlex.split(text) == argv
    assert "'pi-07; rm -rf /'" in text and 's3cret' not in text
    assert note.startswith('add the postmortem_settings you audited with')
    assert json.loads(argv[argv.index('-e') + 1]) == {'postmortem_checks': ['pi_ir_tx'], 'postmortem_root': '/mnt/sd card',
                                                      'postmortem_become': True, 'postmortem_report_dir': '/r'}
    assert fix_outcome.fix_entry('llama_spec_logprobs', argv, None)['manual'].startswith('no automatic fix: ')
    assert fix_outcome.fix_entry('site.x', argv, None, {'advice': ['Rotate it.'], 'docs': 'https://wiki'}) == {
        'manual': 'Rotate it. (docs: https://wiki)'}


def test_every_remediation_role_hands_its_outcome_fact():
    """The record reads <role>_outcome (changed, by_hand); a role that forgets it leaves every finding 'manual'."""
    for role in sorted(set(d.REMEDIATION['role'] for d in registry.DETECTIONS if d.REMEDIATION.get('role'))):
        name = fix_outcome.outcome_var(role)
        with open(os.path.join(REPO_ROOT, 'roles', fix_outcome.short(role), 'tasks', 'main.yml')) as handle:
            tasks = yaml.safe_load(handle)
        setters = [t for t in tasks if name in ((t.get('ansible.builtin.set_fact') or {}))]
        assert setters, '%s does not set %s' % (role, name)
        assert set(setters[-1]['ansible.builtin.set_fact'][name]) == {'changed', 'by_hand'}
        assert tasks[-1] is setters[-1], '%s must set %s last, after every step that changes or decides' % (role, name)


def test_the_remediation_page_has_its_own_title_and_its_outcomes_first():
    from ...helpers.report import render_html
    record = {'state': 'ran', 'outcomes': {'pi_ir_tx': {'outcome': 'ran', 'changed': True}}}
    built = report.build(['pi'], {'pi': result(pi_ir_tx='ok')}, CHECKS, '0.2.0', before={'pi': result(pi_ir_tx='at_risk')},
                         remediation={'pi': record}, scope={'check_mode': False})
    page = render_html(built)
    assert '<title>homelab.postmortem remediation report</title>' in page
    assert page.index('<div id="outcomes"><strong>Remediation:</strong> <span data-outcome="fixed">fixed 1</span>') < page.index(
        'data-total=')
    audit = render_html(report.build(['pi'], {'pi': result(pi_ir_tx='ok')}, CHECKS, '0.2.0'))
    assert '<title>homelab.postmortem fleet report</title>' in audit and 'id="outcomes"' not in audit
