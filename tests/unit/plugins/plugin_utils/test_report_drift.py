"""Drift between audits, accepted findings, the Prometheus text and the remediation plan: built from
reports made by report.build on results shaped like the module's."""
import calendar
import datetime
import json
import os
import time

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, remediation, report, report_drift
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_gate, report_metrics, report_summary

from ...helpers.paths import FIXTURES_DIR

CHECKS = [('pi_ir_tx', 'Pi IR'), ('llama_sleep_race', 'Sleep race')]
KNOWN = frozenset(c for c, _t in CHECKS)


def finding(cid, status):
    return {'id': cid, 'title': cid, 'status': status, 'summary': 's', 'evidence': {},
            'remediation': {'role': 'homelab.postmortem.pi_ir_tx', 'vars': {}, 'module': None, 'manual': [],
                            'disruption': 'none'}, 'references': []}


def audited(**statuses):
    return {'ansible_facts': {'postmortem': dict((cid, finding(cid, s)) for cid, s in statuses.items())}}


def host_result(statuses):
    if statuses is None:
        return {'unreachable': True, 'msg': 'Failed to connect to the host via ssh: Connection refused'}
    if statuses == 'failed':
        return {'failed': True, 'msg': 'MODULE FAILURE', 'module_stderr': '/usr/bin/python3: not found'}
    return audited(**statuses)


def run(statuses, now=None, checks=None):
    """A report for {host: {check: status}, None (unreachable) or 'failed'}."""
    results = dict((h, host_result(s)) for h, s in statuses.items())
    return report.build(list(statuses), results, checks or CHECKS, '0.2.0', now=now)


def night(number):
    return datetime.datetime(2026, 12, 1, 2, 0, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=number)


