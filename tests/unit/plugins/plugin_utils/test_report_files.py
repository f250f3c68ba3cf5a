"""Which files a report is written to: the audit's postmortem.*, a remediation run's own
postmortem-remediate.*, and the last good audit kept before a run that audited nothing replaces it."""
import json
import os
import subprocess
from contextlib import contextmanager

import pytest

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
    before = dict((name, (tmp_path / name).read_bytes()) for name in os.listdir(str(tmp_path)) if (tmp_path / name).is_file())
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


# The report directory checked before any host is contacted (audit_validate): what the writer would
# meet, said in words, and nothing created in check mode. Root passes mode bits, so "cannot write"
# is made real with a read-only mount (root is needed to mount one) or a file in the directory's place.
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason='mounting a read-only tmpfs needs root')


@contextmanager
def read_only_mount(target):
    os.makedirs(target, exist_ok=True)
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=64k', 'tmpfs', target], check=True)
    try:
        yield target
    finally:
        subprocess.run(['umount', target], check=True)


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, n), str(path)) for d, dirs, files in os.walk(str(path)) for n in dirs + files)


@pytest.mark.parametrize('probe', [False, True])
def test_a_writable_or_creatable_report_directory_passes_and_nothing_is_left(tmp_path, probe):
    (tmp_path / 'there').mkdir()
    before = tree(tmp_path)
    assert report_files.directory_problem(str(tmp_path / 'there'), created=True, probe=probe) is None
    assert report_files.directory_problem(str(tmp_path / 'a' / 'b' / 'c'), created=True, probe=probe) is None
    assert tree(tmp_path) == before  # the missing one is the writer's to create; the probe's file is gone


def test_a_missing_textfile_directory_is_refused_it_is_node_exporters_to_make(tmp_path):
    assert report_files.directory_problem(str(tmp_path / 'textfile'), created=False, probe=False) == 'does not exist'
    assert not (tmp_path / 'textfile').exists()


@pytest.mark.parametrize('probe', [False, True])
def test_a_file_in_the_way_is_named(tmp_path, probe):
    (tmp_path / 'report').write_text('x')
    assert report_files.directory_problem(str(tmp_path / 'report'), True, probe) == 'is not a directory (a file of that name exists)'
    assert report_files.directory_problem(str(tmp_path / 'report' / 'sub'), True, probe) == (
        'does not exist and cannot be created: %s is not a directory' % (tmp_path / 'report'))
    os.symlink(str(tmp_path / 'gone'), str(tmp_path / 'link'))
    assert report_files.directory_problem(str(tmp_path / 'link'), True, probe) == (
        'is a symbolic link to %s, which does not exist' % (tmp_path / 'gone'))


@needs_root
@pytest.mark.parametrize('probe', [False, True])
def test_a_read_only_filesystem_is_named_even_for_root(tmp_path, probe):
    with read_only_mount(str(tmp_path / 'ro')) as target:
        assert report_files.directory_problem(target, True, probe) == 'is on a read-only filesystem'
        assert report_files.directory_problem(os.path.join(target, 'report'), True, probe) == (
            'does not exist and cannot be created: %s, where it would be, is on a read-only filesystem' % target)
        assert os.listdir(target) == []


def test_the_writer_meets_what_the_check_said(tmp_path):
    """The check and report_files.write agree: where the check refuses, the writer cannot write."""
    built = report.build(['pi1'], GOOD, CHECKS, '0.2.0')
    (tmp_path / 'report').write_text('x')
    assert report_files.directory_problem(str(tmp_path / 'report'), True, False)
    assert report_files.write(built, str(tmp_path / 'report'), FORMATS)[1]
    assert report_files.directory_problem(str(tmp_path / 'new' / 'dir'), True, False) is None
    assert not report_files.write(built, str(tmp_path / 'new' / 'dir'), FORMATS)[1]


def test_the_report_directory_is_resolved_as_audit_reports_path_option_resolves_it(tmp_path, monkeypatch):
    """dest is type='path' (ansible-core's check_type_path: expandvars, then expanduser), made absolute
    from the working directory; textfile_dir is type='str': nothing expanded."""
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv('HOME', '/home/op')
    monkeypatch.setenv('SITE', 'lab')
    assert report_files.report_dir_path('postmortem-report') == str(tmp_path / 'postmortem-report')
    assert report_files.report_dir_path('~/r/$SITE') == '/home/op/r/lab'
    assert report_files.textfile_dir_path('~/t') == str(tmp_path / '~' / 't')


def test_the_html_reports_docs_links_open_a_rendered_page_beside_it(tmp_path):
    """#44: "Docs" was a file:// link to raw Markdown in the collection, dead on another machine. The pages
    are rendered into postmortem-docs/ beside the report and the page links there, relatively."""
    write(tmp_path, report.build(['pi1'], GOOD, CHECKS, '0.2.0'))
    page = (tmp_path / 'postmortem-docs' / 'pi_ir_tx.html').read_text()
    assert page.startswith('<!DOCTYPE html>') and '<h1>' in page and '<pre>' in page
    assert '```' not in page and '](' not in page
    html = (tmp_path / 'postmortem.html').read_text()
    assert '"docs":"postmortem-docs"' in html and 'file://' not in html
