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
    assert 'Remediation: 0 finding(s) fixed, 7 still open, 0 new' in checked.output

    done = run_audit(tmp_path / 'real', fleet, {'postmortem_serial': 4}, args=['-f', '12'], timeout=900,
                     playbook='homelab.postmortem.remediate')
    assert done.proc.returncode == 0, done.output
    assert 'dtoverlay=gpio-ir-tx,gpio_pin=17' in config_txt('fleet-01')
    # The IR overlay is fixed on the three Pis; the llama-servers no systemd unit starts stay open (manual).
    assert 'Remediation: 3 finding(s) fixed, 4 still open, 0 new' in done.output
    assert 'not started by a system service' in done.output
    # Batches of four: the remediation play ran three times over the reachable hosts.
    assert done.output.count('PLAY [Remediate what each host needs, a batch at a time]') == 3
    assert json.loads(json.dumps(done.host('fleet-01')['before']))['pi_ir_tx'] == 'at_risk'