def audit_series(tmp_path, *runs, **options):
    """Each run compared with the history the runs before it left, as audit_report does; run n is
    night n after 2026-12-01T02:00Z (counted from ``first``)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    dest = str(tmp_path)
    built = None
    for number, statuses in enumerate(runs, options.get('first', 0)):
        built = run(statuses, now=night(number))
        state, _drift = report_drift.drift_since(built, dest, KNOWN)
        with open(os.path.join(dest, report_drift.HISTORY_FILE), 'w') as out:
            json.dump(report_drift.next_history(built, state), out)
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
    again = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}}, {'pi1': {'pi_ir_tx': 'at_risk'}}, first=4)
    assert changes(again)['pi1'] == {'pi_ir_tx': 'reopened'}


def test_hosts_that_came_and_went_and_a_host_that_became_unreachable(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}, 'pi2': {'pi_ir_tx': 'affected'}, 'old': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'ok'}, 'pi2': None, 'new': {'pi_ir_tx': 'affected'}})
    drift = built['drift']
    assert drift['hosts_appeared'] == ['new'] and drift['hosts_vanished'] == ['old']
    assert drift['hosts_newly_unaudited'] == ['pi2']
    assert drift['counts']['unmeasured'] == 1 and changes(built)['new'] == {'pi_ir_tx': 'opened'}
    assert changes(built)['pi2'] == {'pi_ir_tx': 'unmeasured'}
    assert report_summary.drift_lines(built)[:3] == [
        'Since 2026-12-01T02:00:00Z: 1 opened, 1 unmeasured, 1 new host(s), 1 host(s) not in this run.',
        '  now open: new/pi_ir_tx', '  not measured: pi2 since this run']


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
    assert report_gate.Policy('at_risk', True).hits(built) == [
        'pi1/pi_ir_tx: affected', 'pi2/pi_ir_tx: at_risk', 'pi3: unreachable (not audited)']
    assert report_gate.Policy('at_risk', True, fail_on_new_only=True).hits(built) == [
        'pi2/pi_ir_tx: at_risk', 'pi3: unreachable (not audited)']
    assert report_gate.Policy('affected', True, fail_on_new_only=True).hits(built) == ['pi3: unreachable (not audited)']
    assert report_gate.Policy('at_risk', True, True, True).line(built, ['x']).startswith('Gate: FAILED: 1 new finding(s)')


def write_report(path, data):
    with open(str(path), 'w') as out:
        out.write(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_an_earlier_reports_shapes(tmp_path):
    """postmortem.json of 0.2.0 (no schema_version) is used with a note; a remediation run's report and a
    run that audited no host are no baseline when found in the directory, but are when asked for."""
    old = run({'pi1': {'pi_ir_tx': 'affected'}})
    del old['schema_version'], old['kind']
    baseline, note = report_drift.baseline_from_report(write_report(tmp_path / 'old.json', dict(old)), KNOWN, audits_only=True)
    assert baseline.statuses == {'pi1': {'pi_ir_tx': 'affected'}} and 'older collection version (schema 1)' in note
    remediated = report.build(['pi1'], {'pi1': audited(pi_ir_tx='ok')}, CHECKS, '0.2.0', before={'pi1': audited(pi_ir_tx='at_risk')})
    path = write_report(tmp_path / 'rem.json', dict(remediated))
    assert report_drift.baseline_from_report(path, KNOWN, audits_only=True) == (None, 'no comparison: %s is a remediation run, not an audit' % path)
    assert report_drift.baseline_from_report(path, KNOWN)[0].statuses == {'pi1': {'pi_ir_tx': 'ok'}}
    empty = write_report(tmp_path / 'empty.json', dict(report.build([], {}, CHECKS, '0.2.0', scope={})))
    assert report_drift.baseline_from_report(empty, KNOWN, audits_only=True)[0] is None


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
    baseline, note = report_drift.baseline_from_report(path, KNOWN)
    assert baseline is None and reason in note and note.startswith('no comparison')


def test_a_previous_report_too_large_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(report_drift, 'MAX_PREVIOUS_BYTES', 100)
    path = write_report(tmp_path / 'big.json', {'generator': 'homelab.postmortem', 'hosts': [], 'pad': 'x' * 200})
    assert 'more than the 100 this reads' in report_drift.baseline_from_report(path, KNOWN)[1]


def test_a_broken_history_starts_again_with_a_note(tmp_path):
    (tmp_path / report_drift.HISTORY_FILE).write_text('{"schema_version": 1, "last_audit": {"ho')
    state, note = report_drift.read_history(str(tmp_path), KNOWN)
    assert state.generated_at is None and state.statuses == {} and 'starts again' in note


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
    assert report_gate.Policy('at_risk', True).hits(built) == ['gpu1/llama_sleep_race: at_risk']
    built['accept'] = outcome
    text = '\n'.join(report_summary.summary_lines(built, {}))
    assert 'Accepted (postmortem_accept): 1 finding(s); 1 expired, counting again.' in text
    assert '1 entry match nothing in this run: #3 retired/pi_ir_tx' in text
    assert 'pi-1: pi_ir_tx' not in text  # not among the hosts that need attention
    # On the day it expires, it counts again.
    again = report.build(['pi-1'], {'pi-1': audited(pi_ir_tx='affected')}, CHECKS, '0.2.0')
    accepted.apply(again, accept_entries(ACCEPT), datetime.date(2027, 1, 1))
    assert report_gate.Policy('at_risk', True).hits(again) == ['pi-1/pi_ir_tx: affected']


@pytest.mark.parametrize('text,problem', [
    ('- host: a\n  check: pi_ir_txx\n  reason: r\n', "entry 1 (pi_ir_txx): unknown check 'pi_ir_txx'"),
    ('- host: a\n  check: pi_ir_tx\n', 'entry 1 (pi_ir_tx): reason must be a non-empty string'),
    ('- host: a\n  check: pi_ir_tx\n  reason: r\n  expires: soon\n', "entry 1 (pi_ir_tx): expires must be a date (YYYY-MM-DD), got 'soon'"),
    ('- host: a\n  check: pi_ir_tx\n  reason: r\n  until: 2027-01-01\n', 'entry 1 (pi_ir_tx): unknown key(s) until'),
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


# Issue 34: only a measurement moves a finding. U: the host unreachable that night; F: its audit failed.
U, F = None, 'failed'


def one_host_nights(*nights):
    """Runs where pi1 is measured ok every night and pi2's pi_ir_tx is each of ``nights``."""
    return [{'pi1': {'pi_ir_tx': 'ok'}, 'pi2': n if n in (U, F) else {'pi_ir_tx': n}} for n in nights]


