"""podman_restart_userns on recorded podman output (podman_export_idmap is in test_podman_export_idmap.py,
the facts both share in ../podman/test_facts_shared.py).

AppArmor cannot run here (the kernel has none), so the AT RISK side is covered
with recorded ``podman container inspect`` output (tests/unit/fixtures/podman,
recorded with podman 4.3.1 on this machine: reference/podman/inspect-*.json)
changed into the shape the write-up shows on an AppArmor host (profile
containers-default-0.62.2, podman 5.4.2's State.StoppedByUser), and a sysfs
fixture with /sys/module/apparmor/parameters/enabled = Y. The real-podman cases
(a container that really gets stuck, real exports) are in tests/e2e/test_podman_real.py.
"""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.podman_restart_userns import DETECTION as podman_restart_userns

from ....helpers.podman import PROFILE, FakePodman, container, instances, make_ctx, recorded_by_name


@pytest.fixture(autouse=True)
def as_root(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)


def test_the_write_ups_three_containers_on_an_apparmor_host(tmp_path):
    """rtest-userns stuck at restarts=1, rtest-unconfined and rtest-plain running (the table in the write-up)."""
    fake = FakePodman([
        container('mapped', 'rtest-userns', status='exited', restart_count=1, exit_code=0, stopped_by_user=False),
        container('mapped', 'rtest-unconfined', profile='unconfined', restart_count=5, stopped_by_user=False),
        container('plain', 'rtest-plain', restart_count=5, stopped_by_user=False),
        container('mapped', 'rtest-running', restart_count=0, stopped_by_user=False),
    ])
    finding = registry.run_one(make_ctx(tmp_path, fake), podman_restart_userns)
    found = instances(finding)
    assert finding['status'] == 'affected'
    assert found['rtest-userns']['status'] == 'affected'
    assert found['rtest-userns']['evidence']['matches_apparmor_pattern'] is True
    assert 'AppArmor pattern' in found['rtest-userns']['summary']
    assert found['rtest-userns']['evidence']['stopped_by_user_source'] == 'podman inspect State.StoppedByUser'
    assert found['rtest-unconfined']['status'] == 'ok'
    assert 'unconfined' in found['rtest-unconfined']['summary']
    assert found['rtest-plain']['status'] == 'ok'
    assert found['rtest-running']['status'] == 'at_risk'
    assert PROFILE in found['rtest-running']['summary']
    evidence = found['rtest-running']['evidence']
    assert evidence['uid_map'] == ['0:200000:65536'] and evidence['podman_version'] == '5.4.2'
    assert 'AppArmor enabled' in evidence['apparmor']
    assert '1 STUCK (rtest-userns)' in finding['summary'] and '1 AT RISK (rtest-running)' in finding['summary']
    # Detections never ask podman to change anything.
    assert all(c[1] in ('--version', 'ps', 'container', 'events') for c in fake.calls)
    assert finding['evidence']['podman_facts']['version'] == 'podman --version'


def test_negatives_stopped_by_a_person_on_failure_zero_retries_spent_and_quadlet(tmp_path):
    fake = FakePodman([
        container('mapped', 'by-person', status='exited', exit_code=137, stopped_by_user=True),
        container('mapped', 'onfail-zero', status='exited', policy='on-failure', exit_code=0, stopped_by_user=False),
        container('mapped', 'retries-spent', status='exited', policy='on-failure', retries=3, restart_count=3,
                  exit_code=1, stopped_by_user=False),
        container('mapped', 'quadlet-run', labels={'PODMAN_SYSTEMD_UNIT': 'quadlet-run.service'}, stopped_by_user=False),
        container('mapped', 'no-policy', status='exited', policy='', stopped_by_user=False),
    ])
    finding = registry.run_one(make_ctx(tmp_path, fake), podman_restart_userns)
    found = instances(finding)
    assert finding['status'] == 'ok', finding['summary']
    assert 'stopped by a person' in found['by-person']['summary']
    assert 'exited 0 under on-failure' in found['onfail-zero']['summary']
    assert 'retries are spent' in found['retries-spent']['summary']
    assert 'quadlet-run.service' in found['quadlet-run']['summary']
    assert 'no-policy' not in found


