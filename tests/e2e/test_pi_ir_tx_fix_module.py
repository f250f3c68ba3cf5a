"""pi_ir_tx_fix through Ansible on an SD-card image tree (a Pi's boot partition
cannot be real here; the files are): check mode with diff, the write with
backups, idempotence, and bad input that must leave the files alone."""
import hashlib

from helpers import run_module

CONFIG = b'[pi4]\r\ndtoverlay=pwm-ir-tx,gpio_pin=17,func=2\r\n[all]\r\ndtoverlay=gpio-ir,gpio_pin=23\r\n'


def image(tmp_path, config=CONFIG):
    boot = tmp_path / 'sdcard' / 'boot' / 'firmware'
    boot.mkdir(parents=True)
    (boot / 'config.txt').write_bytes(config)
    return str(tmp_path / 'sdcard'), boot


def digest(boot):
    return dict((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted(boot.iterdir()))


def test_check_diff_write_and_idempotence(tmp_path):
    root, boot = image(tmp_path)
    before = digest(boot)

    check = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root}, check=True, diff=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert '-dtoverlay=pwm-ir-tx,gpio_pin=17,func=2' in check.stdout
    assert '+dtoverlay=gpio-ir-tx,gpio_pin=17' in check.stdout
    assert 'would drop func=2' in check.stderr + check.stdout  # check mode says "would" (#35)
    assert digest(boot) == before  # check mode wrote nothing, made no backup

    write = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert write.returncode == 0 and 'CHANGED' in write.stdout, write.stdout + write.stderr
    assert 'dropped func=2' in write.stderr + write.stdout
    assert (boot / 'config.txt').read_bytes() == CONFIG.replace(b'pwm-ir-tx,gpio_pin=17,func=2', b'gpio-ir-tx,gpio_pin=17')
    backups = [p for p in boot.iterdir() if p.name.endswith('.bak')]
    assert len(backups) == 1 and backups[0].read_bytes() == CONFIG

    again = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert again.returncode == 0 and 'SUCCESS' in again.stdout and 'CHANGED' not in again.stdout


def test_bad_pin_fails_and_touches_nothing(tmp_path):
    root, boot = image(tmp_path, b'dtoverlay=pwm-ir-tx,gpio_pin=GPIO17\n')
    before = digest(boot)
    result = run_module(tmp_path, 'homelab.postmortem.pi_ir_tx_fix', {'root': root})
    assert result.returncode != 0
    assert "gpio_pin='GPIO17' is not a pin number; no file was changed" in result.stdout
    assert digest(boot) == before
