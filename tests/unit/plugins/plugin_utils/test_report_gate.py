"""The gate decides and words what fails a run once: the summary's line and the task's message agree."""
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report, report_gate

from .test_report import CHECKS, audited, finding


def built(**results):
    return report.build(sorted(results), results, CHECKS, '0.2.0')


def test_a_run_over_the_threshold_says_so_in_the_same_words_in_its_line_and_its_message():
    fleet = built(pi1=audited(pi_ir_tx=finding('pi_ir_tx', 'affected')), dead={'unreachable': True, 'msg': 'no route'})
    policy = report_gate.Policy('at_risk', True, True)
    hits = policy.hits(fleet)
    assert hits == ['dead: unreachable (not audited)', 'pi1/pi_ir_tx: affected']
    said = '1 finding(s) at or above at_risk and 1 host(s) that could not be audited'
    assert policy.line(fleet, hits) == 'Gate: FAILED: %s.' % said
    assert policy.failures(fleet, hits) == ['%s: %s' % (said, '; '.join(hits))]


def test_a_run_below_the_threshold_passes_and_only_its_own_problems_fail_it():
    fleet = built(pi1=audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk')))
    policy = report_gate.Policy('affected', True, True)
    assert policy.hits(fleet) == [] and policy.failures(fleet, []) == []
    assert policy.line(fleet, []) == 'Gate: passed (nothing at or above affected).'
    assert policy.failures(fleet, [], ['the report could not be written: disk full']) == ['the report could not be written: disk full']


def test_unfinished_remediation_fails_whatever_the_threshold():
    fleet = report.build(['img-1'], {'img-1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'))}, CHECKS, '0.2.0',
                         remediation={'img-1': {'state': 'lost', 'reason': 'host went away'}})
    failures = report_gate.Policy('never').failures(fleet, [])
    assert len(failures) == 1 and failures[0].startswith('Remediation did not finish: img-1 ')
    fleet['hosts'][0]['remediation']['state'] = 'done'
    assert report_gate.Policy('never').failures(fleet, []) == []


def test_nothing_audited_fails_unless_allowed():
    empty = report.build([], {}, CHECKS, '0.2.0', scope={'host_pattern': 'web*'})
    assert report_gate.Policy('never', True, True).failures(empty, [])[0].endswith(
        'set postmortem_fail_on_no_hosts: false to let such a run pass')
    assert report_gate.Policy('never', True, False).failures(empty, []) == []
    assert report_gate.Policy('never', True, False).line(empty, []) == \
        'Gate: passed although nothing was audited (postmortem_fail_on_no_hosts: false).'