def test_on_failure_n_that_stopped_early_is_stuck(tmp_path):
    """The write-up: --restart on-failure:3 on a mapped container stopped at restarts=1."""
    fake = FakePodman([container('mapped', 'of3', status='exited', policy='on-failure', retries=3, restart_count=1,
                                 exit_code=1, stopped_by_user=False)])
    finding = registry.run_one(make_ctx(tmp_path, fake), podman_restart_userns)
    assert instances(finding)['of3']['status'] == 'affected'
    assert 'on-failure:3' in instances(finding)['of3']['summary']


@pytest.mark.parametrize('events, status, words', [
    (['create', 'init', 'start', 'died', 'restart'], 'affected', 'STUCK'),            # the write-up's event list
    (['create', 'init', 'start', 'died', 'restart', 'init', 'start', 'died'], 'affected', 'STUCK'),
    (['create', 'init', 'start', 'died', 'cleanup', 'cleanup'], 'ok', 'did not restart it'),   # 4.3.1 podman stop
    (['create', 'init', 'start', 'kill', 'died', 'cleanup'], 'ok', 'stop/kill event'),
    ([], 'unknown', 'no record of its exit'),
])
def test_podman_4_without_stopped_by_user_reads_the_events(tmp_path, events, status, words):
    data = container('mapped', 'old', status='exited', exit_code=1)
    assert 'StoppedByUser' not in data['State']
    fake = FakePodman([data], version='4.3.1', events={data['Id']: events})
    finding = registry.run_one(make_ctx(tmp_path, fake), podman_restart_userns)
    instance = instances(finding)['old']
    assert instance['status'] == status
    assert words in instance['summary']


def test_no_apparmor_in_the_kernel_means_not_at_risk_and_says_why(tmp_path):
    fake = FakePodman([container('mapped', 'm', profile='', stopped_by_user=False)])
    finding = registry.run_one(make_ctx(tmp_path, fake, apparmor=None), podman_restart_userns)
    assert instances(finding)['m']['status'] == 'ok'
    assert 'no AppArmor in this kernel' in instances(finding)['m']['summary']
    disabled = registry.run_one(make_ctx(tmp_path / 'n', fake, apparmor='N'), podman_restart_userns)
    assert 'present but disabled' in instances(disabled)['m']['summary']


def test_fixed_in_setting_clears_at_risk(tmp_path):
    fake = FakePodman([container('mapped', 'm', stopped_by_user=False)], version='6.2.0')
    ctx = make_ctx(tmp_path, fake, settings={'podman_restart_userns': {'fixed_in': '6.2.0'}})
    assert registry.run_one(ctx, podman_restart_userns)['status'] == 'ok'


def test_bad_input_per_host(tmp_path, monkeypatch):
    not_installed = registry.run_one(make_ctx(tmp_path, FakePodman([]), which=False), podman_restart_userns)
    assert not_installed['status'] == 'not_applicable' and 'not installed' in not_installed['summary']
    erroring = FakePodman([], fail={'ps': (125, '', 'time="x" level=warning msg="cgroup v1"\nError: database is locked')})
    finding = registry.run_one(make_ctx(tmp_path, erroring), podman_restart_userns)
    assert finding['status'] == 'error' and 'database is locked' in finding['summary']
    garbage = FakePodman([], fail={'ps': (0, 'not json at all', '')})
    assert 'did not print JSON' in registry.run_one(make_ctx(tmp_path, garbage), podman_restart_userns)['summary']
    empty = registry.run_one(make_ctx(tmp_path, FakePodman([])), podman_restart_userns)
    assert empty['status'] == 'not_applicable'
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    as_user = registry.run_one(make_ctx(tmp_path, FakePodman([])), podman_restart_userns)
    assert as_user['status'] == 'unknown' and 'become' in as_user['summary']


def test_api_created_container_and_odd_names_parse(tmp_path):
    data = container('mapped', 'we ird/näme', stopped_by_user=False)
    data['Config'].pop('CreateCommand')
    parsed = podman.Container(data)
    assert parsed.create_command == [] and parsed.own_mapping and parsed.name == 'we ird/näme'
    assert podman.Container({}).status == 'unknown'


def test_a_restart_that_stopped_at_created_is_stuck(tmp_path):
    """Measured on this machine's podman 4.3.1: a rootful --uidmap container with --restart always
    is restarted once and stays "created" (events died, restart, init, cleanup; no start)."""
    stuck = container('mapped', 'half-restarted', status='created', restart_count=1, exit_code=1)
    never_started = container('mapped', 'never-started', status='created', restart_count=0)
    fake = FakePodman([stuck, never_started], version='4.3.1',
                      events={stuck['Id']: ['create', 'init', 'start', 'died', 'restart', 'init', 'cleanup']})
    found = instances(registry.run_one(make_ctx(tmp_path, fake, apparmor=None), podman_restart_userns))
    assert found['half-restarted']['status'] == 'affected'
    assert found['half-restarted']['evidence']['outcome'] == 'restart_failed'
    assert 'created since' in found['half-restarted']['summary']
    assert found['never-started']['status'] == 'ok'


