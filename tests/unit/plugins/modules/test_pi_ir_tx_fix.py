"""pi_ir_tx_fix's trial boot steps (write with trial, verify, promote, discard), the module run in this
process on fixture trees: the boot partition, the device tree (as the firmware writes it, see
tests/unit/plugins/module_utils/rpi/test_tryboot.py) and sysfs's /class/rc (as the kernel's rc core
writes uevent: DRV_NAME). No Pi runs here; the role's trial boot runs in Molecule
(roles/pi_ir_tx/molecule/tryboot)."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import tryboot

from ..module_utils.rpi.test_tryboot import PI4, device_tree
from ...helpers.modules import run_module

CONFIG = '[pi4]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n[all]\ninclude ir.txt\n'
INCLUDE = 'dtoverlay=pwm-ir-tx\n'


@pytest.fixture
def pi(tmp_path, monkeypatch):
    """A Pi 4's boot partition, device tree and sysfs under tmp_path; config.txt found there."""
    boot = tmp_path / 'boot'
    boot.mkdir()
    (boot / 'config.txt').write_text(CONFIG)
    (boot / 'ir.txt').write_text(INCLUDE)
    monkeypatch.setattr(pi_ir_tx, 'CONFIG_CANDIDATES', (str(boot / 'config.txt'),))
    return tmp_path


def args(tmp_path, **extra):
    base = {'device_tree': str(tmp_path / 'dt'), 'sysfs': str(tmp_path / 'sys')}
    base.update(extra)
    return base


def registered(tmp_path, driver):
    rc = tmp_path / 'sys' / 'class' / 'rc' / 'rc0'
    rc.mkdir(parents=True, exist_ok=True)
    (rc / 'uevent').write_text('DRV_NAME=%s\nDEV_NAME=%s\n' % (driver, driver))


def boot_files(tmp_path):
    return dict((p.name, p.read_text()) for p in sorted((tmp_path / 'boot').iterdir()))


def test_trial_auto_on_a_pi4_writes_the_trial_files_and_leaves_config_txt(pi):
    device_tree(pi)
    checked = run_module('pi_ir_tx_fix', args(pi, trial='auto'), check_mode=True)
    assert checked['changed'] and checked['trial'] and boot_files(pi) == {'config.txt': CONFIG, 'ir.txt': INCLUDE}
    result = run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    assert result['trial'] and result['reboot_required'] and result['trial_reason'] == 'board pi4, bootloader with tryboot'
    files = boot_files(pi)
    assert files['config.txt'] == CONFIG and files['ir.txt'] == INCLUDE
    assert files['tryboot.txt'] == tryboot.MARK + '\n[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=17\n[all]\ninclude ir.tryboot.txt\n'
    assert files['ir.tryboot.txt'] == tryboot.MARK + '\ndtoverlay=gpio-ir-tx,gpio_pin=18\n'
    again = run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    assert not again['changed'] and again['trial']


def test_promote_on_the_trial_boot_writes_config_txt_and_removes_the_trial(pi):
    device_tree(pi)
    run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    not_yet = run_module('pi_ir_tx_fix', args(pi, step='promote'))
    assert not_yet['failed'] and 'this boot is not a trial boot' in not_yet['msg']
    assert 'no gpio-ir-tx transmitter is registered on the trial boot' in not_yet['problems']
    (pi / 'dt' / 'chosen' / 'bootloader' / 'tryboot').write_bytes(b'\x00\x00\x00\x01')
    registered(pi, 'gpio-ir-tx')
    verified = run_module('pi_ir_tx_fix', args(pi, step='verify'))
    assert verified['problems'] == [] and verified['trial_boot'] and not verified['changed']
    promoted = run_module('pi_ir_tx_fix', args(pi, step='promote'))
    assert promoted['changed'] and len(promoted['backups']) == 2, promoted
    files = boot_files(pi)
    assert files['config.txt'] == CONFIG.replace('pwm-ir-tx,gpio_pin=17', 'gpio-ir-tx,gpio_pin=17')
    assert files['ir.txt'] == 'dtoverlay=gpio-ir-tx,gpio_pin=18\n'
    assert 'tryboot.txt' not in files and 'ir.tryboot.txt' not in files


