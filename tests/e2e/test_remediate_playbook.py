"""homelab.postmortem.remediate through the real ansible-playbook: audit, the roles a host's findings
call for (a batch at a time), audit again, a before/after report.

The host that needs a fix is an SD card image (a directory with a Raspberry Pi OS boot partition
and kernel modules): the pi_ir_tx role really edits its config.txt. This machine is audited beside
it and needs nothing. Check mode first (nothing written), then for real, then again (nothing left).
"""
import os
import sys

import pytest

from conftest import podman
from helpers import REPO_ROOT, local_host, pi_image, read_env_file, run_audit

sys.path.insert(0, os.path.join(REPO_ROOT, 'tests'))

import check_mode_wording  # noqa: E402  pylint: disable=wrong-import-position


def remediate(tmp_path, inventory, args=(), env=None):
    run = run_audit(tmp_path, inventory, {'postmortem_checks': ['pi_ir_tx', 'llama_sleep_race'],
                                          'postmortem_remediate': ['pi_ir_tx'], 'postmortem_serial': 1},
                    args=args, timeout=600, playbook='homelab.postmortem.remediate', env=env)
    assert run.proc.returncode == 0, run.output
    return run


def check_messages_env(path):
    """The environment that makes ansible-playbook record its check-mode messages into ``path``."""
    return {'ANSIBLE_CALLBACK_PLUGINS': os.path.join(REPO_ROOT, 'tests', 'callback_plugins'),
            'ANSIBLE_CALLBACKS_ENABLED': 'check_mode_messages', 'POSTMORTEM_CHECK_MESSAGES': str(path)}


def test_check_mode_then_fix_then_nothing_left(tmp_path):
    root = pi_image(tmp_path)
    config = root / 'boot' / 'firmware' / 'config.txt'
    before = config.read_text()
    inventory = {'all': {'hosts': {'localhost': local_host(),
                                   'pi-image': local_host(postmortem_root=str(root))}}}

    messages = tmp_path / 'check-messages.jsonl'
    checked = remediate(tmp_path / 'check', inventory, args=['--check', '--diff'], env=check_messages_env(messages))
    assert config.read_text() == before
    # Check mode says "would": no message of the role, its fix module or the plan claims a change (#35).
    recorded = check_mode_wording.read(str(messages))
    assert any(item.get('role') == 'pi_ir_tx' for item in recorded), recorded
    assert check_mode_wording.offending(recorded) == []
    assert '+dtoverlay=gpio-ir-tx,gpio_pin=17' in checked.output  # the exact diff
    assert checked.host('pi-image')['before']['pi_ir_tx'] == 'at_risk'
    assert checked.finding('pi-image', 'pi_ir_tx')['status'] == 'at_risk'
    # A check run says so: nothing was changed, and what a real run would fix, from each finding's outcome (#44).
    assert 'Remediation (CHECK MODE: nothing was changed):\n  a run without --check would fix 1; 0 need a change by hand' in checked.output
    assert checked.host('pi-image')['remediation']['outcomes'] == {
        'pi_ir_tx': {'outcome': 'would_fix', 'why': 'the diff above is what a run without --check writes'}}
    assert checked.report['run']['check_mode'] is True

    done = remediate(tmp_path / 'real', inventory)
    assert 'dtoverlay=gpio-ir-tx,gpio_pin=17' in config.read_text()
    assert list((root / 'boot' / 'firmware').glob('config.txt.*'))  # the backup
    assert done.finding('pi-image', 'pi_ir_tx')['status'] == 'ok'
    assert 'Remediation: 1 fixed; 0 need a change by hand' in done.output
    assert '  audit before -> after: 1 closed, 0 still open or not measured, 0 new' in done.output
    assert 'pi-image: pi_ir_tx at_risk -> ok' in done.output
    assert done.host('pi-image')['remediation']['outcomes']['pi_ir_tx']['outcome'] == 'fixed'
    # This machine needed nothing: the role was included for the image only.
    included = [line for line in done.output.splitlines() if 'remediation_role.yml for' in line]
    assert included and all(' for pi-image =>' in line for line in included), included
    assert done.host('pi-image')['remediation']['roles'] == [
        {'role': 'homelab.postmortem.pi_ir_tx', 'checks': ['pi_ir_tx'], 'result': 'ran',
         'switch': 'pi_ir_tx_reboot is off: the disruption it allows (a restart or reboot the fix needs) is left to you'}]
    assert done.host('localhost')['remediation']['state'] == 'nothing_to_run'

    again = remediate(tmp_path / 'again', inventory)
    assert 'Remediation: 0 fixed; 0 need a change by hand' in again.output
    assert 'changed=0' in again.output.split('PLAY RECAP')[1].split('pi-image')[1].splitlines()[0]


