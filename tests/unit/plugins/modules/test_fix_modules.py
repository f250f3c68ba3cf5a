"""The fix modules whose workflow lives in component code, run in this process through the fix protocol
(module_utils/fix_protocol.py) on the fake hosts their component tests use: llama_server_fix on a fake
/proc and config.ini (tests/unit/plugins/module_utils/llama/test_server_fix.py), podman_quadlet on a
fake podman and systemd (tests/unit/plugins/module_utils/podman/test_quadlet_convert.py). Each returns
the protocol's result, writes nothing in check mode, and changes nothing on a second run."""
import os

import pytest
from ansible.module_utils import basic

from ansible_collections.homelab.postmortem.plugins.modules import llama_server_fix, podman_quadlet
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from ..module_utils.llama.test_server_fix import UNIT_CGROUP, systemctl_for
from ..module_utils.podman.test_quadlet_convert import GENERATOR, JOURNALCTL, PODMAN, SYSTEMCTL, FakeHost, recorded
from ...helpers.llama import ctx, proc
from ...helpers.modules import run_module

KEYS = {'changed', 'diff', 'backups', 'verified', 'rolled_back', 'msg'}


@pytest.fixture
def llama_host(tmp_path, monkeypatch):
    """A llama-server of llama.service whose config.ini sets sleep-idle-seconds 45."""
    config = tmp_path / 'cfg' / 'llama.cpp' / 'config.ini'
    config.parent.mkdir(parents=True)
    config.write_text('sleep-idle-seconds = 45\n')
    proc(tmp_path, 10, ['/usr/bin/llama-server', '-m', 'm'], environ={'XDG_CONFIG_HOME': str(tmp_path / 'cfg')},
         cgroup=UNIT_CGROUP)
    unit = tmp_path / 'llama.service'
    unit.write_text('[Service]\nExecStart=/usr/bin/llama-server -m m\nRestart=always\n')
    context = ctx(tmp_path, systemctl=systemctl_for(str(unit)))
    monkeypatch.setattr(llama_server_fix, 'AuditContext', lambda **_kw: context)
    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda self, name, *a, **kw: '/usr/bin/' + name)
    return config


def test_llama_server_fix_checks_writes_verifies_and_then_has_nothing_to_do(llama_host):
    checked = run_module('llama_server_fix', {'disable_sleep': True}, check_mode=True)
    assert KEYS <= set(checked) and checked['changed'] and not checked['verified'] and checked['backups'] == []
    assert checked['diff'][0]['after'] == 'sleep-idle-seconds = -1\n' and llama_host.read_text() == 'sleep-idle-seconds = 45\n'
    done = run_module('llama_server_fix', {'disable_sleep': True})
    assert done['changed'] and done['verified'] and not done['rolled_back'] and len(done['backups']) == 1
    assert llama_host.read_text() == 'sleep-idle-seconds = -1\n' and done['units'][0]['unit'] == 'llama.service'
    again = run_module('llama_server_fix', {'disable_sleep': True})
    assert not again['changed'] and again['diff'] == [] and not again['verified']


def test_llama_server_fix_without_the_fix_chosen_changes_nothing(llama_host):
    result = run_module('llama_server_fix', {'disable_sleep': False, 'restart_on_failure': False})
    assert not result['changed'] and result['diff'] == [] and llama_host.read_text() == 'sleep-idle-seconds = 45\n'


@pytest.fixture
def podman_host(monkeypatch):
    def make(containers, **setup):
        host = FakeHost(containers, **setup)
        tools = {'podman': PODMAN, 'systemctl': SYSTEMCTL, 'journalctl': JOURNALCTL}
        monkeypatch.setattr(podman_quadlet, 'AuditContext', lambda **_kw: AuditContext(runner=host, which=tools.get, euid=0))
        return host
    return make


def quadlet_args(tmp_path, **extra):
    return dict({'name': 'web', 'unit_dir': str(tmp_path / 'units'), 'quadlet_generator': GENERATOR,
                 'start_timeout': 5}, **extra)


def test_podman_quadlet_checks_converts_verifies_and_then_has_nothing_to_do(tmp_path, podman_host):
    host = podman_host([recorded('plain', 'web', 'exited')])
    checked = run_module('podman_quadlet', quadlet_args(tmp_path), check_mode=True)
    assert KEYS <= set(checked) and checked['changed'] and not checked['verified'] and not (tmp_path / 'units').exists()
    assert checked['diff'][0]['before'] == '' and 'Image=' in checked['diff'][0]['after']
    assert 'would: systemctl daemon-reload' in checked['steps']
    done = run_module('podman_quadlet', quadlet_args(tmp_path))
    assert done['changed'] and done['verified'] and not any(step.startswith('would: ') for step in done['steps'])
    assert os.path.exists(done['unit_path']) and 'web.service is active and web runs' in done['steps']
    assert host.containers['web']['Config']['Labels']['PODMAN_SYSTEMD_UNIT'] == 'web.service'
    again = run_module('podman_quadlet', quadlet_args(tmp_path))
    assert not again['changed'] and 'already run by web.service' in again['msg']


