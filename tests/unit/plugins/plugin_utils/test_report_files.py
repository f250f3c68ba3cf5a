"""Which files a report is written to: the audit's postmortem.*, a remediation run's own
postmortem-remediate.*, and the last good audit kept before a run that audited nothing replaces it."""
import json
import os

from ansible_collections.homelab.postmortem.plugins.plugin_utils import report, report_drift, report_files, report_summary

CHECKS = [('pi_ir_tx', 'Pi IR')]
FINDING = {'id': 'pi_ir_tx', 'title': 'IR', 'status': 'at_risk', 'summary': 's', 'evidence': {}}
GOOD = {'pi1': {'ansible_facts': {'postmortem': {'pi_ir_tx': FINDING}}}}
AWAY = {'pi1': {'unreachable': True, 'msg': 'Failed to connect to the host via ssh: Connection refused'}}
FORMATS = ['json', 'junit', 'html', 'prometheus']


def write(tmp_path, built):
    kept, problems = None, []
    if built.get('nothing_audited'):
        kept, problems = report_files.keep_last_good(str(tmp_path), report_drift.report_data)
        if kept:
            built['last_good'] = kept
    paths, written = report_files.write(built, str(tmp_path), FORMATS)
    assert not problems and not written
    if not built.get('nothing_audited'):
        report_files.forget_last_good(str(tmp_path))
    return paths


def test_a_remediation_report_is_written_beside_the_audits_never_over_it(tmp_path):
    write(tmp_path, report.build(['pi1'], GOOD, CHECKS, '0.2.0'))
    before = dict((name, (tmp_path / name).read_bytes()) for name in os.listdir(str(tmp_path)))
    remediated = report.build(['pi1'], GOOD, CHECKS, '0.2.0', before=GOOD)
    paths = write(tmp_path, remediated)
    assert sorted(os.path.basename(p) for p in paths.values()) == [
        'postmortem-remediate-junit.xml', 'postmortem-remediate.html', 'postmortem-remediate.json', 'postmortem-remediate.prom']
    assert dict((name, (tmp_path / name).read_bytes()) for name in before) == before


def test_a_run_that_audited_nothing_keeps_the_last_good_report_and_a_good_one_removes_the_copy(tmp_path):
    good = report.build(['pi1'], GOOD, CHECKS, '0.2.0')
    write(tmp_path, good)
    good_json = (tmp_path / 'postmortem.json').read_bytes()
    bad = report.build(['pi1'], AWAY, CHECKS, '0.2.0')
    assert bad['nothing_audited'].startswith('none of the 1 host(s) could be audited (1 unreachable): pi1 unreachable: ')
    write(tmp_path, bad)
    assert (tmp_path / 'postmortem-last-good.json').read_bytes() == good_json
    assert bad['last_good'] == {'generated_at': good['generated_at'], 'hosts': 1, 'paths': dict(
        (fmt, str(tmp_path / name)) for fmt, name in report_files.LAST_GOOD_FILES.items())}
    assert json.loads((tmp_path / 'postmortem.json').read_text())['nothing_audited'] == bad['nothing_audited']
    lines = report_summary.summary_lines(bad, {})
    assert lines[2:4] == ['NOTHING WAS AUDITED: none of the 1 host(s) could be audited (1 unreachable).',
                          'The last good report (%s, 1 host(s)) is kept as:' % good['generated_at']]
    assert '  %s' % (tmp_path / 'postmortem-last-good.html') in lines
    assert 'Findings per check (number of hosts):' not in lines and '  pi1: unreachable (not audited)' in lines
    # A second bad night (no host matched this time) keeps the same good report: never its own.
    worse = report.build([], {}, CHECKS, '0.2.0', scope={'host_pattern': 'web*'})
    write(tmp_path, worse)
    assert (tmp_path / 'postmortem-last-good.json').read_bytes() == good_json
    assert worse['last_good']['generated_at'] == good['generated_at']
    assert 'The last good report (%s, 1 host(s)) is kept as:' % good['generated_at'] in report_summary.summary_lines(worse, {})
    write(tmp_path, report.build(['pi1'], GOOD, CHECKS, '0.2.0'))
    assert not [name for name in os.listdir(str(tmp_path)) if 'last-good' in name]


def test_nothing_is_kept_from_a_directory_without_a_good_audit(tmp_path):
    (tmp_path / 'postmortem.json').write_text('{"hosts": [{"name": "from-last-week"}]}')
    assert report_files.keep_last_good(str(tmp_path), report_drift.report_data) == (None, [])
    write(tmp_path, report.build(['pi1'], GOOD, CHECKS, '0.2.0', before=GOOD))  # a remediation run's
    assert report_files.keep_last_good(str(tmp_path), report_drift.report_data) == (None, [])
    assert report_files.keep_last_good(str(tmp_path / 'missing'), report_drift.report_data) == (None, [])