@pytest.mark.parametrize('nights,change', [
    (['at_risk', U, 'at_risk'], None),                     # one flaky night, back unchanged: nothing opened
    (['at_risk', U, U, U, 'at_risk'], None),               # three nights away
    (['at_risk', F, 'at_risk'], None),
    (['at_risk', 'unknown', 'at_risk'], None),             # the check unknown for one run
    (['affected', 'error', 'affected'], None),
    (['affected', U, 'at_risk'], None),                    # still open
    (['at_risk', U], 'unmeasured'),
    (['at_risk', U, U], 'unmeasured'),                     # said every night it stays unmeasured
    (['at_risk', 'unknown'], 'unmeasured'),
    (['at_risk', U, 'ok'], 'closed'),                      # fixed while unreachable: closed when measured
    (['at_risk', 'unknown', 'not_applicable'], 'closed'),
    (['ok', U, 'at_risk'], 'opened'),
    (['ok', 'unknown', 'at_risk'], 'opened'),
    (['unknown', 'unknown', 'at_risk'], 'opened'),         # never measured before
    (['at_risk', 'ok', U, 'at_risk'], 'reopened'),         # only after a measured close
    (['at_risk', 'ok', 'unknown', 'at_risk'], 'reopened'),
    (['at_risk', 'unknown', 'ok', 'unknown'], None),
    (['ok', 'unknown', 'ok'], None),
])
def test_only_measurements_move_a_finding(tmp_path, nights, change):
    built = audit_series(tmp_path, *one_host_nights(*nights))
    assert changes(built)['pi2'].get('pi_ir_tx') == change
    assert changes(built)['pi1'] == {}


def test_a_flaky_night_raises_no_new_finding_the_next_morning(tmp_path):
    """The issue's fleet: pi1 and pi2 carry the same known at_risk finding; night 3 pi2 is unreachable;
    night 4 it is back, nothing changed on it: no opened line, no failed new-only gate, no opened metric."""
    both = {'pi1': {'pi_ir_tx': 'at_risk'}, 'pi2': {'pi_ir_tx': 'at_risk'}}
    away = {'pi1': {'pi_ir_tx': 'at_risk'}, 'pi2': U}
    night3 = audit_series(tmp_path, both, both, away)
    assert night3['drift']['counts']['unmeasured'] == 1 and report_gate.Policy('at_risk', False, fail_on_new_only=True).hits(night3) == []
    night4 = audit_series(tmp_path, both, first=3)
    assert night4['drift']['counts'] == {'opened': 0, 'reopened': 0, 'closed': 0, 'unmeasured': 0, 'unchanged': 2}
    assert report_summary.drift_lines(night4) == ['Since 2026-12-03T02:00:00Z: nothing changed.']
    assert report_gate.Policy('at_risk', True, fail_on_new_only=True).hits(night4) == []
    assert 'finding_opened{' not in report_metrics.render(night4, 1764900000)


def test_the_history_keeps_the_last_measured_status_and_since_when_it_is_unmeasured(tmp_path):
    built = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'at_risk', 'llama_sleep_race': 'ok'}, 'pi2': {'pi_ir_tx': 'ok'}},
                         {'pi1': {'pi_ir_tx': 'unknown', 'llama_sleep_race': 'ok'}, 'pi2': U},
                         {'pi1': {'pi_ir_tx': 'error', 'llama_sleep_race': 'ok'}, 'pi2': F},
                         {'pi1': {'pi_ir_tx': 'unknown', 'llama_sleep_race': 'ok'}, 'pi2': {'pi_ir_tx': 'unknown'}})
    with open(str(tmp_path / report_drift.HISTORY_FILE)) as handle:
        history = json.load(handle)
    last = history['last_audit']
    assert history['schema_version'] == 2 and last['checks'] == ['pi_ir_tx', 'llama_sleep_race']
    assert last['hosts'] == {'pi1': 'ro', 'pi2': 'o'}   # the last measured letters: never 'u', never a host state
    assert last['measured'] == {'pi1': '2026-12-04T02:00:00Z', 'pi2': '2026-12-04T02:00:00Z'}
    # pi1's pi_ir_tx was last measured the first night; pi2's has not been since it went away the second.
    assert last['check_measured'] == {'pi1': {'pi_ir_tx': '2026-12-01T02:00:00Z'}, 'pi2': {'pi_ir_tx': '2026-12-01T02:00:00Z'}}
    assert last['check_unmeasured'] == {'pi1': {'pi_ir_tx': '2026-12-02T02:00:00Z'}, 'pi2': {'pi_ir_tx': '2026-12-02T02:00:00Z'}}
    assert 'host_unmeasured' not in last or last['host_unmeasured'] == {}
    assert built['hosts'][0]['unmeasured'] == {'pi_ir_tx': '2026-12-02T02:00:00Z'}
    assert changes(built) == {'pi1': {'pi_ir_tx': 'unmeasured'}, 'pi2': {}}
    assert report_summary.drift_lines(built)[1] == '  not measured: pi1/pi_ir_tx for 2 days'


