"""Drift between audits, accepted findings, the Prometheus text and the remediation plan: built from
reports made by report.build on results shaped like the module's."""
import datetime
import json
import os

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, remediation, report, report_drift
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_metrics, report_summary

CHECKS = [('pi_ir_tx', 'Pi IR'), ('llama_sleep_race', 'Sleep race')]


def finding(cid, status):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {},
            'remediation': {'role': 'homelab.postmortem.pi_ir_tx', 'vars': {}, 'module': None, 'manual': [],
                            'disruption': 'none'}, 'references': []}


def audited(**statuses):
    return {'ansible_facts': {'postmortem': dict((cid, finding(cid, s)) for cid, s in statuses.items())}}


def run(statuses, now=None):
    """A report for {host: {check: status} or None (unreachable)}."""
    results = dict((h, audited(**s) if s is not None else {'unreachable': True, 'msg': 'gone'}) for h, s in statuses.items())
    return report.build(list(statuses), results, CHECKS, '0.2.0', now=now)


def audit_series(tmp_path, *runs):
    """Each run compared with the history the runs before it left, as audit_report does."""
    dest = str(tmp_path)
    built = None
    for number, statuses in enumerate(runs):
        built = run(statuses, now=datetime.datetime(2026, 12, 1 + number, 2, 0, tzinfo=datetime.timezone.utc))
        history, _note = report_drift.read_history(dest)
        baseline = report_drift.baseline_from_history(history, dest)
        built['drift'] = report_drift.compare(built, baseline, history)
        with open(os.path.join(dest, report_drift.HISTORY_FILE), 'w') as out:
            json.dump(report_drift.next_history(built, history, baseline), out)
    return built


def changes(built):
    return dict((e['name'], e.get('drift') or {}) for e in built['hosts'])


@pytest.mark.parametrize('before,after,change', [
    ('ok', 'affected', 'opened'),
    ('unknown', 'at_risk', 'opened'),
    ('not_applicable', 'affected', 'opened'),
    ('at_risk', 'ok', 'closed'),
    ('affected', 'not_applicable', 'closed'),
    ('affected', 'unknown', 'unmeasured'),   # not closed: nothing showed it fixed
    ('at_risk', 'error', 'unmeasured'),
    ('affected', 'at_risk', None),            # still open
    ('ok', 'unknown', None),                  # a flap between ok and unknown is no change
    ('unknown', 'ok', None),
    ('ok', 'ok', None),
])
def test_every_transition(tmp_path, before, after, change):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': before}}, {'pi1': {'pi_ir_tx': after}})
    assert changes(built)['pi1'].get('pi_ir_tx') == change
    assert built['drift']['since'] == '2026-12-01T02:00:00Z'


def test_a_finding_closed_once_and_back_is_reopened(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'affected'}}, {'pi1': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'ok'}}, {'pi1': {'pi_ir_tx': 'affected'}})
    assert changes(built)['pi1'] == {'pi_ir_tx': 'reopened'}
    # Reopened once, then closed and back again: still a regression, not new.
    again = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}}, {'pi1': {'pi_ir_tx': 'at_risk'}})
    assert changes(again)['pi1'] == {'pi_ir_tx': 'reopened'}


def test_hosts_that_came_and_went_and_a_host_that_became_unreachable(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}, 'pi2': {'pi_ir_tx': 'affected'}, 'old': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'ok'}, 'pi2': None, 'new': {'pi_ir_tx': 'affected'}})
    drift = built['drift']
    assert drift['hosts_appeared'] == ['new'] and drift['hosts_vanished'] == ['old']
    assert drift['hosts_newly_unaudited'] == ['pi2']
    assert drift['counts']['unmeasured'] == 1 and changes(built)['new'] == {'pi_ir_tx': 'opened'}
    assert report_summary.drift_lines(built)[0] == ('Since 2026-12-01T02:00:00Z: 1 opened, 1 unmeasured, 1 new host(s), '
                                                    '1 host(s) not in this run.')


