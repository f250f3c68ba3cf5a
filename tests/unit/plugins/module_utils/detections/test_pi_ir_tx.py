"""pi_ir_tx on fixture trees.

No Raspberry Pi can run here (no PWM, no LIRC hardware, and this kernel has no
pwm-ir-tx device), so the Pi's files are built from the write-up: the
config.txt line, the kernel release strings (6.18.34+rpt-rpi-v8) and the
transmitter the kernel registers (DRV_NAME=pwm-ir-tx in /sys/class/rc/rc0).
"""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.pi_ir_tx import DETECTION as pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_overlays
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi.config import BOARD_FILTERS as BOARDS

PI4 = 'Raspberry Pi 4 Model B Rev 1.4\x00'
K618 = '6.18.34+rpt-rpi-v8'
K612 = '6.12.47+rpt-rpi-v8'


def put(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(text if isinstance(text, bytes) else text.encode())


def host(tmp_path, config=None, kernels=(), running=None, model=PI4, transmitters=(), live=True,
         config_path='boot/firmware/config.txt', settings=None):
    root, sysfs = tmp_path / 'root', tmp_path / 'sys'
    root.mkdir(exist_ok=True)
    if config is not None:
        put(str(root / config_path), config)
    for kernel in kernels:
        os.makedirs(str(root / 'lib' / 'modules' / kernel), exist_ok=True)
    if model:
        put(str(sysfs / 'firmware' / 'devicetree' / 'base' / 'model'), model)
    for index, driver in enumerate(transmitters):
        put(str(sysfs / 'class' / 'rc' / ('rc%d' % index) / 'uevent'), 'DRV_NAME=%s\nDEV_NAME=IR\n' % driver)
        os.makedirs(str(sysfs / 'class' / 'rc' / ('rc%d' % index) / ('lirc%d' % index)))
    return AuditContext(root=str(root), live=live, proc_root=str(tmp_path / 'proc'), sys_root=str(sysfs),
                        kernel_release=running if live else None, settings=settings or {})


def run(ctx):
    return registry.run_one(ctx, pi_ir_tx)


def by_name(result):
    return dict((i['name'], i) for i in result['evidence']['instances'])


def test_affected_when_pwm_transmitter_runs_on_618(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [K618], K618, transmitters=['pwm-ir-tx']))
    assert result['status'] == 'affected'
    instances = by_name(result)
    assert instances['transmitter rc0 (/dev/lirc0)']['status'] == 'affected'
    line = instances['dtoverlay=pwm-ir-tx at %s:1' % result['evidence']['config']]
    assert line['status'] == 'affected'
    assert line['evidence']['pin'] == '18' and line['evidence']['applies'] == 'yes'
    assert result['evidence']['board'] == 'pi4'
    assert result['evidence']['running_kernel_affected'] is True


def test_at_risk_when_the_next_boot_kernel_is_affected(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx,gpio_pin=17\n', [K612, K618], K612, transmitters=['pwm-ir-tx']))
    assert result['status'] == 'at_risk'
    assert result['evidence']['next_boot_kernel'] == K618
    assert all(i['status'] == 'at_risk' for i in result['evidence']['instances'])
    assert '17' in result['evidence']['instances'][1]['summary']


def test_at_risk_when_configured_on_618_but_not_loaded_yet(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [K618], K618, transmitters=[]))
    assert result['status'] == 'at_risk'


def test_ok_on_gpio_ir_tx_and_receiver_lines_are_ignored(tmp_path):
    config = 'dtoverlay=gpio-ir,gpio_pin=23\ndtoverlay=gpio-ir-tx,gpio_pin=18\n'
    result = run(host(tmp_path, config, [K618], K618, transmitters=['gpio-ir-tx', 'gpio_ir_recv']))
    assert result['status'] == 'ok'
    names = [i['name'] for i in result['evidence']['instances']]
    assert not any('gpio-ir at' in n for n in names)
    assert 'gpio-ir-tx' in result['summary']


def test_ok_on_a_kernel_before_618(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [K612], K612, transmitters=['pwm-ir-tx']))
    assert result['status'] == 'ok'


