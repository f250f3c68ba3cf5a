"""A host's findings at the controller's door (issue 32): only the checks of this run, only the
model's statuses; anything else makes that host's answer unusable, one failed row, never a report
column, a history key or a metric series, and the refusal is bounded whatever the host sent."""
import time

from ansible_collections.homelab.postmortem.plugins.plugin_utils import host_findings, report, report_metrics

CHECKS = [('pi_ir_tx', 'Pi IR'), ('llama_sleep_race', 'Sleep race')]


def finding(cid, status='ok'):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {}, 'remediation': {}, 'references': []}


def result(findings):
    return {'changed': False, 'ansible_facts': {'postmortem': findings}}


def test_an_unknown_check_id_fails_the_host_and_is_no_column():
    forged = {'pi_ir_tx': finding('pi_ir_tx', 'ok'),
              'x\nGate: passed (nothing at or above affected) FORGED': finding('x\nGate: passed (nothing at or above affected) FORGED', 'affected')}
    built = report.build(['good', 'evil'], {'good': result({'pi_ir_tx': finding('pi_ir_tx', 'affected')}), 'evil': result(forged)},
                         CHECKS, '0.3.0')
    assert [c['id'] for c in built['checks']] == ['pi_ir_tx']
    evil = built['hosts'][1]
    assert evil['state'] == 'failed' and evil['findings'] == {}
    assert "('x\\nGate: passed (nothing at or above affected) FORGED')" in evil['reason'] and '\n' not in evil['reason']
    metrics = report_metrics.render(built, 1764554400, None)
    assert 'FORGED' not in metrics and 'Gate' not in metrics


def test_a_hundred_thousand_made_up_ids_are_refused_in_bounded_time_and_text():
    """One host answering 100,000 made-up ids: one failed row naming three of them, no column, and a
    .prom of the size of a two-host fleet (the metrics had six series per unknown id before)."""
    forged = dict(('made_up_%06d' % i, finding('made_up_%06d' % i, 'affected')) for i in range(100000))
    forged['pi_ir_tx'] = finding('pi_ir_tx')
    started = time.process_time()
    built = report.build(['good', 'evil'], {'good': result({'pi_ir_tx': finding('pi_ir_tx')}), 'evil': result(forged)},
                         CHECKS, '0.3.0')
    took = time.process_time() - started
    assert len(built['checks']) == 1 and built['hosts'][1]['state'] == 'failed'
    assert len(built['hosts'][1]['reason']) < 400 and '100000 check id(s)' in built['hosts'][1]['reason']
    assert len(report_metrics.render(built, 1764554400, None)) < 20000
    # Not a timing test: a loose guard against a quadratic path (one pass over the ids takes milliseconds).
    assert took < 30


def test_statuses_and_ids_are_the_models():
    assert host_findings.check({'pi_ir_tx': finding('pi_ir_tx', 'fine')}, {'pi_ir_tx'})[1] == \
        "the finding pi_ir_tx has no valid status ('fine')"
    assert 'no valid status' in host_findings.check({'pi_ir_tx': dict(finding('pi_ir_tx'), status=['ok'])}, {'pi_ir_tx'})[1]
    assert host_findings.check({'pi_ir_tx': dict(finding('pi_ir_tx'), id='llama_sleep_race')}, {'pi_ir_tx'})[1] == \
        "the finding under pi_ir_tx says it is 'llama_sleep_race'"
    assert host_findings.check(['pi_ir_tx'], {'pi_ir_tx'})[1] == 'the audit returned list instead of findings'
    assert host_findings.check({7: finding('pi_ir_tx')}, {'pi_ir_tx'})[1].startswith('the audit returned findings for 1 check id(s)')
    good = {'pi_ir_tx': finding('pi_ir_tx')}
    assert host_findings.check(good, {'pi_ir_tx', 'llama_sleep_race'}) == (good, None)


def test_a_forged_before_audit_is_refused_in_a_remediation_report():
    forged = result({'pi_ir_tx': finding('pi_ir_tx', 'affected'), 'evil': finding('evil', 'affected')})
    built = report.build(['h'], {'h': result({'pi_ir_tx': finding('pi_ir_tx')})}, CHECKS, '0.3.0', before={'h': forged})
    assert built['hosts'][0]['before'] == {'(host)': 'failed'}
