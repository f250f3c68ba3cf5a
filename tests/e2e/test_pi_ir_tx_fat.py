"""The Pi fix on a real FAT boot partition: Raspberry Pi OS's /boot/firmware is FAT.

A FAT filesystem image made by mkfs.vfat (dosfstools) is mounted with Debian's fusefat (the
kernel here has no vfat module) at <image root>/boot/firmware. FAT refuses ':' in names and has
no owners or permission bits: fusefat answers chmod/chown with ENOSYS, and shutil.copy2 fails in
copystat after writing its data. The Pi's kernel and IR hardware cannot run here; the files and
the filesystem are real. The role runs through ansible-playbook in check mode, then for real,
then again (idempotence); pi_ir_tx_fix is run directly too.
"""
import hashlib
import json
import os
import shutil
import subprocess
import time

import pytest

from helpers import VENV_BIN, ansible_env, run_module

CONFIG = b'[pi4]\r\ndtoverlay=pwm-ir-tx,gpio_pin=17,func=2\r\n[all]\r\ndtoverlay=gpio-ir,gpio_pin=23\r\n'
FIXED = CONFIG.replace(b'pwm-ir-tx,gpio_pin=17,func=2', b'gpio-ir-tx,gpio_pin=17')

pytestmark = pytest.mark.needs_root('fusefat mounts through /dev/fuse, which is root only here')


@pytest.fixture
def fat_image(tmp_path):
    """An image root whose boot/firmware is a real FAT16 filesystem holding config.txt."""
    for tool in ('mkfs.vfat', 'fusefat', 'fusermount'):
        if shutil.which(tool) is None:
            pytest.fail('%s is missing: make test-env installs dosfstools and fusefat (scripts/setup-system.sh)' % tool)
    root = tmp_path / 'sdcard'
    boot = root / 'boot' / 'firmware'
    boot.mkdir(parents=True)
    # The image's next-boot kernel is in the affected range, so the detection says at_risk.
    (root / 'lib' / 'modules' / '6.18.3+rpt-rpi-v8').mkdir(parents=True)
    image = tmp_path / 'boot.img'
    with open(str(image), 'wb') as handle:
        handle.truncate(32 * 1024 * 1024)
    subprocess.run(['mkfs.vfat', '-n', 'BOOTFS', str(image)], check=True, capture_output=True, timeout=60)
    subprocess.run(['fusefat', '-o', 'rw+', str(image), str(boot)], check=True, capture_output=True, timeout=60)
    try:
        assert _fs_type(str(boot)) == 'fuse.fusefat'
        (boot / 'config.txt').write_bytes(CONFIG)
        yield str(root), boot
    finally:
        for _attempt in range(20):
            if subprocess.run(['fusermount', '-u', str(boot)], capture_output=True, timeout=30, check=False).returncode == 0:
                break
            time.sleep(0.25)
        else:
            subprocess.run(['umount', '-l', str(boot)], capture_output=True, timeout=30, check=False)


def _fs_type(path):
    with open('/proc/self/mountinfo') as handle:
        for line in handle:
            fields = line.split(' ')
            if fields[4] == path:
                return line.split(' - ', 1)[1].split(' ')[0]
    return None


def digest(boot):
    return dict((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted(boot.iterdir()) if p.is_file())


def test_fusefat_refuses_what_ansible_backups_need(fat_image):
    """The filesystem really behaves as a Pi's FAT partition: the reasons the old code failed."""
    _root, boot = fat_image
    with pytest.raises(OSError):
        (boot / 'config.txt.1.2026-12-01@13:00:00~').write_bytes(b'x')
    with pytest.raises(OSError):
        os.chmod(str(boot / 'config.txt'), 0o644)


def test_fix_module_on_fat_check_write_idempotence(fat_image, tmp_path):
    root, boot = fat_image
    before = digest(boot)
    check = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root}, check=True, diff=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert '+dtoverlay=gpio-ir-tx,gpio_pin=17' in check.stdout
    assert digest(boot) == before

    write = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert write.returncode == 0 and 'CHANGED' in write.stdout, write.stdout + write.stderr
    assert (boot / 'config.txt').read_bytes() == FIXED
    names = sorted(p.name for p in boot.iterdir())
    backups = [n for n in names if n.startswith('config.txt.') and n.endswith('.bak')]
    assert len(backups) == 1 and (boot / backups[0]).read_bytes() == CONFIG, names
    assert not [n for n in names if n.endswith('.tmp')], names

    again = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert again.returncode == 0 and 'CHANGED' not in again.stdout, again.stdout + again.stderr


