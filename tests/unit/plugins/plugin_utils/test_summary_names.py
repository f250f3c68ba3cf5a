"""The summary names what it counts (#44): which findings closed, which are accepted and why, and the gate
says apart the accepted findings it did not count."""
import datetime

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, report, report_gate, report_summary

CHECKS = [(d.ID, d.TITLE) for d in registry.DETECTIONS]


def finding(cid, status):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {}, 'remediation': {}, 'references': []}


def result(**statuses):
    return {'changed': False, 'ansible_facts': {'postmortem': dict((c, finding(c, s)) for c, s in statuses.items())}}


def test_drift_names_the_findings_that_closed():
    built = report.build(['pi1', 'pi2'], {'pi1': result(pi_ir_tx='ok'), 'pi2': result(pi_ir_tx='affected')}, CHECKS, '0.2.0')
    built['hosts'][0]['drift'] = {'pi_ir_tx': 'closed'}
    built['hosts'][1]['drift'] = {'pi_ir_tx': 'opened'}
    built['drift'] = {'since': '2026-12-06T02:00:00Z', 'counts': {'opened': 1, 'closed': 1}}
    lines = report_summary.drift_lines(built)
    assert lines == ['Since 2026-12-06T02:00:00Z: 1 opened, 1 closed.', '  now open: pi2/pi_ir_tx', '  closed: pi1/pi_ir_tx']


def test_accepted_findings_are_named_with_their_reason_and_the_gate_counts_them_apart():
    built = report.build(['pi1', 'pi2'], {'pi1': result(pi_ir_tx='affected'), 'pi2': result(pi_ir_tx='ok')}, CHECKS, '0.2.0')
    entries = accepted.parse([{'host': 'pi1', 'check': 'pi_ir_tx', 'reason': 'IR unused until spring', 'expires': '2027-03-01'}],
                             'accepted.yml')
    built['accept'] = accepted.apply(built, entries, datetime.date(2026, 12, 7))
    lines = report_summary.accept_lines(built)
    assert lines == ['Accepted (postmortem_accept): 1 finding(s).',
                     '  accepted: pi1/pi_ir_tx (#1, until 2027-03-01): IR unused until spring']
    gate = report_gate.Policy('at_risk', True, True)
    assert gate.line(built, gate.hits(built)) == (
        'Gate: passed (nothing at or above at_risk; 1 accepted finding(s) at or above it not counted).')


def test_many_accepted_findings_name_ten_then_count():
    hosts = ['pi%02d' % n for n in range(15)]
    built = report.build(hosts, dict((h, result(pi_ir_tx='at_risk')) for h in hosts), CHECKS, '0.2.0')
    entries = accepted.parse([{'host': 'pi*', 'check': 'pi_ir_tx', 'reason': 'known'}], 'accepted.yml')
    built['accept'] = accepted.apply(built, entries, datetime.date(2026, 12, 7))
    lines = report_summary.accept_lines(built)
    assert len(lines) == 12 and lines[-1] == '  ... and 5 more accepted finding(s): see the full report'
