"""The audit and the remediation over real SSH on a test fleet of 12 hosts (tests/e2e/ssh_fleet.py):
containers of a locally built Debian image running sshd, each with its own filesystem, on a podman
network of their own, reached with keys generated for the run. Mixed states: three hosts hit by two
detections, one by another, clean hosts, one without Python, one unreachable.
"""
import json

import pytest

import ssh_fleet
from helpers import run_audit


@pytest.fixture(scope='module')
def fleet():
    inventory = ssh_fleet.up()
    yield inventory
    ssh_fleet.down()


def config_txt(host):
    return ssh_fleet.podman('exec', host, 'cat', '/boot/firmware/config.txt').stdout


def test_audit_over_ssh_tells_the_hosts_apart(tmp_path, fleet):
    run = run_audit(tmp_path, fleet, {}, args=['-f', '12'], timeout=600)
    assert run.proc.returncode == 0, run.output
    status = dict((h['name'], h['state'] if h['state'] != 'audited' else
                   sorted(c for c, f in h['findings'].items() if f['status'] == 'at_risk')) for h in run.report['hosts'])
    for host in ('fleet-01', 'fleet-02', 'fleet-03'):
        assert status[host] == ['llama_lora_cache', 'pi_ir_tx'], status
    assert status['fleet-04'] == ['llama_sleep_race']
    assert all(status['fleet-%02d' % i] == [] for i in range(5, 11)), status
    assert status['fleet-11'] == 'failed' and status['fleet-12'] == 'unreachable'
    assert "The module interpreter '/usr/bin/python3' was not found" in run.host('fleet-11')['reason']
    # One module execution per host: the audit is one task.
    assert run.output.count('TASK [Run the detections in one round trip]') == 1


def test_remediate_over_ssh_check_mode_then_batches(tmp_path, fleet):
    before = config_txt('fleet-01')
    checked = run_audit(tmp_path / 'check', fleet, {'postmortem_serial': 4}, args=['--check', '--diff', '-f', '12'],
                        timeout=900, playbook='homelab.postmortem.remediate')
    assert checked.proc.returncode == 0, checked.output
    assert config_txt('fleet-01') == before
    assert 'Remediation (CHECK MODE: nothing was changed):\n  a run without --check would fix 3; 4 need a change by hand' in checked.output

    done = run_audit(tmp_path / 'real', fleet, {'postmortem_serial': 4}, args=['-f', '12'], timeout=900,
                     playbook='homelab.postmortem.remediate')
    assert done.proc.returncode == 0, done.output
    assert 'dtoverlay=gpio-ir-tx,gpio_pin=17' in config_txt('fleet-01')
    # The IR overlay is fixed on the three Pis; the llama-servers no systemd unit starts stay open (manual).
    assert 'Remediation: 3 fixed; 4 need a change by hand' in done.output
    assert 'not started by a system service' in done.output
    # Batches of four: the remediation play ran three times over the reachable hosts.
    assert done.output.count('PLAY [Remediate what each host needs, a batch at a time]') == 3
    assert json.loads(json.dumps(done.host('fleet-01')['before']))['pi_ir_tx'] == 'at_risk'


def reset_pis(fleet):
    for host in ('fleet-01', 'fleet-02', 'fleet-03'):
        ssh_fleet.podman('exec', host, 'sh', '-c', ssh_fleet.WRITE_PI_CONFIG)