def test_a_host_away_for_nights_says_since_when_in_the_report_the_summary_and_the_metrics(tmp_path):
    built = audit_series(tmp_path, *one_host_nights('at_risk', U, F, U))
    pi2 = built['hosts'][1]
    assert pi2['unmeasured_since'] == '2026-12-02T02:00:00Z' and pi2['last_measured_at'] == '2026-12-01T02:00:00Z'
    assert '  not measured: pi2 for 2 days' in report_summary.drift_lines(built)
    metrics = report_metrics.render(built, 1764900000)
    first = calendar.timegm((2026, 12, 1, 2, 0, 0, 0, 0, 0))
    assert 'homelab_postmortem_last_measured_timestamp_seconds{host="pi2"} %r' % float(first) in metrics
    assert 'homelab_postmortem_last_measured_timestamp_seconds{host="pi1"} %r' % float(first + 3 * 86400) in metrics
    with open(str(tmp_path / report_drift.HISTORY_FILE)) as handle:
        last = json.load(handle)['last_audit']
    assert last['hosts']['pi2'] == 'r' and last['host_unmeasured'] == {'pi2': {'since': '2026-12-02T02:00:00Z',
                                                                               'state': 'unreachable'}}
    # A host never measured counts from when the audits first listed it.
    fresh = audit_series(tmp_path / 'fresh', {'new': U}, {'new': U})
    assert fresh['hosts'][0]['last_measured_at'] is None and fresh['hosts'][0]['unmeasured_since'] == '2026-12-01T02:00:00Z'
    assert 'last_measured_timestamp_seconds{host="new"} %r' % float(first) in report_metrics.render(fresh, 1764900000)


def test_a_check_unmeasured_after_its_host_came_back_counts_from_when_the_host_went_away(tmp_path):
    built = audit_series(tmp_path, *one_host_nights('ok', U, 'unknown'))
    assert built['hosts'][1]['unmeasured'] == {'pi_ir_tx': '2026-12-02T02:00:00Z'}


def test_a_renamed_host_is_a_new_one_and_the_old_name_vanishes(tmp_path):
    built = audit_series(tmp_path, {'pi2': {'pi_ir_tx': 'at_risk'}}, {'pi2-kitchen': {'pi_ir_tx': 'at_risk'}})
    assert changes(built) == {'pi2-kitchen': {'pi_ir_tx': 'opened'}}
    assert built['drift']['hosts_appeared'] == ['pi2-kitchen'] and built['drift']['hosts_vanished'] == ['pi2']
    # The next night the old name is not "vanished" again: it was not in the last run.
    again = audit_series(tmp_path, {'pi2-kitchen': {'pi_ir_tx': 'at_risk'}}, first=2)
    assert again['drift']['hosts_vanished'] == [] and changes(again) == {'pi2-kitchen': {}}


