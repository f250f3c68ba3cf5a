"""podman_export_idmap on recorded podman output (see helpers/podman.py); the real exports
are in tests/e2e/test_podman_real.py."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_export_idmap

from ....helpers.podman import FakePodman, container, make_ctx


@pytest.fixture(autouse=True)
def as_root(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)


def test_export_idmap_lists_mapped_containers_per_user(tmp_path):
    keep_id = container('plain', 'kid', stopped_by_user=False)
    keep_id['HostConfig']['IDMappings'] = {'UidMap': ['0:1:1000', '1000:0:1', '1001:1001:64536'],
                                           'GidMap': ['0:1:1000', '1000:0:1', '1001:1001:64536']}
    fake = FakePodman([keep_id, container('plain', 'plain', stopped_by_user=False)])
    ctx = make_ctx(tmp_path, fake, settings={'podman_export_idmap': {'users': ['alice', 'root']}})
    finding = registry.run_one(ctx, podman_export_idmap)
    names = [i['name'] for i in finding['evidence']['instances']]
    assert 'container kid (alice)' in names and 'container kid (root)' in names
    assert finding['status'] == 'at_risk'
    assert [u['user'] for u in finding['evidence']['users']] == ['root', 'alice']
    # alice's podman runs through runuser; "root" is not checked twice.
    assert any(c[:4] == ['/usr/sbin/runuser', '-u', 'alice', '--'] for c in fake.calls)
    assert finding['evidence']['mapped_containers'] == 2


def test_export_idmap_user_errors_are_that_users_finding(tmp_path, monkeypatch):
    fake = FakePodman([], fail={'ps': (1, '', 'runuser: user nobody-here does not exist')})
    ctx = make_ctx(tmp_path, fake, settings={'podman_export_idmap': {'users': ['nobody-here']}})
    finding = registry.run_one(ctx, podman_export_idmap)
    assert finding['status'] == 'error'
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    monkeypatch.setattr(podman.PodmanCli, 'label', property(lambda self: self.user or 'me'))
    finding = registry.run_one(make_ctx(tmp_path, FakePodman([]), settings={'podman_export_idmap': {'users': ['bob']}}),
                               podman_export_idmap)
    assert [i['status'] for i in finding['evidence']['instances']] == ['unknown']


def test_settings_and_probe_names_are_validated():
    registry.validate_probes(['export_owners'])
    registry.validate_settings({'podman_export_idmap': {'users': ['a'], 'probe_timeout': 5}})
    with pytest.raises(registry.SelectionError):
        registry.validate_settings({'podman_restart_userns': {'users': []}})
