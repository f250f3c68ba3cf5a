"""The controller's verdict on declared checks (plugin_utils/declared_judge.py): statuses, instances,
evidence and summaries from a host's answers, which are untrusted data; a broken or hostile check is
an error finding for itself alone; a host that forges a declared finding is not trusted at all."""
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks, declared_judge
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import build

NOW = 1796007600.0
CHECKS = '''\
checks:
  - id: site.backup
    title: The nightly backup is fresh
    docs: https://wiki.example/backup
    advice: Look at the timer's journal.
    gather:
      - {name: backup, kind: file, path: /srv/backup.tar}
    judge:
      applies: backup.exists
      affected: backup.size == `0`
      at_risk: age(backup.mtime) > seconds('26h')
      evidence: {size: backup.size, age: duration(age(backup.mtime)), path: backup.path}
      summary:
        ok: "{path} is {size} bytes, {age} old"
        affected: "{path} is empty"
        at_risk: "{path} is {age} old"
  - id: site.units
    title: Every web unit listens
    docs: ask the web team
    gather:
      - {name: svc, kind: systemd, units: [a.service, b.service], properties: [ActiveState]}
      - {name: sock, kind: listening}
    judge:
      instances: svc.units
      name: item.unit
      affected: item.ActiveState == 'active' && !contains(sock.ports, `8080`)
      at_risk: item.ActiveState != 'active'
      evidence: {state: item.ActiveState}
      summary: "{name} is {state}"
'''


@pytest.fixture(name='checks')
def _checks(tmp_path):
    (tmp_path / 'c.yml').write_text(CHECKS)
    return declared_checks.load(str(tmp_path / 'c.yml'), registry.BY_ID, registry.GROUPS)


def _answer(checks, check_id, answers, now=NOW):
    return {'digest': checks.by_id[check_id].digest, 'now': now, 'answers': answers}


def _backup(exists=True, size=100, age=3600, path='/srv/backup.tar'):
    return {'backup': {'path': path, 'exists': exists, 'size': size, 'mtime': NOW - age, 'error': None}}


def _units(states, ports):
    return {'svc': {'available': True, 'units': [{'unit': u, 'ActiveState': s} for u, s in states], 'error': None},
            'sock': {'sockets': [], 'ports': ports, 'count': len(ports), 'error': None}}


def _judge(checks, check_id, answers, **kwargs):
    return declared_judge.judge_check(checks.by_id[check_id], _answer(checks, check_id, answers, **kwargs), 'h1')


@pytest.mark.parametrize('backup, status, summary', [
    (_backup(), 'ok', '/srv/backup.tar is 100 bytes, 1h old'),
    (_backup(size=0), 'affected', '/srv/backup.tar is empty'),
    (_backup(age=27 * 3600), 'at_risk', '/srv/backup.tar is 1d 3h old'),
    (_backup(exists=False, size=None), 'not_applicable',
     'The nightly backup is fresh: does not apply on this host (judge.applies is false).'),
])
def test_statuses_and_summaries(checks, backup, status, summary):
    finding = _judge(checks, 'site.backup', backup)
    assert (finding['status'], finding['summary']) == (status, summary)
    assert finding['remediation'] == {'role': None, 'vars': {}, 'module': None, 'disruption': 'none',
                                      'manual': ["Look at the timer's journal.", 'Docs: https://wiki.example/backup']}
    assert finding['references'] == ['https://wiki.example/backup'] and finding['id'] == 'site.backup'
    if status != 'not_applicable':
        assert finding['evidence']['size'] == backup['backup']['size']
        assert finding['evidence']['declared_in'].endswith('c.yml:2')


def test_instances_roll_up_to_the_worst(checks):
    finding = _judge(checks, 'site.units', _units([('a.service', 'active'), ('b.service', 'failed')], [22]))
    assert finding['status'] == 'affected'
    assert [(i['name'], i['status'], i['summary']) for i in finding['evidence']['instances']] == [
        ('a.service', 'affected', 'a.service is active'), ('b.service', 'at_risk', 'b.service is failed')]
    assert finding['summary'] == '2 instance(s) of site.units: 1 affected, 1 at_risk. a.service is active'
    ok = _judge(checks, 'site.units', _units([('a.service', 'active')], [8080]))
    assert (ok['status'], ok['summary']) == ('ok', 'a.service is active')
    nothing = _judge(checks, 'site.units', _units([], [8080]))
    assert nothing['status'] == 'not_applicable'


def test_a_hosts_braces_stay_text(checks):
    """The template is filled by our own code, once: a host's {{ }} or {size} is never evaluated."""
    finding = _judge(checks, 'site.backup', _backup(size=0, path="/srv/{{ lookup('pipe', 'id') }}/{size}"))
    assert finding['summary'] == "/srv/{{ lookup('pipe', 'id') }}/{size} is empty"


def test_a_condition_that_is_not_true_or_false_is_an_error(checks):
    # The size is missing on this host: backup.size == `0` is false, but age() of null is null.
    answers = _backup()
    answers['backup']['mtime'] = None
    finding = _judge(checks, 'site.backup', answers)
    assert finding['status'] == 'error'
    assert 'judge.at_risk gave null (a value it reads is missing' in finding['summary']