def test_a_host_no_run_listed_for_thirty_days_is_dropped_and_the_report_says_so(tmp_path):
    audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}, 'retired': {'pi_ir_tx': 'at_risk'}})
    kept = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}}, first=report_drift.RETIRE_AFTER_DAYS - 1)
    assert kept['drift']['hosts_dropped'] == []
    dropped = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}}, first=report_drift.RETIRE_AFTER_DAYS)
    assert dropped['drift']['hosts_dropped'] == ['retired']
    assert '  dropped from the history (no run listed them for 30 days): retired' in report_summary.drift_lines(dropped)
    with open(str(tmp_path / report_drift.HISTORY_FILE)) as handle:
        history = json.load(handle)
    assert list(history['last_audit']['hosts']) == ['pi1'] and 'retired' not in history['last_audit']['seen']
    assert 'retired' not in report_metrics.render(dropped, 1764900000)
    back = audit_series(tmp_path, {'pi1': {'pi_ir_tx': 'ok'}, 'retired': {'pi_ir_tx': 'at_risk'}},
                        first=report_drift.RETIRE_AFTER_DAYS + 1)
    assert back['drift']['hosts_appeared'] == ['retired'] and changes(back)['retired'] == {'pi_ir_tx': 'opened'}


def history_fixture(tmp_path):
    """A history written by 0.2.0 (schema 1): made by plugins/plugin_utils/report_drift.py at 96f22b9 from
    two nights: 2026-11-20 pi1 at_risk/ok, pi2 at_risk, pi3 affected; 2026-11-21 pi1's pi_ir_tx unknown,
    pi2 unreachable, pi3 ok (closed). That version kept 'u' and 'U' in place of the measured statuses."""
    with open(os.path.join(FIXTURES_DIR, 'history', 'v1-0.2.0.json')) as handle:
        text = handle.read()
    (tmp_path / report_drift.HISTORY_FILE).write_text(text)
    return json.loads(text)


def test_a_history_of_0_2_0_is_read_and_upgraded_with_nothing_lost(tmp_path):
    old = history_fixture(tmp_path)
    assert old['schema_version'] == 1 and old['last_audit']['hosts'] == {'pi1': 'uo', 'pi2': 'U', 'pi3': 'o-'}
    state, note = report_drift.read_history(str(tmp_path), KNOWN)
    assert 'older collection version (schema 1) and is upgraded' in note
    assert state.statuses == {'pi1': {'llama_sleep_race': 'ok'}, 'pi3': {'pi_ir_tx': 'ok'}}
    assert state.check_unmeasured == {'pi1': {'pi_ir_tx': '2026-11-21T02:00:00Z'}}
    assert state.host_unmeasured == {'pi2': {'since': '2026-11-21T02:00:00Z', 'state': 'unreachable'}}
    assert state.closed == {'pi3\tpi_ir_tx': '2026-11-21T02:00:00Z'}
    built = run({'pi1': {'pi_ir_tx': 'at_risk', 'llama_sleep_race': 'ok'}, 'pi2': {'pi_ir_tx': 'at_risk'},
                 'pi3': {'pi_ir_tx': 'affected'}}, now=datetime.datetime(2026, 11, 22, 2, 0, tzinfo=datetime.timezone.utc))
    state, drift = report_drift.drift_since(built, str(tmp_path), KNOWN)
    # 0.2.0 did not keep what 'u' and 'U' replaced: those count as opened (never a false "unchanged");
    # pi3's closed marker survives, so its regression is still a regression.
    assert changes(built) == {'pi1': {'pi_ir_tx': 'opened'}, 'pi2': {'pi_ir_tx': 'opened'}, 'pi3': {'pi_ir_tx': 'reopened'}}
    assert drift['hosts_vanished'] == [] and drift['hosts_appeared'] == []
    upgraded = report_drift.next_history(built, state)
    assert upgraded['schema_version'] == 2 and upgraded['last_audit']['hosts'] == {'pi1': 'ro', 'pi2': 'r', 'pi3': 'a'}


def test_check_ids_the_run_does_not_know_never_become_history_keys(tmp_path):
    history_fixture(tmp_path)
    state, note = report_drift.read_history(str(tmp_path), frozenset(['pi_ir_tx']))
    assert '1 check id(s) of the drift history this run does not know were dropped' in note
    assert state.statuses == {'pi1': {}, 'pi3': {'pi_ir_tx': 'ok'}}
    built = run({'pi1': {'pi_ir_tx': 'ok'}}, now=night(0), checks=[('pi_ir_tx', 'Pi IR')])
    built['drift'] = report_drift.compare(built, state, state)
    assert report_drift.next_history(built, state)['last_audit']['checks'] == ['pi_ir_tx']