def _role_play(tmp_path, root, check):
    playbook = tmp_path / 'pi.yml'
    playbook.write_text(json.dumps([{
        'name': 'Fix the IR transmitter on an SD card image with a FAT boot partition',
        'hosts': 'localhost', 'gather_facts': False,
        'roles': [{'role': 'homelab.postmortem.pi_ir_tx', 'vars': {'pi_ir_tx_root': root}}],
    }]))
    cmd = [os.path.join(VENV_BIN, 'ansible-playbook'), str(playbook), '-i', 'localhost,', '-c', 'local',
           '-e', 'ansible_python_interpreter=%s' % os.path.join(VENV_BIN, 'python')] + (['--check', '--diff'] if check else [])
    return subprocess.run(cmd, env=ansible_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)


def recap(output):
    line = [x for x in output.splitlines() if x.startswith('localhost') and 'ok=' in x][-1]
    return dict(part.split('=') for part in line.split(':', 1)[1].split())


def test_role_on_fat_check_converge_idempotence(fat_image, tmp_path):
    root, boot = fat_image
    before = digest(boot)
    check = _role_play(tmp_path, root, check=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert '+dtoverlay=gpio-ir-tx,gpio_pin=17' in check.stdout
    assert digest(boot) == before, 'check mode wrote to the FAT partition'

    converge = _role_play(tmp_path, root, check=False)
    assert converge.returncode == 0, converge.stdout + converge.stderr
    assert recap(converge.stdout)['changed'] == '1' and recap(converge.stdout)['failed'] == '0'
    assert (boot / 'config.txt').read_bytes() == FIXED
    assert len([p for p in boot.iterdir() if p.name.endswith('.bak')]) == 1
    # An image is never rebooted: the role says when the fix takes effect instead.
    assert 'takes effect on the next Pi that boots from it' in converge.stdout
    assert 'Reboot required' not in converge.stdout and 'pi_ir_tx_reboot: true' not in converge.stdout

    again = _role_play(tmp_path, root, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert recap(again.stdout)['changed'] == '0'


def test_names_without_case_on_fat_include_inserted_detection_and_fix(fat_image, tmp_path):
    """A card whose config.txt writes the overlay and the include in other cases, and opens the include
    under a [none] that the include's [all] ends. On FAT, names have no case: the filesystem itself opens
    overlays/pwm-ir-tx.dtbo and ir.txt by the names config.txt writes (the firmware's loader looks for
    overlays/<name>.dtbo "in the firmware partition", Raspberry Pi documentation,
    configuration/device-tree.adoc part 3.1). include "Causes the content of the specified file to be
    inserted into the current file" (config_txt/what_is_config_txt.adoc), so the [all] in ir.txt ends
    the [none] (conditional.adoc: "[all] ... resets all previously set filters")."""
    root, boot = fat_image
    (boot / 'overlays').mkdir()
    (boot / 'overlays' / 'pwm-ir-tx.dtbo').write_bytes(b'\xd0\x0d\xfe\xed')
    (boot / 'config.txt').unlink()   # fusefat does not truncate a file opened with O_TRUNC: write a new one
    (boot / 'config.txt').write_bytes(b'dtparam=audio=on\r\n[none]\r\ninclude IR.TXT\r\n')
    (boot / 'ir.txt').write_bytes(b'[all]\r\nDTOVERLAY=PWM-IR-TX,gpio_pin=17,func=2\r\n')
    assert (boot / 'OVERLAYS' / 'PWM-IR-TX.dtbo').read_bytes() == b'\xd0\x0d\xfe\xed'
    assert (boot / 'IR.TXT').read_bytes().startswith(b'[all]')

    facts = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_facts', {'root': root})
    assert facts.returncode == 0, facts.stdout + facts.stderr
    finding = json.loads(facts.stdout.split('=>', 1)[1])['ansible_facts']['postmortem']['pi_ir_tx']
    assert finding['status'] == 'at_risk', finding
    line = finding['evidence']['instances'][0]['evidence']
    assert line['name_as_written'] == 'PWM-IR-TX' and line['pin'] == '17'
    assert line['included_from'] == ['%s/config.txt:3' % boot]

    write = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert write.returncode == 0 and 'CHANGED' in write.stdout, write.stdout + write.stderr
    assert (boot / 'ir.txt').read_bytes() == b'[all]\r\ndtoverlay=gpio-ir-tx,gpio_pin=17\r\n'
    assert (boot / 'config.txt').read_bytes() == b'dtparam=audio=on\r\n[none]\r\ninclude IR.TXT\r\n'