def test_podman_quadlet_puts_everything_back_when_the_service_does_not_come_up(tmp_path, podman_host):
    host = podman_host([recorded('plain', 'web', 'exited')], started_state='activating')
    result = run_module('podman_quadlet', quadlet_args(tmp_path, start_timeout=2))
    assert result['failed'] and result['rolled_back'] and not result['verified']
    assert 'did not come up within 2 s' in result['msg'] and 'everything was put back as it was' in result['msg']
    assert not (tmp_path / 'units' / 'web.container').exists() and set(host.containers) == {'web'}


def test_podman_safe_export_checks_exports_verifies_and_then_leaves_the_archive(tmp_path, monkeypatch):
    from ansible_collections.homelab.postmortem.plugins.modules import podman_safe_export
    from ..module_utils.podman.test_safe_export import PODMAN as SAFE_PODMAN, FakePodman
    fake = FakePodman()
    monkeypatch.setattr(podman_safe_export, 'AuditContext',
                        lambda **_kw: AuditContext(runner=fake, which={'podman': SAFE_PODMAN}.get))
    dest = tmp_path / 'web.tar'
    checked = run_module('podman_safe_export', {'container': 'web', 'dest': str(dest)}, check_mode=True)
    assert KEYS <= set(checked) and checked['changed'] and not checked['verified'] and not dest.exists()
    assert checked['steps'][1].startswith('podman commit web ') and fake.calls == []
    done = run_module('podman_safe_export', {'container': 'web', 'dest': str(dest)})
    assert done['changed'] and done['verified'] and dest.exists() and done['owners']['etc/passwd'] == '0/0'
    again = run_module('podman_safe_export', {'container': 'web', 'dest': str(dest)})
    assert not again['changed'] and 'exists; set force: true' in again['msg']


@pytest.mark.parametrize('backup', [True, False])
def test_podman_safe_export_that_does_not_read_back_says_what_it_put_back(tmp_path, monkeypatch, backup):
    """An archive that does not read back with its checksum (forced here: on a host, a disk or another writer)
    over an existing one: with a backup the old archive is back and rolled_back is true; without one
    (backup=false) nothing can bring it back, and rolled_back is false with the reason."""
    from ansible_collections.homelab.postmortem.plugins.modules import podman_safe_export
    from ..module_utils.podman.test_safe_export import PODMAN as SAFE_PODMAN, FakePodman
    fake = FakePodman()
    monkeypatch.setattr(podman_safe_export, 'AuditContext',
                        lambda **_kw: AuditContext(runner=fake, which={'podman': SAFE_PODMAN}.get))
    monkeypatch.setattr(podman_safe_export.SafeExportFix, 'verify', lambda self, plan: ['forced: a checksum mismatch'])
    dest = tmp_path / 'web.tar'
    dest.write_bytes(b'the old archive')
    result = run_module('podman_safe_export', {'container': 'web', 'dest': str(dest), 'force': True, 'backup': backup})
    assert result['failed'] and not result['verified']
    if backup:
        assert result['rolled_back'] is True and dest.read_bytes() == b'the old archive'
        assert 'everything was put back as it was' in result['msg']
    else:
        assert result['rolled_back'] is False and not dest.exists()
        assert 'could NOT be put back' in result['msg'] and 'had no backup' in result['msg']


def test_podman_safe_export_with_wrong_owners_writes_nothing(tmp_path, monkeypatch):
    from ansible_collections.homelab.postmortem.plugins.modules import podman_safe_export
    from ..module_utils.podman.test_safe_export import PODMAN as SAFE_PODMAN, FakePodman, GOOD
    fake = FakePodman(archive=[(n, 1 if u == 0 else u, g, s) for n, u, g, s in GOOD])
    monkeypatch.setattr(podman_safe_export, 'AuditContext',
                        lambda **_kw: AuditContext(runner=fake, which={'podman': SAFE_PODMAN}.get))
    dest = tmp_path / 'web.tar'
    result = run_module('podman_safe_export', {'container': 'web', 'dest': str(dest)})
    assert result['failed'] and 'failed verification' in result['msg'] and not dest.exists() and not result['verified']