def test_a_limited_run_does_not_make_the_next_full_run_see_everything_as_new(tmp_path):
    """--limit pi1 and fewer checks: the hosts and checks it did not audit keep their earlier status."""
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok', 'llama_sleep_race': 'at_risk'}, 'pi2': {'pi_ir_tx': 'affected'}},
                         {'pi1': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'ok', 'llama_sleep_race': 'at_risk'}, 'pi2': {'pi_ir_tx': 'affected'}})
    assert changes(built) == {'pi1': {}, 'pi2': {}}


def test_no_baseline_means_every_open_finding_is_opened(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'affected', 'llama_sleep_race': 'ok'}})
    assert changes(built)['pi1'] == {'pi_ir_tx': 'opened'} and built['drift']['since'] is None


def test_the_gate_can_fail_on_new_findings_only(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'affected'}, 'pi2': {'pi_ir_tx': 'ok'}, 'pi3': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'affected'}, 'pi2': {'pi_ir_tx': 'at_risk'}, 'pi3': None})
    assert report.threshold_reached(built, 'at_risk', True) == [
        'pi1/pi_ir_tx: affected', 'pi2/pi_ir_tx: at_risk', 'pi3: unreachable (not audited)']
    assert report.threshold_reached(built, 'at_risk', True, new_only=True) == ['pi2/pi_ir_tx: at_risk',
                                                                               'pi3: unreachable (not audited)']
    assert report.threshold_reached(built, 'affected', True, new_only=True) == ['pi3: unreachable (not audited)']
    assert report_summary.gate_lines(built, 'at_risk', True, True, ['x'], True)[0].startswith('Gate: FAILED: 1 new finding(s)')