def test_a_trial_boot_still_on_pwm_ir_tx_is_not_promoted_and_discard_removes_the_trial(pi):
    device_tree(pi, trial=1)
    run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    registered(pi, 'pwm-ir-tx')
    refused = run_module('pi_ir_tx_fix', args(pi, step='promote'))
    assert refused['failed'] and refused['msg'].startswith('not promoted, nothing was changed: ')
    assert 'a pwm-ir-tx transmitter is registered on the trial boot' in refused['msg']
    assert boot_files(pi)['config.txt'] == CONFIG
    discarded = run_module('pi_ir_tx_fix', args(pi, step='discard'))
    assert discarded['changed'] and sorted(os.path.basename(p) for p in discarded['trial_files']) == ['ir.tryboot.txt', 'tryboot.txt']
    assert boot_files(pi) == {'config.txt': CONFIG, 'ir.txt': INCLUDE}


def test_a_pi3_keeps_todays_path_unless_the_trial_is_required(pi):
    device_tree(pi, model='Raspberry Pi 3 Model B Plus Rev 1.3\x00')
    (pi / 'boot' / 'config.txt').write_text(CONFIG.replace('[pi4]', '[all]'))
    always = run_module('pi_ir_tx_fix', args(pi, trial='always'))
    assert always['failed'] and 'no trial boot on this host (trial: always), nothing was changed: board pi3' in always['msg']
    assert 'tryboot.txt' not in boot_files(pi) and boot_files(pi)['ir.txt'] == INCLUDE
    checked = run_module('pi_ir_tx_fix', args(pi, trial='auto'), check_mode=True)
    assert checked['trial_reason'].endswith('(EEPROM bootloader) only; config.txt would be written directly')  # #35
    assert boot_files(pi)['config.txt'] == CONFIG.replace('[pi4]', '[all]')
    auto = run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    assert auto['changed'] and not auto['trial'] and auto['reboot_required']
    assert auto['trial_reason'].endswith('(EEPROM bootloader) only; config.txt is written directly')
    assert 'gpio-ir-tx' in boot_files(pi)['config.txt']


def test_another_updaters_tryboot_txt_is_never_overwritten(pi):
    device_tree(pi)
    (pi / 'boot' / 'tryboot.txt').write_text('os_prefix=update/\n')
    result = run_module('pi_ir_tx_fix', args(pi, trial='auto'))
    assert result['failed'] and 'was not written by this fix' in result['msg']
    assert boot_files(pi)['tryboot.txt'] == 'os_prefix=update/\n' and 'ir.tryboot.txt' not in boot_files(pi)
    assert run_module('pi_ir_tx_fix', args(pi, step='discard'))['changed'] is False


def test_tryboot_a_b_refuses_the_trial(pi):
    device_tree(pi)
    (pi / 'boot' / 'autoboot.txt').write_text('tryboot_a_b=1\nboot_partition=2\n')
    result = run_module('pi_ir_tx_fix', args(pi, trial='always'))
    assert result['failed'] and 'tryboot_a_b=1' in result['msg'] and boot_files(pi)['config.txt'] == CONFIG


def test_pi4_model_is_read_from_the_device_tree(pi):
    device_tree(pi, model=PI4)
    result = run_module('pi_ir_tx_fix', args(pi, trial='never'))
    assert result['replacements'][0]['section'] == '[pi4]' and not result['trial']


@pytest.mark.parametrize('make_unable', ['no_tryboot_property', 'tryboot_a_b'])
def test_auto_on_a_pi4_that_cannot_trial_boot_fails_and_changes_nothing(pi, make_unable):
    """#45: docs/pi_ir_tx.md said a Pi 4/5 that cannot trial-boot "fails under auto"; the code wrote config.txt
    directly, so the next normal boot ran an untested config on the very board that should have tried it.
    Now auto refuses there (never still writes directly), and a Pi 3 keeps the direct path (the test above)."""
    device_tree(pi)
    if make_unable == 'no_tryboot_property':
        os.remove(str(pi / 'dt' / 'chosen' / 'bootloader' / 'tryboot'))
    else:
        (pi / 'boot' / 'autoboot.txt').write_text('tryboot_a_b=1\nboot_partition=2\n')
    before = boot_files(pi)
    for check_mode in (True, False):
        result = run_module('pi_ir_tx_fix', args(pi, trial='auto'), check_mode=check_mode)
        assert result['failed'] and 'no trial boot on this pi4 (trial: auto), nothing was changed' in result['msg'], result
        assert 'set the trial to never' in result['msg']
        assert boot_files(pi) == before
    direct = run_module('pi_ir_tx_fix', args(pi, trial='never'))
    assert direct['changed'] and not direct['trial'] and 'gpio-ir-tx' in boot_files(pi)['config.txt']
