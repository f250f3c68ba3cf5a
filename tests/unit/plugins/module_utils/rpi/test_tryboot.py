"""rpi/tryboot.py: whether a Pi can boot tryboot.txt once, the trial files, whether this boot is a trial.

No Pi runs here: the device trees are fixtures written as the firmware writes them (each property a
file, 32-bit cells big-endian), with the properties raspberrypi/documentation names
(computers/configuration/device-tree.adoc, "Common bootloader properties /chosen/bootloader":
``tryboot`` "Set to 1 if the tryboot flag was set at boot"; "BCM2711 specific bootloader
properties": ``capabilities`` bit 3 TRYBOOT) and autoboot.txt's ``tryboot_a_b``
(computers/config_txt/autoboot.adoc)."""
import os
import struct

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import tryboot

PI4 = 'Raspberry Pi 4 Model B Rev 1.4\x00'


def device_tree(root, model=PI4, trial=0, capabilities=0xff, tryboot_property=True):
    dt = root / 'dt'
    (dt / 'chosen' / 'bootloader').mkdir(parents=True)
    (dt / 'model').write_bytes(model.encode())
    if tryboot_property:
        (dt / 'chosen' / 'bootloader' / 'tryboot').write_bytes(struct.pack('>I', trial))
    if capabilities is not None:
        (dt / 'chosen' / 'bootloader' / 'capabilities').write_bytes(struct.pack('>I', capabilities))
    return str(dt)


def test_a_pi4_whose_bootloader_reports_tryboot_can_try(tmp_path):
    assert tryboot.support(device_tree(tmp_path), str(tmp_path), 'pi4') == (True, 'board pi4, bootloader with tryboot')


@pytest.mark.parametrize('board', ['pi3', 'pi3+', 'pi0w', 'pi02', 'cm3', None])
def test_pis_without_the_eeprom_bootloader_keep_todays_path(tmp_path, board):
    supported, reason = tryboot.support(device_tree(tmp_path), str(tmp_path), board)
    assert not supported and 'Raspberry Pi 4 and 5' in reason


def test_a_bootloader_without_the_tryboot_property_or_bit_cannot(tmp_path):
    supported, reason = tryboot.support(device_tree(tmp_path, tryboot_property=False), str(tmp_path), 'pi4')
    assert not supported and 'has no tryboot property' in reason
    other = tmp_path / 'other'
    other.mkdir()
    supported, reason = tryboot.support(device_tree(other, capabilities=0x3), str(other), 'pi4')
    assert not supported and 'without the TRYBOOT bit' in reason
    pi5 = tmp_path / 'pi5'
    pi5.mkdir()
    # BCM2712: no capabilities property documented; the common tryboot property is enough.
    assert tryboot.support(device_tree(pi5, capabilities=None), str(pi5), 'pi5')[0]


def test_tryboot_a_b_is_refused(tmp_path):
    (tmp_path / 'autoboot.txt').write_text('[all]\ntryboot_a_b=1\nboot_partition=2\n[tryboot]\nboot_partition=3\n')
    supported, reason = tryboot.support(device_tree(tmp_path), str(tmp_path), 'pi4')
    assert not supported and 'tryboot_a_b=1' in reason and 'switches partitions' in reason


def test_the_trial_flag_is_read_from_the_device_tree(tmp_path):
    assert not tryboot.is_trial_boot(device_tree(tmp_path, trial=0))
    other = tmp_path / 'o'
    other.mkdir()
    assert tryboot.is_trial_boot(device_tree(other, trial=1))
    assert not tryboot.is_trial_boot(str(tmp_path / 'missing'))


def test_a_change_in_config_txt_is_tried_as_tryboot_txt(tmp_path):
    top = str(tmp_path / 'config.txt')
    (tmp_path / 'config.txt').write_text('x')
    files = tryboot.trial_files(top, {top: ('old\ninclude extra.txt\n', 'new\ninclude extra.txt\n')})
    assert files == {str(tmp_path / 'tryboot.txt'): tryboot.MARK + '\nnew\ninclude extra.txt\n'}


def test_the_trial_carries_the_include_tree(tmp_path):
    """The changed line sits two includes down: every file on the way is copied and points at the next copy;
    an unchanged include stays as it is."""
    (tmp_path / 'config.txt').write_text('[pi4]\ninclude ir.txt\n[all]\ninclude other.txt\n')
    (tmp_path / 'ir.txt').write_text('# ir\r\ninclude ir-deep.txt\r\n')
    (tmp_path / 'ir-deep.txt').write_text('dtoverlay=pwm-ir-tx\n')
    (tmp_path / 'other.txt').write_text('dtparam=audio=on\n')
    deep = str(tmp_path / 'ir-deep.txt')
    files = tryboot.trial_files(str(tmp_path / 'config.txt'), {deep: ('dtoverlay=pwm-ir-tx\n', 'dtoverlay=gpio-ir-tx,gpio_pin=18\n')})
    assert files == {
        str(tmp_path / 'tryboot.txt'): tryboot.MARK + '\n[pi4]\ninclude ir.tryboot.txt\n[all]\ninclude other.txt\n',
        str(tmp_path / 'ir.tryboot.txt'): tryboot.MARK + '\r\n# ir\r\ninclude ir-deep.tryboot.txt\r\n',
        str(tmp_path / 'ir-deep.tryboot.txt'): tryboot.MARK + '\ndtoverlay=gpio-ir-tx,gpio_pin=18\n',
    }


def test_ours_tells_our_trial_files_from_another_updaters(tmp_path):
    assert tryboot.ours(str(tmp_path / 'tryboot.txt')) is None
    (tmp_path / 'tryboot.txt').write_text(tryboot.MARK + '\nx\n')
    assert tryboot.ours(str(tmp_path / 'tryboot.txt')) is True
    (tmp_path / 'tryboot.txt').write_text('os_prefix=update/\n')
    assert tryboot.ours(str(tmp_path / 'tryboot.txt')) is False
    assert os.path.exists(str(tmp_path / 'tryboot.txt'))


def test_the_trial_follows_an_include_written_in_another_case(tmp_path):
    """The include is found as rpi/config.py finds it (the FAT boot partition opens IR.TXT as ir.txt), so
    the trial carries the change made in ir.txt."""
    (tmp_path / 'config.txt').write_text('[all]\nINCLUDE IR.TXT\n')
    (tmp_path / 'ir.txt').write_text('dtoverlay=pwm-ir-tx\n')
    ir = str(tmp_path / 'ir.txt')
    files = tryboot.trial_files(str(tmp_path / 'config.txt'), {ir: ('dtoverlay=pwm-ir-tx\n', 'dtoverlay=gpio-ir-tx,gpio_pin=18\n')})
    assert files == {
        str(tmp_path / 'tryboot.txt'): tryboot.MARK + '\n[all]\nINCLUDE ir.tryboot.txt\n',
        str(tmp_path / 'ir.tryboot.txt'): tryboot.MARK + '\ndtoverlay=gpio-ir-tx,gpio_pin=18\n',
    }