def test_fixed_in_setting_narrows_the_range(tmp_path):
    settings = {'pi_ir_tx': {'fixed_in': '6.18.60'}}
    fixed = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', ['6.18.60+rpt-rpi-v8'], '6.18.60+rpt-rpi-v8',
                     transmitters=['pwm-ir-tx'], settings=settings))
    assert fixed['status'] == 'ok'
    assert fixed['evidence']['affected_kernels'] == '>= 6.18, < 6.18.60'


def test_bad_setting_is_an_error_for_this_host(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [K618], K618, settings={'pi_ir_tx': {'fixed_in': 'soon'}}))
    assert result['status'] == 'error' and 'fixed_in' in result['summary']


def test_not_applicable_without_boot_config_or_transmitter(tmp_path):
    assert run(host(tmp_path, None, [K618], K618, model=None))['status'] == 'not_applicable'


@pytest.mark.parametrize('config', [None, 'dtoverlay=pwm-ir-tx\n'])
def test_empty_device_tree_models_are_reported_as_read(tmp_path, config):
    """Both model files exist and are empty (a device tree without a model): the evidence says '',
    what was read, not None (nothing readable), before and after the first question."""
    put(str(tmp_path / 'sys' / 'firmware' / 'devicetree' / 'base' / 'model'), '')
    put(str(tmp_path / 'proc' / 'device-tree' / 'model'), '')
    result = run(host(tmp_path, config, [K618], K618, model=None))
    assert result['evidence']['board_model'] == ''


def test_not_applicable_when_the_line_is_for_another_board(tmp_path):
    result = run(host(tmp_path, '[pi5]\ndtoverlay=pwm-ir-tx\n[all]\n', [K618], K618))
    assert result['status'] == 'not_applicable'


def test_boot_config_fallback_location(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [K618], K618, config_path='boot/config.txt'))
    assert result['status'] == 'at_risk' and result['evidence']['config'].endswith('/boot/config.txt')


@pytest.mark.parametrize('raw,reason', [
    (b'\x00\x01binary', 'not a text file'),
    (b'include config.txt\n', 'include loop'),
])
def test_bad_config_is_an_error_with_the_reason(tmp_path, raw, reason):
    result = run(host(tmp_path, raw, [K618], K618))
    assert result['status'] == 'error'
    assert reason in result['summary']


def test_image_audit_reads_files_only_and_names_the_boards(tmp_path):
    ctx = host(tmp_path, '[pi4]\ndtoverlay=pwm-ir-tx\n[all]\n', [K618], live=False, transmitters=['pwm-ir-tx'])
    result = run(ctx)
    assert result['status'] == 'at_risk'
    assert result['evidence']['running_kernel'] is None
    assert result['evidence']['transmitters'] == []  # sysfs belongs to the machine doing the audit
    line = result['evidence']['instances'][0]
    assert line['evidence']['boards'] == ['cm4', 'cm4s', 'pi4', 'pi400']
    assert 'on cm4, cm4s, pi4, pi400' in line['summary']


