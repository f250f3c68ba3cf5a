"""pi_ir_tx_fix against a boot partition it cannot write, made for real: a read-only mount and a file the
kernel refuses to replace.

No Raspberry Pi runs here, so the Pi is the module's own fixtures for the device tree and sysfs (as in
tests/unit/plugins/modules/test_pi_ir_tx_fix.py); the boot partition is real: in a private mount namespace
(unshare), a directory is bind-mounted read-only at /boot/firmware, exactly where Raspberry Pi OS mounts it
and where the module looks on a live host. That is what raspi-config's boot partition protection leaves
(RPi-Distro/raspi-config 9c55e7b, raspi-config l.3080-3086: enable_bootro adds ",ro" to the partition's
/etc/fstab line). The namespace ends with the module, so nothing is mounted on this machine afterwards.

What must hold: check mode shows the exact diff and says the change cannot be written; a run changes
nothing and says why, before it writes anything; a write that the kernel refuses part way puts back what
was already replaced. The kernel's answers are real (EROFS, EPERM for an immutable file), not stand-ins.
"""
import os
import shlex
import subprocess

from ..helpers.hostile import immutable, mounted, needs_root, run_as_host, snapshot, warning_texts
from ..plugins.module_utils.rpi.test_tryboot import device_tree

CONFIG = '[pi4]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n[all]\ninclude ir.txt\n'
INCLUDE = 'dtoverlay=pwm-ir-tx\n'
FIXED_CONFIG = '[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=17\n[all]\ninclude ir.txt\n'
FIXED_INCLUDE = 'dtoverlay=gpio-ir-tx,gpio_pin=18\n'
FIRMWARE = '/boot/firmware'


def boot_partition(boot):
    """The partition's files in ``boot``: config.txt and the include it names, both with a pwm-ir-tx line."""
    boot.mkdir(parents=True)
    (boot / 'config.txt').write_text(CONFIG)
    (boot / 'ir.txt').write_text(INCLUDE)
    return boot


def on_write_protected_boot(partition):
    """A command prefix: the module runs in its own mount namespace (unshare --mount makes its mounts private, so
    none reaches this machine) with ``partition`` mounted read-only at /boot/firmware (a tmpfs over /boot first,
    so that nothing is created on this machine's /boot)."""
    script = ' && '.join((
        'mount -t tmpfs -o size=64k tmpfs /boot',
        'mkdir %s' % FIRMWARE,
        'mount --bind %s %s' % (shlex.quote(str(partition)), FIRMWARE),
        'mount -o remount,bind,ro %s' % FIRMWARE,
        'exec "$@"'))
    return ['unshare', '--mount', 'sh', '-c', script, 'sh']


def live_args(tmp_path):
    device_tree(tmp_path)
    (tmp_path / 'sys').mkdir()
    return {'device_tree': str(tmp_path / 'dt'), 'sysfs': str(tmp_path / 'sys')}


@needs_root
def test_a_write_protected_boot_partition_is_said_in_check_mode_and_changes_nothing(tmp_path):
    # Debian's base-files ships /boot; the tmpfs goes over it in the private namespace only.
    assert os.path.isdir('/boot'), 'this test mounts a private tmpfs over /boot, which this machine lacks'
    unshared = subprocess.run(['unshare', '--mount', 'true'], capture_output=True, text=True, check=False)
    assert unshared.returncode == 0, 'no private mount namespace for root here: %s' % unshared.stderr.strip()
    partition = boot_partition(tmp_path / 'partition')
    before = snapshot(partition)
    args, prefix = live_args(tmp_path), on_write_protected_boot(partition)
    cannot = ('mounted read-only: /boot/firmware (/boot/firmware/config.txt, /boot/firmware/ir.txt). remount it '
              'read-write for this run (mount -o remount,rw /boot/firmware) and run again; Raspberry Pi OS '
              "write-protects it when raspi-config's boot partition protection is on (',ro' in /etc/fstab: "
              'raspi-config nonint disable_bootro and a reboot turn it off, refused while its overlay file system '
              'is on)')

    checked = run_as_host(tmp_path, 'pi_ir_tx_fix', args, check=True, prefix=prefix)
    assert not checked.get('failed') and checked['changed'], checked
    assert [(d['before_header'], d['before'], d['after']) for d in checked['diff']] == [
        ('/boot/firmware/config.txt', CONFIG, FIXED_CONFIG), ('/boot/firmware/ir.txt', INCLUDE, FIXED_INCLUDE)]
    assert checked['msg'] == ('check mode: the diff is what would change; nothing was changed; '
                              'it cannot be written now: ' + cannot)
    assert warning_texts(checked) == ['the change cannot be written now: ' + cannot]

    result = run_as_host(tmp_path, 'pi_ir_tx_fix', args, prefix=prefix)
    assert result['failed'] and result['msg'] == cannot + '; nothing was changed', result
    assert not result['changed'] and not result['rolled_back'] and not result['verified'] and result['backups'] == []
    assert result['diff'] == checked['diff'] and result['files'] == checked['files']
    assert snapshot(partition) == before


@needs_root
def test_a_read_only_sd_card_image_says_so_without_the_raspberry_pi_os_hint(tmp_path):
    """An image mounted read-only under O(root): the generic hint only (raspi-config is not what mounted it)."""
    partition = boot_partition(tmp_path / 'partition')
    before = snapshot(partition)
    with mounted(str(tmp_path / 'image' / 'boot' / 'firmware'), 'readonly', str(partition)) as firmware:
        result = run_as_host(tmp_path, 'pi_ir_tx_fix', {'root': str(tmp_path / 'image'), 'board': 'pi4'})
    assert result['failed'] and not result['changed'] and not result['rolled_back'], result
    assert result['msg'] == ('mounted read-only: %s (%s/config.txt, %s/ir.txt). remount it read-write for this run '
                             '(mount -o remount,rw %s) and run again; nothing was changed'
                             % (firmware, firmware, firmware, firmware))
    assert snapshot(partition) == before


@needs_root
def test_an_include_the_kernel_will_not_replace_puts_config_txt_back(tmp_path):
    """ir.txt is immutable (chattr +i: the directory stays writable, so nothing can tell beforehand): config.txt,
    replaced first, is written back from the text read before, and the task says so."""
    partition = boot_partition(tmp_path / 'image' / 'boot' / 'firmware')
    config, include = partition / 'config.txt', partition / 'ir.txt'
    with immutable(include):
        result = run_as_host(tmp_path, 'pi_ir_tx_fix', {'root': str(tmp_path / 'image'), 'board': 'pi4'})
        left = sorted(os.listdir(str(partition)))
    assert result['failed'] and result['msg'].startswith('could not replace %s: Operation not permitted' % include)
    assert result['restored'] == [str(config)] and result['not_restored'] == []
    assert result['rolled_back'] is True and result['changed'] is False and not result['verified'], result
    assert config.read_text() == CONFIG and include.read_text() == INCLUDE
    assert [d['before_header'] for d in result['diff']] == [str(config), str(include)]
    # The backups of the files replaced are kept and named (config.txt was changed, then put back).
    assert left == sorted(['config.txt', 'ir.txt'] + [os.path.basename(b) for b in result['backups']])