def test_a_detection_not_selected_is_not_fixed(tmp_path):
    root = pi_image(tmp_path)
    config = root / 'boot' / 'firmware' / 'config.txt'
    before = config.read_text()
    inventory = {'all': {'hosts': {'pi-image': local_host(postmortem_root=str(root))}}}
    run = run_audit(tmp_path, inventory, {'postmortem_checks': ['pi_ir_tx'], 'postmortem_remediate': ['llama_sleep_race']},
                    timeout=600, playbook='homelab.postmortem.remediate')
    assert run.proc.returncode == 0, run.output
    assert config.read_text() == before
    assert 'Remediation: 0 fixed; 0 need a change by hand; 1 not run' in run.output
    assert '  not run: pi-image/pi_ir_tx: not in postmortem_remediate' in run.output


def test_the_first_failed_batch_stops_the_fixes_not_the_report(tmp_path):
    """One host per batch; the first host's role fails (a setting it cannot read), so the second
    host, in the next batch, is not touched. Both are audited again, the report says which fix
    failed and why the other was not run, and the run ends failed."""
    first, second = pi_image(tmp_path / 'one'), pi_image(tmp_path / 'two')
    untouched = (second / 'boot' / 'firmware' / 'config.txt').read_text()
    inventory = {'all': {'hosts': {
        'img-1': local_host(postmortem_root=str(first), pi_ir_tx_affected_from='not a version'),
        'img-2': local_host(postmortem_root=str(second)),
    }}}
    run = run_audit(tmp_path, inventory, {'postmortem_checks': ['pi_ir_tx'], 'postmortem_serial': 1},
                    timeout=600, playbook='homelab.postmortem.remediate')
    assert run.proc.returncode != 0, run.output
    assert 'REMEDIATION FAILED on img-1' in run.output
    assert (second / 'boot' / 'firmware' / 'config.txt').read_text() == untouched
    assert 'Remediation did not finish: img-1, img-2' in run.output
    # The after-audit and the report still ran, for both hosts.
    assert [h['name'] for h in run.report['hosts']] == ['img-1', 'img-2']
    one, two = run.host('img-1'), run.host('img-2')
    assert one['remediation']['state'] == 'failed' and 'pi_ir_tx' in one['remediation']['task'].lower() + one['remediation']['reason']
    assert two['remediation']['state'] == 'not_run'
    assert two['remediation']['reason'].startswith('not touched: the run stopped after img-1 failed')
    assert two['findings']['pi_ir_tx']['status'] == 'at_risk'
    assert 'img-1: remediation FAILED' in run.output and 'img-2: remediation not run' in run.output


# A Raspberry Pi 3 in a container (#38): its device tree says Pi 3 (no EEPROM bootloader, so no trial boot:
# raspberrypi/documentation, computers/config_txt/conditional.adoc "tryboot" is Pi 4 and 5 only), and a reboot
# simulated through the role's test hooks: a new boot id, the transmitter config.txt asks for.
PI3_FAKE_REBOOT = r'''#!/bin/sh
set -eu
driver=pwm-ir-tx
if grep -q '^dtoverlay=gpio-ir-tx' /boot/firmware/config.txt; then driver=gpio-ir-tx; fi
printf 'DRV_NAME=%s\nDEV_NAME=%s\n' "$driver" "$driver" > /srv/pi/sys/class/rc/rc0/uevent
cat /proc/sys/kernel/random/uuid > /srv/pi/boot_id
'''


