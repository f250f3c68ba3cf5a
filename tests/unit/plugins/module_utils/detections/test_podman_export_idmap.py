"""podman_export_idmap on recorded podman output (see helpers/podman.py); the real exports
are in tests/e2e/test_podman_real.py."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.podman_export_idmap import DETECTION as podman_export_idmap

from ....helpers.podman import FakePodman, container, make_ctx, recorded_by_name


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


def test_the_mapping_is_judged_not_its_presence(tmp_path):
    """A rootful --userns=keep-id container gets the host's own mapping: inspect shows 0:0:4294967295
    (podman 5.4.2, recorded: helpers.podman.recorded_by_name('5.4.2'); pkg/util/utils.go GetKeepIDMapping
    reads /proc/self/uid_map for root from v4.5.0, unshare.GetHostIDMappings from v5.1.0), and its export
    shows root's files as 0/0 (measured there: bin/busybox 0/0). Each range is "container:host:size"
    (libpod/container_inspect.go generateIDMappings, fmt.Sprintf("%d:%d:%d", ContainerID, HostID, Size)):
    nothing is shifted where container == host in every range."""
    recorded = recorded_by_name('5.4.2')
    identity_4 = container('plain', 'identity-4', stopped_by_user=False)   # podman 4.3.1 here: --uidmap 0:0:65536
    identity_4['HostConfig']['IDMappings'] = {'UidMap': ['0:0:65536'], 'GidMap': ['0:0:65536']}
    rootless_keep_id = container('plain', 'rootless-keep-id', stopped_by_user=False)
    rootless_keep_id['HostConfig']['IDMappings'] = {'UidMap': ['0:1:1000', '1000:0:1', '1001:1001:64536'],
                                                    'GidMap': ['0:1:1000', '1000:0:1', '1001:1001:64536']}
    auto_unshown = container('plain', 'auto-unshown', stopped_by_user=False)
    auto_unshown['HostConfig']['UsernsMode'] = 'auto'
    auto_unshown['HostConfig'].pop('IDMappings', None)
    garbled = container('plain', 'garbled', stopped_by_user=False)
    garbled['HostConfig']['IDMappings'] = {'UidMap': ['0:0'], 'GidMap': ['0:0:65536']}
    fake = FakePodman([recorded['rtest-keepid'], recorded['rtest-stuck'], identity_4, rootless_keep_id,
                       auto_unshown, garbled])
    finding = registry.run_one(make_ctx(tmp_path, fake), podman_export_idmap)
    found = dict((i['evidence']['name'], i) for i in finding['evidence']['instances'])
    assert found['rtest-keepid']['status'] == 'ok'
    assert found['rtest-keepid']['evidence']['mapping'] == 'identity'
    assert 'every range maps an ID to itself (0:0:4294967295)' in found['rtest-keepid']['summary']
    assert found['identity-4']['status'] == 'ok'
    assert found['rtest-stuck']['status'] == 'at_risk'
    assert found['rtest-stuck']['evidence']['mapping_reason'] == (
        'it moves IDs (uid 0:200000:65536, gid 0:200000:65536; container:host:size)')
    assert found['rootless-keep-id']['status'] == 'at_risk'
    # Where inspect does not show the mapping, nothing says it is harmless.
    assert found['auto-unshown']['status'] == 'at_risk' and 'inspect shows no UidMap or GidMap' in found['auto-unshown']['summary']
    assert found['garbled']['status'] == 'at_risk' and "'0:0', not container:host:size" in found['garbled']['summary']
    assert finding['evidence']['users'][0]['mapped'] == 6 and finding['evidence']['users'][0]['shifting'] == 4
    assert finding['status'] == 'at_risk' and finding['summary'].startswith('4 container(s) have an ID mapping')
