"""audit_schedule in check mode says a run would fail, instead of "would enable and start" (#44): an
inventory file that is not on the host, and a host whose systemd is not running (this machine's test
container has no systemd as PID 1; where it has, only the inventory is named). The real role, through the
real ansible-playbook, on this machine; nothing is written."""
import json
import os
import subprocess

import pytest

from helpers import VENV_BIN, ansible_env, local_host

pytestmark = pytest.mark.needs_root('the role installs system-wide units as root (audit_schedule_scope: system)')


def test_check_mode_names_what_would_make_every_run_fail(tmp_path):
    base = tmp_path / 'schedule'
    play = [{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.include_role': {'name': 'homelab.postmortem.audit_schedule'},
         'vars': {'audit_schedule_scope': 'system', 'audit_schedule_name': 'pm-check-mode-test',
                  'audit_schedule_inventory': [str(tmp_path / 'missing-inventory.yml')],
                  'audit_schedule_install_dir': str(base / 'install'), 'audit_schedule_state_dir': str(base / 'state'),
                  'audit_schedule_report_dir': str(base / 'report'), 'audit_schedule_archive_dir': str(base / 'archive')}}]}]
    (tmp_path / 'play.json').write_text(json.dumps(play))
    (tmp_path / 'inventory.json').write_text(json.dumps({'all': {'hosts': {'localhost': local_host()}}}))
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '-i', str(tmp_path / 'inventory.json'), '--check',
                           str(tmp_path / 'play.json')], env=ansible_env(ANSIBLE_STDOUT_CALLBACK='homelab.postmortem.summary'),
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert 'Check mode: a run would fail here: audit_schedule_inventory names what is not on the host: %s' % (
        tmp_path / 'missing-inventory.yml') in output, output
    booted = os.path.isdir('/run/systemd/system')
    assert ('systemd is not running on this host' in output) is not booted, output
    assert 'Would enable and start' not in output
    assert not base.exists() and not os.path.exists('/etc/systemd/system/pm-check-mode-test.timer')
