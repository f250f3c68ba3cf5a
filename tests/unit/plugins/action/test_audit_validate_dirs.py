"""audit_validate's check of where the run will write (the report directory, the textfile directory),
made before any host is contacted: each problem names the variable, the path and the reason."""
import os

from ansible_collections.homelab.postmortem.plugins.action.audit_validate import directory_problems


def test_the_default_report_directory_is_the_working_directorys(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    assert directory_problems({}, 'audit', check_mode=True) == []
    (tmp_path / 'postmortem-report').write_text('x')
    assert directory_problems({}, 'audit', check_mode=False) == [
        'postmortem_report_dir: the report directory %s is not a directory (a file of that name exists)'
        % (tmp_path / 'postmortem-report')]


def test_the_textfile_directory_is_checked_when_set_and_only_for_the_audit(tmp_path):
    values = {'postmortem_report_dir': str(tmp_path / 'report'), 'postmortem_textfile_dir': str(tmp_path / 'textfile')}
    problem = 'postmortem_textfile_dir: the textfile directory %s does not exist' % (tmp_path / 'textfile')
    assert directory_problems(values, 'audit', check_mode=True) == [problem]
    assert directory_problems(values, 'remediate', check_mode=True) == []  # the remediation writes no textfile
    assert directory_problems(dict(values, postmortem_textfile_dir=''), 'audit', check_mode=True) == []
    (tmp_path / 'textfile').mkdir()
    assert directory_problems(values, 'audit', check_mode=False) == []


def test_check_mode_creates_nothing_and_a_real_run_leaves_nothing(tmp_path):
    values = {'postmortem_report_dir': str(tmp_path / 'a' / 'report'), 'postmortem_textfile_dir': str(tmp_path)}
    for check_mode in (True, False):
        assert directory_problems(values, 'audit', check_mode) == []
        assert os.listdir(str(tmp_path)) == []