def test_faults_a_read_only_filesystem_and_a_host_that_times_out(tmp_path, fleet):
    """fleet-02's boot partition is really read-only (a read-only bind mount, found before any write); fleet-05 freezes
    (podman pause) when the remediation starts, after the audit saw it: its sshd never answers
    again, over the connection Ansible keeps open (then only postmortem_task_timeout ends the wait)
    or a new one (ssh's timeout). One host per batch: fleet-01 is fixed, fleet-02's fix fails and
    changes nothing, fleet-03 (next batch) is not touched; every host is audited again and the
    report says what happened to each."""
    reset_pis(fleet)
    listed = ssh_fleet.podman('exec', 'fleet-02', 'ls', '-A', '/boot/firmware').stdout.split()
    ssh_fleet.podman('exec', '--privileged', 'fleet-02', 'sh', '-c',
                     'mount --bind /boot/firmware /boot/firmware && mount -o remount,bind,ro /boot/firmware')
    try:
        run = run_audit(tmp_path, fleet, {'postmortem_serial': 1, 'postmortem_task_timeout': 60}, args=['-f', '12'],
                        timeout=900, playbook='homelab.postmortem.remediate',
                        on_line=lambda line: 'PLAY [Remediate what each host needs' in line and ssh_fleet.podman(
                            'pause', 'fleet-05', check=False))
    finally:
        ssh_fleet.podman('unpause', 'fleet-05', check=False)
        ssh_fleet.podman('exec', '--privileged', 'fleet-02', 'umount', '/boot/firmware', check=False)
    assert run.proc.returncode != 0, run.output
    assert 'gpio-ir-tx' in config_txt('fleet-01')
    assert config_txt('fleet-02') == config_txt('fleet-03') == ssh_fleet.PI_CONFIG
    # No temporary file, no new backup: the directory is as it was.
    assert ssh_fleet.podman('exec', 'fleet-02', 'ls', '-A', '/boot/firmware').stdout.split() == listed
    failed = run.host('fleet-02')['remediation']
    # Found before anything is written (fix_protocol asks the mount of every planned file).
    assert failed['state'] == 'failed' and failed['reason'].startswith(
        'mounted read-only: /boot/firmware (/boot/firmware/config.txt). ') and failed['reason'].endswith(
        '; nothing was changed'), failed
    assert 'nothing was changed' in failed['reason']
    assert run.host('fleet-03')['remediation']['reason'].startswith('not touched: the run stopped after fleet-02 failed')
    assert run.host('fleet-03')['findings']['pi_ir_tx']['status'] == 'at_risk'
    assert run.host('fleet-01')['findings']['pi_ir_tx']['status'] == 'ok'
    timed_out = run.host('fleet-05')
    assert timed_out['before']['pi_ir_tx'] == 'not_applicable'
    assert timed_out['state'] in ('failed', 'unreachable') and 'timed out' in timed_out['reason'].lower(), timed_out
    # Everyone else was audited again.
    assert sorted(h['name'] for h in run.report['hosts'] if h['state'] == 'audited') == [
        'fleet-%02d' % i for i in range(1, 11) if i != 5]
    assert 'fleet-02: remediation FAILED' in run.output


def test_a_host_that_drops_during_the_remediation(tmp_path, fleet):
    """fleet-03 is killed (podman kill: its sshd and everything else gone, as at a power cut) as soon
    as the remediation play starts, after the audit saw it. One host per batch: fleet-01 and
    fleet-02 are fixed, fleet-03's batch finds it gone, the batches after it are not touched, and
    the audit after remediation reports fleet-03 unreachable."""
    reset_pis(fleet)
    run = run_audit(tmp_path, fleet, {'postmortem_serial': 1, 'postmortem_task_timeout': 60}, args=['-f', '12'],
                    timeout=900, playbook='homelab.postmortem.remediate',
                    on_line=lambda line: 'PLAY [Remediate what each host needs' in line and ssh_fleet.podman(
                        'kill', 'fleet-03', check=False))
    assert run.proc.returncode != 0, run.output
    assert 'gpio-ir-tx' in config_txt('fleet-01') and 'gpio-ir-tx' in config_txt('fleet-02')
    dropped = run.host('fleet-03')
    assert dropped['state'] == 'unreachable', dropped
    assert dropped['before']['pi_ir_tx'] == 'at_risk'
    assert dropped['remediation']['state'] == 'lost', dropped['remediation']
    assert dropped['remediation']['reason'].startswith('the host stopped answering: ')
    later = run.host('fleet-04')['remediation']
    assert later['state'] == 'not_run' and 'fleet-03 was lost' in later['reason'], later
    assert run.host('fleet-10')['state'] == 'audited'
    assert 'fleet-03: LOST during remediation' in run.output
