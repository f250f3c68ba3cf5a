"""Image audits stay inside the image: symbolic links and includes resolve as the image's own
system would resolve them, and a path that leaves the image is reported, never followed.

The images are file trees built here (a Pi's SD card cannot be mounted on this machine); the
auditing machine's own files are the decoys that must never be read.
"""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.pi_ir_tx import DETECTION as pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config

K618 = '6.18.34+rpt-rpi-v8'


def put(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), 'w') as handle:
        handle.write(text)


def image(tmp_path):
    root = tmp_path / 'card'
    (root / 'lib' / 'modules' / K618).mkdir(parents=True)
    return root


def audit(root):
    return registry.run_one(AuditContext(root=str(root), live=False), pi_ir_tx)


def files_read(finding):
    return finding['evidence'].get('files_read') or []


def test_resolve_under_follows_links_inside_the_image(tmp_path):
    root = image(tmp_path)
    put(root / 'data' / 'real.txt', 'x')
    os.symlink('/data', str(root / 'abs'))
    os.symlink('../data/real.txt', str(root / 'lib' / 'rel'))
    assert hostio.resolve_under(str(root), '/abs/real.txt') == str(root / 'data' / 'real.txt')
    assert hostio.resolve_under(str(root), '/lib/rel') == str(root / 'data' / 'real.txt')
    assert hostio.resolve_under(str(root), '/lib/../data/./real.txt') == str(root / 'data' / 'real.txt')


@pytest.mark.parametrize('path', ['/../etc/hostname', '/lib/../../etc/hostname'])
def test_resolve_under_reports_an_escape(tmp_path, path):
    root = image(tmp_path)
    with pytest.raises(hostio.ReadProblem) as caught:
        hostio.resolve_under(str(root), path)
    assert caught.value.kind == 'escape'


def test_resolve_under_reports_a_link_loop(tmp_path):
    root = image(tmp_path)
    os.symlink('/b', str(root / 'a'))
    os.symlink('/a', str(root / 'b'))
    with pytest.raises(hostio.ReadProblem) as caught:
        hostio.resolve_under(str(root), '/a/x')
    assert caught.value.kind == 'loop'


def test_an_absolute_symlink_config_reads_the_images_file(tmp_path):
    root = image(tmp_path)
    put(root / 'srv' / 'boot.txt', 'dtoverlay=pwm-ir-tx\n')
    (root / 'boot' / 'firmware').mkdir(parents=True)
    os.symlink('/srv/boot.txt', str(root / 'boot' / 'firmware' / 'config.txt'))
    finding = audit(root)
    assert finding['status'] == 'at_risk'
    assert files_read(finding) == [str(root / 'srv' / 'boot.txt')]


def test_an_absolute_include_is_an_image_path(tmp_path):
    root = image(tmp_path)
    put(root / 'boot' / 'firmware' / 'config.txt', 'include /etc/extra.txt\n')
    put(root / 'etc' / 'extra.txt', 'dtoverlay=pwm-ir-tx,gpio_pin=17\n')
    finding = audit(root)
    assert finding['status'] == 'at_risk'
    assert files_read(finding)[1] == str(root / 'etc' / 'extra.txt')


@pytest.mark.parametrize('line', ['include ../../../../../../../../etc/hostname', 'include ../../../..'])
def test_an_include_that_leaves_the_image_is_an_error(tmp_path, line):
    root = image(tmp_path)
    put(root / 'boot' / 'firmware' / 'config.txt', line + '\n')
    finding = audit(root)
    assert finding['status'] == 'error'
    assert 'leaves the image root' in finding['summary']


def test_an_absolute_symlink_lib_finds_the_images_kernels(tmp_path):
    root = tmp_path / 'card'
    (root / 'usr' / 'lib' / 'modules' / K618).mkdir(parents=True)
    os.symlink('/usr/lib', str(root / 'lib'))
    put(root / 'boot' / 'firmware' / 'config.txt', 'dtoverlay=pwm-ir-tx\n')
    finding = audit(root)
    assert finding['evidence']['installed_kernels'] == [K618]
    assert finding['status'] == 'at_risk'


@pytest.mark.parametrize('target,reason', [('/nowhere.txt', 'does not exist'), ('config.txt', 'include loop')])
def test_a_dangling_or_looping_config_link_is_an_error_not_absent(tmp_path, target, reason):
    root = image(tmp_path)
    (root / 'boot' / 'firmware').mkdir(parents=True)
    os.symlink(target, str(root / 'boot' / 'firmware' / 'config.txt'))
    finding = audit(root)
    assert finding['status'] == 'error', finding
    assert 'loop' in finding['summary'] or reason in finding['summary']


def test_image_findings_suggest_no_reboot_and_no_path(tmp_path):
    """An image is fixed by editing its files: nothing to reboot. The finding names no path for the role:
    the controller never takes one from a host (pi_ir_tx_root defaults to the user's postmortem_root)."""
    root = image(tmp_path)
    put(root / 'boot' / 'firmware' / 'config.txt', 'dtoverlay=pwm-ir-tx\n')
    remediation = audit(root)['remediation']
    assert remediation['role'] == 'homelab.postmortem.pi_ir_tx' and remediation['vars'] == {}
    assert remediation['disruption'] == 'none'


def test_a_host_that_is_no_pi_carries_no_kernel_verdict(tmp_path):
    ctx = AuditContext(root=str(tmp_path), live=True, sys_root=str(tmp_path / 'sys'), proc_root=str(tmp_path / 'proc'),
                       kernel_release=K618)
    finding = pi_ir_tx.detect(ctx)
    assert finding['status'] == 'not_applicable'
    assert 'running_kernel_affected' not in finding['evidence']


@pytest.mark.parametrize('line,value', [('dtoverlay=pwm-ir-tx,gpio_pin=abc', "'abc'"),
                                        ('dtoverlay=pwm-ir-tx,gpio_pin=', "''"),
                                        ('dtoverlay=gpio-ir-tx,gpio_pin=١٧', "'١٧'")])
def test_a_pin_that_is_not_a_number_is_named(tmp_path, line, value):
    root = image(tmp_path)
    put(root / 'boot' / 'firmware' / 'config.txt', line + '\n')
    finding = audit(root)
    assert finding['status'] == 'error'
    assert value in finding['summary'] and 'is not a GPIO number' in finding['summary']
    assert 'not affected' not in finding['summary']
    assert '  ' not in finding['summary']


def test_parse_on_the_live_host_is_unchanged(tmp_path):
    put(tmp_path / 'config.txt', 'include extra.txt\n')
    put(tmp_path / 'extra.txt', 'dtoverlay=pwm-ir-tx\n')
    config = rpi_config.parse(str(tmp_path / 'config.txt'))
    assert [o.name for o in config.overlays()] == ['pwm-ir-tx']