def write_report(path, data):
    with open(str(path), 'w') as out:
        out.write(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_an_earlier_reports_shapes(tmp_path):
    """postmortem.json of 0.2.0 (no schema_version) is used with a note; a remediation run's report and a
    run that audited no host are no baseline when found in the directory, but are when asked for."""
    old = run({'pi1': {'pi_ir_tx': 'affected'}})
    del old['schema_version'], old['kind']
    baseline, note = report_drift.baseline_from_report(write_report(tmp_path / 'old.json', dict(old)), audits_only=True)
    assert baseline.statuses == {'pi1': {'pi_ir_tx': 'affected'}} and 'older collection version (schema 1)' in note
    remediated = report.build(['pi1'], {'pi1': audited(pi_ir_tx='ok')}, CHECKS, '0.2.0', before={'pi1': audited(pi_ir_tx='at_risk')})
    path = write_report(tmp_path / 'rem.json', dict(remediated))
    assert report_drift.baseline_from_report(path, audits_only=True) == (None, 'no comparison: %s is a remediation run, not an audit' % path)
    assert report_drift.baseline_from_report(path)[0].statuses == {'pi1': {'pi_ir_tx': 'ok'}}
    empty = write_report(tmp_path / 'empty.json', dict(report.build([], {}, CHECKS, '0.2.0', scope={})))
    assert report_drift.baseline_from_report(empty, audits_only=True)[0] is None


@pytest.mark.parametrize('make,reason', [
    (lambda p: write_report(p, '{"generator": "homelab.postmortem 0.2.0", "hosts": [{"na'), 'is not JSON'),
    (lambda p: write_report(p, {'generator': 'homelab.postmortem 9.0.0', 'schema_version': 99, 'hosts': []}), 'schema 99, newer'),
    (lambda p: write_report(p, {'generator': 'something else', 'hosts': []}), 'is not a homelab.postmortem report'),
    (lambda p: write_report(p, {'generator': 'homelab.postmortem', 'hosts': [7]}), 'has a host entry that is not one'),
    (lambda p: os.symlink('/dev/zero', str(p)) or str(p), 'is not a regular file'),
    (lambda p: os.mkfifo(str(p)) or str(p), 'is not a regular file'),
    (str, 'does not exist'),
    (lambda p: write_report(p, '[' * 100000 + ']' * 100000), 'is not JSON'),
])
def test_hostile_previous_reports_give_a_note(tmp_path, make, reason):
    path = make(tmp_path / 'previous.json')
    baseline, note = report_drift.baseline_from_report(path)
    assert baseline is None and reason in note and note.startswith('no comparison')


def test_a_previous_report_too_large_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(report_drift, 'MAX_PREVIOUS_BYTES', 100)
    path = write_report(tmp_path / 'big.json', {'generator': 'homelab.postmortem', 'hosts': [], 'pad': 'x' * 200})
    assert 'more than the 100 this reads' in report_drift.baseline_from_report(path)[1]


def test_a_broken_history_starts_again_with_a_note(tmp_path):
    (tmp_path / report_drift.HISTORY_FILE).write_text('{"schema_version": 1, "last_audit": {"ho')
    history, note = report_drift.read_history(str(tmp_path))
    assert history['last_audit'] is None and 'starts again' in note


def test_drift_at_ten_thousand_hosts_marks_exactly_what_changed(tmp_path):
    first = dict(('h%05d' % i, {'pi_ir_tx': 'ok', 'llama_sleep_race': 'ok'}) for i in range(10000))
    second = dict((h, {'pi_ir_tx': 'affected' if i % 100 == 0 else 'ok', 'llama_sleep_race': 'ok'})
                  for i, h in enumerate(first))
    built = audit_series(tmp_path, first, second)
    assert built['drift']['counts']['opened'] == 100 and built['drift']['counts']['unchanged'] == 19900
    assert os.path.getsize(str(tmp_path / report_drift.HISTORY_FILE)) < 1024 * 1024  # small: letters, not findings


def accept_entries(text):
    return accepted.parse(yaml.safe_load(text), 'accept.yml')


ACCEPT = """
- host: pi-*
  check: pi_ir_tx
  reason: the blaster is unplugged
  expires: 2027-01-01
- host: gpu1
  check: llama_sleep_race
  reason: expired one
  expires: 2026-11-01
- host: retired
  check: pi_ir_tx
  reason: matches nothing
"""


def test_accepted_findings_are_marked_skip_the_gate_and_expire():
    built = report.build(['pi-1', 'gpu1'], {'pi-1': audited(pi_ir_tx='affected'), 'gpu1': audited(llama_sleep_race='at_risk')},
                         CHECKS, '0.2.0')
    outcome = accepted.apply(built, accept_entries(ACCEPT), datetime.date(2026, 12, 1))
    assert built['hosts'][0]['accepted'] == {'pi_ir_tx': {'reason': 'the blaster is unplugged', 'expires': '2027-01-01', 'entry': 1}}
    assert built['hosts'][1]['acceptance_expired']['llama_sleep_race']['expired'] == '2026-11-01'
    assert [e['number'] for e in outcome['unmatched']] == [3]
    assert report.threshold_reached(built, 'at_risk') == ['gpu1/llama_sleep_race: at_risk']
    built['accept'] = outcome
    text = '\n'.join(report_summary.summary_lines(built, {}))
    assert 'Accepted (postmortem_accept): 1 finding(s); 1 expired, counting again.' in text
    assert '1 entry match nothing in this run: #3 retired/pi_ir_tx' in text
    assert 'pi-1: pi_ir_tx' not in text  # not among the hosts that need attention
    # On the day it expires, it counts again.
    again = report.build(['pi-1'], {'pi-1': audited(pi_ir_tx='affected')}, CHECKS, '0.2.0')
    accepted.apply(again, accept_entries(ACCEPT), datetime.date(2027, 1, 1))
    assert report.threshold_reached(again, 'at_risk') == ['pi-1/pi_ir_tx: affected']


@pytest.mark.parametrize('text,problem', [
    ('- host: a\n  check: pi_ir_txx\n  reason: r\n', "entry 1: unknown check 'pi_ir_txx'"),
    ('- host: a\n  check: pi_ir_tx\n', 'entry 1: reason must be a non-empty string'),
    ('- host: a\n  check: pi_ir_tx\n  reason: r\n  expires: soon\n', "entry 1: expires must be a date (YYYY-MM-DD), got 'soon'"),
    ('- host: a\n  check: pi_ir_tx\n  reason: r\n  until: 2027-01-01\n', 'entry 1: unknown key(s) until'),
    ('host: a\n', 'expected a list of entries'),
    ('- just a string\n', 'entry 1: expected a mapping'),
])
def test_a_bad_accept_file_names_the_entry(text, problem):
    with pytest.raises(accepted.AcceptProblem) as raised:
        accept_entries(text)
    assert problem in str(raised.value)


def test_the_remediation_plan_leaves_accepted_and_unselected_findings_alone():
    before = audited(pi_ir_tx='affected', llama_sleep_race='at_risk', llama_lora_cache='ok')
    before['ansible_facts']['postmortem']['llama_sleep_race']['remediation']['role'] = 'homelab.postmortem.llama_server'
    entries = accept_entries(ACCEPT)
    today = datetime.date(2026, 12, 1)
    chosen = remediation.plan('pi-1', before, ['all'], entries, False, today)
    assert chosen['roles'] == ['homelab.postmortem.llama_server']
    assert chosen['left'] == [{'check': 'pi_ir_tx', 'why': 'accepted (postmortem_accept entry 1: the blaster is unplugged)'}]
    forced = remediation.plan('pi-1', before, ['all'], entries, True, today)
    assert forced['roles'] == ['homelab.postmortem.pi_ir_tx', 'homelab.postmortem.llama_server']
    tagged = remediation.plan('pi-1', before, ['all'], [], False, today, run_tags=['pi_ir_tx'])
    assert tagged['roles'] == ['homelab.postmortem.pi_ir_tx']
    assert tagged['left'] == [{'check': 'llama_sleep_race', 'why': 'not selected by --tags/--skip-tags'}]
    assert remediation.plan('pi-1', before, ['llama_sleep_race'], [], False, today)['left'][0]['why'] == 'not in postmortem_remediate'
    assert remediation.plan('pi-1', {'unreachable': True}, ['all'], [], False, today)['roles'] == []


def test_metrics_hold_status_drift_and_hosts_with_escaped_labels(tmp_path):
    built = audit_series(tmp_path, {'pi "1"\\x': {'pi_ir_tx': 'ok'}}, {'pi "1"\\x': {'pi_ir_tx': 'affected'}, 'dead': None})
    text = report_metrics.render(built, 1764554400, 12.5)
    assert 'homelab_postmortem_finding_status{host="pi \\"1\\"\\\\x",check="pi_ir_tx"} 5' in text
    assert 'homelab_postmortem_finding_opened{host="pi \\"1\\"\\\\x",check="pi_ir_tx"} 1' in text
    assert 'homelab_postmortem_host_audited{host="dead",state="unreachable"} 0' in text
    assert 'homelab_postmortem_drift_findings{change="opened"} 1' in text
    assert 'homelab_postmortem_drift_hosts{change="appeared"} 1' in text
    assert 'homelab_postmortem_last_run_timestamp_seconds 1764554400.0' in text
    assert 'homelab_postmortem_run_duration_seconds 12.5' in text
    assert text.endswith('\n') and 'summary' not in text.split('# HELP', maxsplit=1)[0]


def test_a_batch_after_a_failure_or_a_lost_host_is_not_touched():
    assert remediation.stop_reason([('a', {'state': 'ran'}), ('b', None)], []) is None
    assert remediation.stop_reason([('a', {'state': 'failed'}), ('b', {'state': 'lost'}), ('c', None)], ['c']) == \
        'not touched: the run stopped after a failed, b was lost, c was lost in an earlier batch'