# podman's own omission rule for State.StoppedByUser, release by release (containers/podman,
# `git show TAG:libpod/define/container_inspect.go`): no such field before v4.7.0; from v4.7.0-rc1
# (commit 589867d716, "podman: don't restart after kill") `StoppedByUser bool
# `json:"StoppedByUser,omitempty"``, so a false value is left out. The recording is real podman 5.4.2
# (Debian 13's, run in the postmortem-podman13 image on this machine: tests/e2e/test_podman5_real.py does
# it live): rtest-stuck exited under --restart always after one restart (its restart path removed) and
# nobody stopped it - its State has no StoppedByUser; rtest-stopped was stopped with podman stop -
# "StoppedByUser": true. The same objects are what every release from v4.7.0 prints; the version is the
# only thing that changes between the cases.
WITH_OMITEMPTY = [
    ('4.7.0', 'libpod/define/container_inspect.go:231 @ v4.7.0'),
    ('4.7.0-rc1', 'libpod/define/container_inspect.go:231 @ v4.7.0-rc1'),
    ('4.9.5', 'libpod/define/container_inspect.go:231 @ v4.9.5'),
    ('5.0.3', 'libpod/define/container_inspect.go:280 @ v5.0.3'),
    ('5.2.5', 'libpod/define/container_inspect.go:306 @ v5.2.5'),
    ('5.4.2', 'libpod/define/container_inspect.go:321 @ v5.4.2'),
    ('5.8.2', 'libpod/define/container_inspect.go:321 @ v5.8.2'),
]


@pytest.mark.parametrize('version,tag_line', WITH_OMITEMPTY)
def test_a_missing_stopped_by_user_is_false_from_4_7_on(tmp_path, version, tag_line):
    """No event log at all (events_logger = "none", or rotated): the omitted field alone decides."""
    recorded = recorded_by_name('5.4.2')
    fake = FakePodman([recorded['rtest-stuck'], recorded['rtest-stopped']], version=version)
    finding = registry.run_one(make_ctx(tmp_path, fake, apparmor=None), podman_restart_userns)
    found = instances(finding)
    stuck = found['rtest-stuck']
    assert 'StoppedByUser' not in recorded['rtest-stuck']['State'], tag_line
    assert stuck['status'] == 'affected', stuck['summary']
    assert stuck['evidence']['stopped_by_user'] is False
    assert 'omits State.StoppedByUser, which podman %s does when it is false' % version in (
        stuck['evidence']['stopped_by_user_source'])
    assert stuck['evidence']['restart_count'] == 1 and stuck['evidence']['state'] == 'stopped'
    assert found['rtest-stopped']['status'] == 'ok'
    assert found['rtest-stopped']['evidence']['stopped_by_user_source'] == 'podman inspect State.StoppedByUser'
    assert not any(c[1] == 'events' for c in fake.calls)


@pytest.mark.parametrize('version,events,status', [
    # Before v4.7.0 there is no such field (InspectContainerState @ v4.3.1 and v4.6.2, l.208-229): the
    # missing field says nothing, the events decide.
    ('4.3.1', [], 'unknown'),
    ('4.6.2', ['create', 'init', 'start', 'died', 'restart', 'init', 'start', 'died'], 'affected'),
    # A development build of 4.7.0 may predate the field.
    ('4.7.0-dev', [], 'unknown'),
    (None, [], 'unknown'),
])
def test_before_4_7_a_missing_stopped_by_user_says_nothing(tmp_path, version, events, status):
    stuck = recorded_by_name('5.4.2')['rtest-stuck']
    fake = FakePodman([stuck], version=version or 'unknown', events={stuck['Id']: events})
    found = instances(registry.run_one(make_ctx(tmp_path, fake, apparmor=None), podman_restart_userns))
    assert found['rtest-stuck']['status'] == status, found['rtest-stuck']['summary']
    assert found['rtest-stuck']['evidence']['stopped_by_user_source'].startswith('podman events (')