def test_unknown_without_any_kernel_to_compare(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx\n', [], live=False))
    assert result['status'] == 'unknown'


def test_config_fixed_but_not_rebooted_is_still_affected_and_says_reboot(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=gpio-ir-tx,gpio_pin=18\n', [K618], K618, transmitters=['pwm-ir-tx']))
    assert result['status'] == 'affected'
    assert 'reboot to switch to gpio-ir-tx' in result['summary']


# Card images: what the firmware reads from the boot partition (config_txt/what_is_config_txt.adoc,
# "include": "Causes the content of the specified file to be inserted into the current file";
# conditional.adoc: "[all] ... resets all previously set filters", "[none] prevents any settings that
# follow from being applied to any hardware"; configuration/device-tree.adoc part 3.1: the loader looks for
# overlays/<name>.dtbo "in the firmware partition", a FAT partition, whose names have no case).


def card(tmp_path, files, kernels=(K618,)):
    """An SD card's root: the boot partition's files under boot/firmware, kernels under lib/modules."""
    root = tmp_path / 'card'
    for name, text in files.items():
        put(str(root / 'boot' / 'firmware' / name), text)
    for kernel in kernels:
        os.makedirs(str(root / 'lib' / 'modules' / kernel), exist_ok=True)
    return AuditContext(root=str(root), live=False, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'))


def test_an_all_in_an_include_ends_the_none_open_at_it(tmp_path):
    """Was not_applicable (the include's lines carried the include line's [none]): a false ok."""
    ctx = card(tmp_path, {'config.txt': 'dtoverlay=vc4-kms-v3d\n[none]\ninclude ir.txt\n',
                          'ir.txt': '# the IR blaster\n[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n'})
    result = run(ctx)
    assert result['status'] == 'at_risk'
    line = result['evidence']['instances'][0]
    config = result['evidence']['config']
    assert line['name'] == 'dtoverlay=pwm-ir-tx at %s:3' % config.replace('config.txt', 'ir.txt')
    assert line['evidence']['included_from'] == ['%s:3' % config]
    assert line['evidence']['filters'] == [] and line['evidence']['section'] == '[all]'
    assert line['evidence']['pin'] == '17' and line['evidence']['boards'] == sorted(BOARDS)
    assert 'inserted by include at %s:3' % config in line['summary']
    # Without the [all], the [none] open at the include covers its lines: nothing loads.
    ctx = card(tmp_path, {'ir.txt': 'dtoverlay=pwm-ir-tx,gpio_pin=17\n'})
    assert run(ctx)['status'] == 'not_applicable'


def test_an_overlay_name_in_another_case_is_the_same_overlay(tmp_path):
    """Was not_applicable for dtoverlay=PWM-IR-TX: a false ok."""
    ctx = card(tmp_path, {'config.txt': 'include IR.txt\n', 'ir.txt': 'DTOVERLAY=PWM-IR-TX\n'})
    result = run(ctx)
    assert result['status'] == 'at_risk'
    line = result['evidence']['instances'][0]
    assert line['evidence']['name_as_written'] == 'PWM-IR-TX'
    assert 'the firmware loads overlays/pwm-ir-tx.dtbo from the FAT boot partition' in line['summary']
    assert any('FAT matches names without case' in n for n in result['evidence']['notes'])


def test_the_pin_is_gpio_pin_the_overlays_own_parameter(tmp_path):
    """pwm-ir-tx-overlay.dts: __overrides__ { gpio_pin = ...; func = ...; }, brcm,pins = <18>."""
    result = run(host(tmp_path, 'dtoverlay=pwm-ir-tx,gpiopin=17\ndtparam=func=2\n', [K618], K618))
    line = result['evidence']['instances'][0]
    assert result['status'] == 'at_risk'
    assert (line['evidence']['pin'], line['evidence']['pin_set_at']) == ('18', ir_overlays.PWM_PIN_DEFAULT_SOURCE)
    assert line['evidence']['not_overlay_params'] == [
        'gpiopin=17 at %s:1 (not gpio_pin: the firmware compares parameter names exactly)' % result['evidence']['config']]
    assert 'gpiopin=17 is not a parameter of pwm-ir-tx, so the pin is 18' in line['summary']
    result = run(host(tmp_path, '[pi4]\ndtoverlay=pwm-ir-tx\n[all]\ndtparam=gpio_pin=27\n', [K618], K618))
    line = result['evidence']['instances'][0]
    assert (line['evidence']['pin'], line['evidence']['pin_set_at']) == ('27', '%s:4' % result['evidence']['config'])
    assert line['evidence']['filters'] == ['[pi4] at %s:1' % result['evidence']['config']]


def test_gpio_ir_tx_without_a_pin_is_on_its_default_pin(tmp_path):
    result = run(host(tmp_path, 'dtoverlay=gpio-ir-tx\n', [K618], K618))
    line = result['evidence']['instances'][0]
    assert result['status'] == 'ok' and line['evidence']['pin'] == '18'


def test_remediation_names_the_role():
    assert pi_ir_tx.REMEDIATION['role'] == 'homelab.postmortem.pi_ir_tx'