@pytest.fixture
def pi3_box(tmp_path):
    image = read_env_file('podman.env').get('POSTMORTEM_DEBIAN13_IMAGE')
    if not image:
        pytest.fail('no Debian 13 image: run `make test-env` (scripts/setup-podman.sh)')
    name = 'postmortem-e2e-pi3-%d' % os.getpid()
    podman('rm', '-f', name, check=False)
    podman('run', '-d', '--name', name, '--network', 'none', image, 'sleep', 'infinity')
    try:
        script = tmp_path / 'pi-fake-reboot'
        script.write_text(PI3_FAKE_REBOOT)
        script.chmod(0o755)
        podman('cp', str(script), '%s:/usr/local/sbin/pi-fake-reboot' % name)
        podman('exec', name, 'sh', '-c', ' && '.join([
            'mkdir -p /boot/firmware /srv/pi/dt /srv/pi/sys/class/rc/rc0',
            "printf '[all]\\ndtoverlay=pwm-ir-tx,gpio_pin=17\\n' > /boot/firmware/config.txt",
            "printf 'Raspberry Pi 3 Model B Rev 1.2\\000' > /srv/pi/dt/model",
            "printf 'DRV_NAME=pwm-ir-tx\\nDEV_NAME=pwm-ir-tx\\n' > /srv/pi/sys/class/rc/rc0/uevent",
            'cat /proc/sys/kernel/random/uuid > /srv/pi/boot_id']))
        yield name
    finally:
        podman('rm', '-f', '-t', '2', name, check=False)


def test_a_pi_3_says_in_the_report_that_it_has_no_trial_boot(tmp_path, pi3_box):
    """pi_ir_tx with reboots allowed on a Pi 3: the role takes the direct path, and the note saying so (which
    only its own task output carried before #38) reaches postmortem-remediate.json and the summary, in check
    mode in the conditional, then for real."""
    inventory = {'all': {'hosts': {'pi3': {
        'ansible_connection': 'containers.podman.podman', 'ansible_host': pi3_box, 'ansible_python_interpreter': '/usr/bin/python3',
        'pi_ir_tx_reboot': True, 'pi_ir_tx_reboot_timeout': 60, 'pi_ir_tx_reboot_command': '/usr/local/sbin/pi-fake-reboot',
        'pi_ir_tx_boot_time_command': 'cat /srv/pi/boot_id', 'pi_ir_tx_device_tree': '/srv/pi/dt',
        'pi_ir_tx_sysfs': '/srv/pi/sys'}}}}
    no_trial = 'board pi3: the trial boot is used on Raspberry Pi 4 and 5 (EEPROM bootloader) only'
    messages = tmp_path / 'check-messages.jsonl'
    checked = run_audit(tmp_path / 'check', inventory, {'postmortem_checks': ['pi_ir_tx']}, args=['--check', '--diff'],
                        timeout=600, playbook='homelab.postmortem.remediate', env=check_messages_env(messages))
    assert checked.proc.returncode == 0, checked.output
    assert check_mode_wording.offending(check_mode_wording.read(str(messages))) == []
    assert 'Check mode: would reboot and then check' in checked.output
    assert checked.host('pi3')['remediation']['notes'] == [{
        'role': 'homelab.postmortem.pi_ir_tx',
        'note': 'No trial boot, config.txt would be changed directly (check mode: nothing was written): %s; '
                'config.txt would be written directly.' % no_trial}]
    assert podman('exec', pi3_box, 'cat', '/boot/firmware/config.txt').stdout == '[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n'

    done = run_audit(tmp_path / 'real', inventory, {'postmortem_checks': ['pi_ir_tx']}, timeout=600,
                     playbook='homelab.postmortem.remediate')
    assert done.proc.returncode == 0, done.output
    assert podman('exec', pi3_box, 'cat', '/boot/firmware/config.txt').stdout == '[all]\ndtoverlay=gpio-ir-tx,gpio_pin=17\n'
    note = 'No trial boot, config.txt is changed directly: %s; config.txt is written directly.' % no_trial
    record = done.host('pi3')['remediation']
    assert record['state'] == 'ran' and record['notes'] == [{'role': 'homelab.postmortem.pi_ir_tx', 'note': note}]
    assert done.host('pi3')['before']['pi_ir_tx'] == 'at_risk' and done.finding('pi3', 'pi_ir_tx')['status'] != 'at_risk'
    assert '  pi3: pi_ir_tx: No trial boot, config.txt is changed directly: board pi3' in done.output  # the summary