@pytest.mark.parametrize('last,change', [
    # No usable time stamp: no baseline to compare with (every open finding counts as opened).
    ({'generated_at': '\x1b[2J2026', 'checks': [1, None, 'pi_ir_tx'], 'hosts': {'pi1': 'xxa', 'pi2': 7}}, 'opened'),
    ({'generated_at': '2026-12-01T02:00:00Z', 'checks': ['pi_ir_tx'], 'hosts': {'pi1': 'a'},
      'measured': [1], 'host_unmeasured': {'pi1': 'soon'}, 'check_unmeasured': {'pi1': {'pi_ir_tx': 42}},
      'check_measured': 'x', 'seen': {'pi1': '2026-13-45T99:00:00Z'}}, None),
])
def test_a_hostile_history_of_the_current_schema_is_read_for_what_it_holds(tmp_path, last, change):
    (tmp_path / report_drift.HISTORY_FILE).write_text(json.dumps({'schema_version': 2, 'closed': {'a\tb': 5}, 'last_audit': last}))
    state, _note = report_drift.read_history(str(tmp_path), KNOWN)
    assert state.statuses['pi1'] == {'pi_ir_tx': 'affected'} and state.closed == {}
    built = run({'pi1': {'pi_ir_tx': 'affected'}}, now=night(40))
    state, drift = report_drift.drift_since(built, str(tmp_path), KNOWN)
    assert changes(built)['pi1'].get('pi_ir_tx') == change
    json.dumps(report_drift.next_history(built, state))


def test_history_and_drift_are_linear_at_100000_check_ids(tmp_path):
    """Issue 32: 2 hosts x 100,000 check ids held the report past 60 s (a list membership test per id).
    Reading the history, comparing and writing the next one must cost about what parsing it does: the
    bound is a ratio to json.load of the same file, never an absolute time. The same through a previous
    report (postmortem_previous)."""
    ids = ['check_%06d' % i for i in range(100000)]
    known = frozenset(ids)
    statuses = ('ok', 'at_risk', 'unknown', 'not_applicable', 'affected', 'error')

    def fleet(stamp, shift):
        hosts = [{'name': name, 'state': 'audited', 'reason': None,
                  'findings': dict((cid, {'status': statuses[(i + shift + h) % len(statuses)]}) for i, cid in enumerate(ids))}
                 for h, name in enumerate(('pi1', 'pi2'))]
        return {'generated_at': stamp, 'kind': 'audit', 'checks': [{'id': cid} for cid in ids], 'hosts': hosts}

    first = fleet('2026-12-01T02:00:00Z', 0)
    state, _drift = report_drift.drift_since(first, str(tmp_path), known)
    history_path = str(tmp_path / report_drift.HISTORY_FILE)
    with open(history_path, 'w') as out:
        out.write(json.dumps(report_drift.next_history(first, state), separators=(',', ':')))
    previous_path = str(tmp_path / 'previous.json')
    with open(previous_path, 'w') as out:
        json.dump(dict(first, generator='homelab.postmortem 0.2.0', schema_version=report.SCHEMA_VERSION), out)

    def cost(work):
        best = None
        for _attempt in range(2):
            started = time.process_time()
            work()
            spent = time.process_time() - started
            best = spent if best is None else min(best, spent)
        return best

    def parse(path):
        with open(path) as handle:
            json.load(handle)

    second = fleet('2026-12-02T02:00:00Z', 1)

    def one_night(previous=None):
        later, drift = report_drift.drift_since(second, str(tmp_path), known, previous)
        json.dumps(report_drift.next_history(second, later), separators=(',', ':'))
        assert sum(drift['counts'].values()) == 200000

    ratio = cost(one_night) / cost(lambda: parse(history_path))
    through_previous = cost(lambda: one_night(previous_path)) / cost(lambda: parse(previous_path))
    # Measured here: about 23 and 5 (0.2.0's quadratic update: 54 s at 40,000 ids, thousands); room for a busy machine.
    assert ratio < 150 and through_previous < 60, (ratio, through_previous)
