"""The accepted-findings file (postmortem_accept), checked whole: every problem of every entry in one
run, each naming the entry's number and check; expired acceptances named."""
import datetime

import pytest

from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, report, report_summary


def load(tmp_path, text):
    path = tmp_path / 'accepted.yml'
    path.write_bytes(text.encode('utf-8'))
    return accepted.load(str(path), lambda p, limit: open(p, 'rb').read(limit + 1))


BROKEN = """
- host: pi-*
  check: pi_ir_tx
- host: pi-1
  check: pi_irtx
  reason: typo
  expires: 2027-02-30
- host: pi-2
  check: pi_ir_tx
  reason: fine
  expires: 2027-03-01
- host: pi-3
  check: pi_ir_tx
  reason: r
  expires: next spring
  until: then
- just a string
- host: pi-4
  check: pi_ir_tx
  reason: quoted, still no such day
  expires: "2027-04-31"
"""


def test_every_problem_of_every_entry_is_named_in_one_run(tmp_path):
    with pytest.raises(accepted.AcceptProblem) as raised:
        load(tmp_path, BROKEN)
    assert raised.value.problems == [
        'entry 1 (pi_ir_tx): reason must be a non-empty string',
        "entry 2 (pi_irtx): unknown check 'pi_irtx'; known checks: %s" % ', '.join(accepted.registry.BY_ID),
        'entry 2 (pi_irtx): expires 2027-02-30 is not a date: day is out of range for month',
        'entry 4 (pi_ir_tx): unknown key(s) until; the keys are host, check, reason, expires',
        "entry 4 (pi_ir_tx): expires must be a date (YYYY-MM-DD), got 'next spring'",
        'entry 5: expected a mapping with host, check and reason, got str',
        'entry 6 (pi_ir_tx): expires 2027-04-31 is not a date: day is out of range for month',
    ]
    assert str(raised.value).startswith('postmortem_accept %s: entry 1 (pi_ir_tx): ' % (tmp_path / 'accepted.yml'))


def test_a_file_with_many_broken_entries_names_the_first_fifty_and_counts_the_rest(tmp_path):
    with pytest.raises(accepted.AcceptProblem) as raised:
        load(tmp_path, '- host: a\n  check: pi_ir_tx\n' * 80)
    assert len(raised.value.problems) == 80 and str(raised.value).endswith('; and 30 more problem(s)')


def test_a_file_that_is_not_yaml_says_where(tmp_path):
    with pytest.raises(accepted.AcceptProblem) as raised:
        load(tmp_path, '- host: [a\n')
    assert 'is not YAML' in str(raised.value) and 'line' in str(raised.value)


def test_good_dates_in_every_form_yaml_gives_them(tmp_path):
    entries = load(tmp_path, '- {host: a, check: pi_ir_tx, reason: r, expires: 2027-03-01}\n'
                             '- {host: b, check: pi_ir_tx, reason: r, expires: "2027-03-02"}\n'
                             '- {host: c, check: pi_ir_tx, reason: r, expires: 2027-03-03T10:00:00Z}\n')
    assert [e['expires'] for e in entries] == ['2027-03-01', '2027-03-02', '2027-03-03']


def test_expired_acceptances_are_named_in_the_summary(tmp_path):
    entries = load(tmp_path, '- {host: "pi-*", check: pi_ir_tx, reason: r, expires: 2026-11-01}\n'
                             '- {host: gpu1, check: llama_sleep_race, reason: r, expires: 2026-11-15}\n')
    finding = {'id': 'x', 'status': 'at_risk', 'summary': 's'}
    results = {'pi-1': {'ansible_facts': {'postmortem': {'pi_ir_tx': dict(finding, id='pi_ir_tx')}}},
               'pi-2': {'ansible_facts': {'postmortem': {'pi_ir_tx': dict(finding, id='pi_ir_tx')}}},
               'gpu1': {'ansible_facts': {'postmortem': {'llama_sleep_race': dict(finding, id='llama_sleep_race')}}}}
    built = report.build(['pi-1', 'pi-2', 'gpu1'], results, [('pi_ir_tx', 'IR'), ('llama_sleep_race', 'sleep')], '0.2.0')
    built['accept'] = accepted.apply(built, entries, datetime.date(2026, 12, 1))
    assert built['accept']['expired_entries'] == [
        {'number': 1, 'host': 'pi-*', 'check': 'pi_ir_tx', 'expires': '2026-11-01', 'findings': 2},
        {'number': 2, 'host': 'gpu1', 'check': 'llama_sleep_race', 'expires': '2026-11-15', 'findings': 1}]
    assert report_summary.accept_lines(built) == [
        'Accepted (postmortem_accept): 0 finding(s); 3 expired, counting again.',
        '  expired: #1 pi-*/pi_ir_tx (since 2026-11-01), #2 gpu1/llama_sleep_race (since 2026-11-15)']
