"""The homelab.postmortem.summary stdout callback through the real ansible-playbook (#44): the answer
without Ansible's banners, a progress line per host, one worded line per host that could not be audited."""
import re

from helpers import free_port, local_host, run_audit

CALLBACK = {'ANSIBLE_STDOUT_CALLBACK': 'homelab.postmortem.summary'}


def test_a_one_host_audit_fits_thirty_lines(tmp_path):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, env=CALLBACK)
    assert run.proc.returncode == 0, run.output
    lines = run.proc.stdout.rstrip('\n').split('\n')
    assert len(lines) <= 30, run.proc.stdout
    assert '[1/1] localhost: ' in run.proc.stdout
    assert 'TASK [' not in run.output and 'skipping:' not in run.output and 'PLAY RECAP' not in run.output
    assert 'homelab.postmortem audit: 1 host(s), 12 check(s)' in run.proc.stdout
    assert any(line.startswith('Full report: ') for line in lines)


def test_a_fleet_gets_a_progress_line_per_host_and_a_worded_line_per_host_not_audited(tmp_path):
    """Twelve inventory hosts: ten real local connections, one whose SSH port nobody listens on
    (unreachable), one whose Python does not exist (its audit fails)."""
    hosts = dict(('host-%02d' % n, local_host()) for n in range(1, 11))
    hosts['host-11'] = {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': free_port(),
                        'ansible_ssh_common_args': '-o ConnectTimeout=3 -o BatchMode=yes'}
    hosts['host-12'] = local_host(ansible_python_interpreter='/nonexistent/python3')
    run = run_audit(tmp_path, {'all': {'hosts': hosts}}, {'postmortem_checks': ['pi_ir_tx']}, env=CALLBACK, timeout=300)
    assert run.proc.returncode == 0, run.output
    progress = [line for line in run.proc.stdout.split('\n') if re.match(r'\[\d+/12\] ', line)]
    assert sorted(int(line[1:line.index('/')]) for line in progress) == list(range(1, 13)), run.proc.stdout
    assert len([line for line in progress if 'nothing of any check found' in line]) == 10
    assert [line for line in progress if 'host-11: NOT AUDITED, unreachable: ' in line], progress
    assert [line for line in progress if 'host-12: NOT AUDITED, failed: ' in line], progress
    assert 'TASK [' not in run.output and '[ERROR]' not in run.output