def test_a_missing_field_in_the_summary_is_an_error_not_a_guess(checks):
    answers = _backup()
    answers['backup']['path'] = None
    finding = _judge(checks, 'site.backup', answers)
    assert finding['status'] == 'error' and 'summary: {path} is null on this host' in finding['summary']


def test_what_the_host_could_not_answer_keeps_its_status_and_reason(checks):
    check = checks.by_id['site.backup']
    for status in ('error', 'unknown', 'not_applicable'):
        finding = declared_judge.judge_check(check, {'digest': check.digest, 'status': status, 'reason': 'why\nnot'}, 'h')
        assert (finding['status'], finding['summary']) == (status, 'why not')
    forged = declared_judge.judge_check(check, {'digest': check.digest, 'status': 'ok', 'reason': 'all good'}, 'h')
    assert forged['status'] == 'error' and 'not one a host may give' in forged['summary']


def test_answers_to_another_definition_are_not_judged(checks):
    answer = {'digest': 'old', 'now': NOW, 'answers': _backup()}
    finding = declared_judge.judge_check(checks.by_id['site.backup'], answer, 'h')
    assert finding['status'] == 'error' and 'changed during the run' in finding['summary']


@pytest.mark.parametrize('answers', [
    {'backup': {'size': 'x' * (3 * 1024 * 1024)}},
    {'backup': [[[[]]]] * 300000},
    'not a mapping',
])
def test_answers_too_large_or_malformed_are_that_checks_error(checks, answers):
    started = time.monotonic()
    finding = declared_judge.judge_check(checks.by_id['site.backup'],
                                         {'digest': checks.by_id['site.backup'].digest, 'now': NOW, 'answers': answers}, 'h')
    assert finding['status'] == 'error' and time.monotonic() - started < 2


def test_an_expression_that_blows_up_is_its_checks_error_alone(tmp_path):
    blowup = ' | '.join(['[@,@,@,@,@,@,@,@][]'] * 10)
    (tmp_path / 'c.yml').write_text(CHECKS.replace("instances: svc.units", "instances: svc.units | %s" % blowup))
    checks = declared_checks.load(str(tmp_path / 'c.yml'), registry.BY_ID, registry.GROUPS)
    result = {'ansible_facts': {'postmortem': {}, 'postmortem_declared': {
        'site.backup': _answer(checks, 'site.backup', _backup()),
        'site.units': _answer(checks, 'site.units', _units([('a.service', 'active')] * 50, [8080]))}}}
    started = time.monotonic()
    findings = declared_judge.judge_result(result, checks, 'h1')['ansible_facts']['postmortem']
    assert time.monotonic() - started < 5
    assert findings['site.backup']['status'] == 'ok'
    assert findings['site.units']['status'] == 'error' and 'stopped after' in findings['site.units']['summary']


def test_a_host_that_forges_a_declared_finding_is_not_trusted(checks):
    forged = {'ansible_facts': {'postmortem': {'site.backup': {'id': 'site.backup', 'status': 'ok'}},
                                'postmortem_declared': {'site.backup': _answer(checks, 'site.backup', _backup(size=0))}}}
    judged = declared_judge.judge_result(forged, checks, 'h1')
    assert judged['failed'] and 'only the controller judges' in judged['msg']
    unknown = {'ansible_facts': {'postmortem': {}, 'postmortem_declared': {'site.made_up': {}}}}
    judged = declared_judge.judge_result(unknown, checks, 'h1')
    assert judged['failed'] and "'site.made_up'" in judged['msg']


def test_judged_findings_go_through_the_report_like_built_in_ones(checks):
    results = {
        'h1': {'ansible_facts': {'postmortem': {}, 'postmortem_declared': {
            'site.backup': _answer(checks, 'site.backup', _backup(size=0))}}},
        'h2': {'unreachable': True, 'msg': 'gone'},
    }
    judged = declared_judge.judge_results(results, checks)
    report = build(['h1', 'h2'], judged, [(d.ID, d.TITLE) for d in registry.DETECTIONS] + checks.report_checks(), '0.2.0')
    assert report['hosts'][0]['findings']['site.backup']['status'] == 'affected'
    assert report['hosts'][1]['state'] == 'unreachable'
    assert [c['id'] for c in report['checks']] == ['site.backup']


@pytest.mark.parametrize('now', [float('nan'), float('inf'), float('-inf')])
def test_a_host_time_that_is_no_number_is_an_error_not_ok(checks, now):
    """#49: a lying host's now: NaN was judged ok (every age comparison false), Infinity at_risk."""
    finding = _judge(checks, 'site.backup', _backup(age=27 * 3600), now=now)
    assert finding['status'] == 'error' and 'is not a finite number' in finding['summary'], finding


@pytest.mark.parametrize('field, value', [('mtime', float('nan')), ('size', float('inf'))])
def test_a_non_finite_number_in_the_answers_is_an_error(checks, field, value):
    answers = _backup()
    answers['backup'][field] = value
    finding = _judge(checks, 'site.backup', answers)
    assert finding['status'] == 'error' and 'not finite' in finding['summary'], finding
