"""podman_restart_userns and podman_export_idmap on recorded podman output.

AppArmor cannot run here (the kernel has none), so the AT RISK side is covered
with recorded ``podman container inspect`` output (tests/unit/fixtures/podman,
recorded with podman 4.3.1 on this machine: reference/podman/inspect-*.json)
changed into the shape the write-up shows on an AppArmor host (profile
containers-default-0.62.2, podman 5.4.2's State.StoppedByUser), and a sysfs
fixture with /sys/module/apparmor/parameters/enabled = Y. The real-podman cases
(a container that really gets stuck, real exports) are in tests/e2e/test_podman_real.py.
"""
import copy
import json
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_export_idmap
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_restart_userns
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'podman')
PROFILE = 'containers-default-0.62.2'


def recorded(name):
    with open(os.path.join(FIXTURES, 'inspect-%s.json' % name)) as handle:
        return json.load(handle)[0]


def container(base='mapped', name=None, status='running', profile=PROFILE, policy='always', retries=0,
              restart_count=0, exit_code=0, stopped_by_user=None, labels=None, cid=None):
    data = copy.deepcopy(recorded(base))
    data['Name'] = name or base
    data['Id'] = cid or (data['Name'].encode().hex() * 8)[:64]
    data['State']['Status'] = status
    data['State']['ExitCode'] = exit_code
    if stopped_by_user is not None:
        data['State']['StoppedByUser'] = stopped_by_user
    data['AppArmorProfile'] = profile
    data['HostConfig']['RestartPolicy'] = {'Name': policy, 'MaximumRetryCount': retries}
    data['RestartCount'] = restart_count
    if labels:
        data['Config']['Labels'] = labels
    return data


class FakePodman(object):
    """Answers the podman commands the detections run, from recorded data."""

    def __init__(self, containers, version='5.4.2', events=None, fail=None, rootless=False):
        self.containers = containers
        self.version = version
        self.events = events or {}
        self.fail = fail or {}
        self.rootless = rootless
        self.calls = []

    def __call__(self, cmd):
        self.calls.append(cmd)
        args = cmd[cmd.index('/usr/bin/podman') + 1:]
        for word, answer in self.fail.items():
            if word in args:
                return answer
        if args == ['--version']:
            return 0, 'podman version %s\n' % self.version, ''
        if args[0] == 'info':
            return 0, json.dumps({'host': {'security': {'rootless': self.rootless, 'apparmorEnabled': False},
                                           'eventLogger': 'journald'},
                                  'version': {'Version': self.version},
                                  'store': {'graphDriverName': 'overlay', 'graphRoot': '/var/lib/containers/storage'}}), ''
        if args[0] == 'ps':
            return 0, json.dumps([{'Id': c['Id'], 'Names': [c['Name']]} for c in self.containers]), ''
        if args[:2] == ['container', 'inspect']:
            wanted = args[2:]
            return 0, json.dumps([c for c in self.containers if c['Id'] in wanted]), ''
        if args[0] == 'events':
            cid = [a.split('=', 1)[1] for a in args if a.startswith('container=')][0]
            return 0, '\n'.join(json.dumps({'ID': cid, 'Status': s, 'Time': 't%d' % n})
                                for n, s in enumerate(self.events.get(cid, []))), ''
        return 125, '', 'Error: unexpected command %s' % args


def make_ctx(tmp_path, fake, apparmor='Y', which=True, settings=None, probes=()):
    """A live host under tmp_path: /sys with AppArmor's module flag (no securityfs, so podman itself
    would apply no profile: apparmorEnabled false, as FakePodman's info says), /proc/self of a root
    process, PID 1 that is not systemd, no containers.conf: podman's facts come without podman info."""
    sys_root = tmp_path / 'sys'
    if apparmor is not None:
        enabled = sys_root / 'module' / 'apparmor' / 'parameters' / 'enabled'
        enabled.parent.mkdir(parents=True, exist_ok=True)
        enabled.write_text(apparmor + '\n')
    else:
        sys_root.mkdir(exist_ok=True)
    proc_self = tmp_path / 'proc' / 'self'
    proc_self.mkdir(parents=True, exist_ok=True)
    (proc_self / 'status').write_text('Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n')
    (proc_self / 'uid_map').write_text('0 0 4294967295\n')
    (tmp_path / 'proc' / '1').mkdir(exist_ok=True)
    (tmp_path / 'proc' / '1' / 'comm').write_text('init\n')
    (tmp_path / 'root').mkdir(exist_ok=True)
    tools = {'podman': '/usr/bin/podman', 'runuser': '/usr/sbin/runuser'} if which else {}
    runner = CommandRunner()
    runner.env = {'PATH': '/usr/sbin:/usr/bin', 'HOME': '/root'}
    return AuditContext(root=str(tmp_path / 'root'), live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(sys_root),
                        kernel_release='6.12.111', run_command=fake, which=tools.get, settings=settings or {},
                        probes=probes, runner=runner)


@pytest.fixture(autouse=True)
def as_root(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)


def instances(finding):
    return dict((i['evidence'].get('name'), i) for i in finding['evidence'].get('instances', []))


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


def test_both_podman_detections_in_one_run_ask_podman_once(tmp_path):
    """audit_facts runs both detections on one context: podman info, ps and inspect run once, not twice."""
    fake = FakePodman([container('mapped', 'm', stopped_by_user=False)])
    ctx = make_ctx(tmp_path, fake)
    findings, _timings = registry.run(ctx, [podman_restart_userns, podman_export_idmap])
    assert findings['podman_restart_userns']['status'] == 'at_risk'
    assert findings['podman_export_idmap']['status'] == 'at_risk'
    verbs = [c[1] for c in fake.calls]
    assert verbs.count('--version') == 1 and verbs.count('ps') == 1 and verbs.count('container') == 1
    assert 'info' not in verbs


def test_without_containers_podman_is_asked_nothing_but_ps(tmp_path):
    """podman ps lists nothing: no podman info, no podman --version, for either detection."""
    fake = FakePodman([])
    findings, _timings = registry.run(make_ctx(tmp_path, fake), [podman_restart_userns, podman_export_idmap])
    assert [c[1:] for c in fake.calls] == [['ps', '--all', '--format', 'json']]
    assert findings['podman_restart_userns']['status'] == 'not_applicable'
    assert findings['podman_export_idmap']['status'] == 'not_applicable'
    assert findings['podman_export_idmap']['evidence']['users'][0]['podman_facts'] == 'not read: no container'


def test_the_facts_match_podman_info_or_come_from_it(tmp_path):
    """Where a cheap source is not certain (here: PID 1 is systemd and has a journal, so the event
    logger depends on podman's build), podman info is asked once and its answers are the evidence."""
    fake = FakePodman([container('mapped', 'm', stopped_by_user=False)], version='4.3.1')
    ctx = make_ctx(tmp_path, fake)
    (tmp_path / 'proc' / '1' / 'comm').write_text('systemd\n')
    (tmp_path / 'root' / 'run' / 'log' / 'journal' / 'abc').mkdir(parents=True)
    findings, _timings = registry.run(ctx, [podman_restart_userns, podman_export_idmap])
    evidence = findings['podman_restart_userns']['evidence']
    assert evidence['event_logger'] == 'journald' and evidence['podman_version'] == '4.3.1'
    assert evidence['podman_facts']['event_logger'] == 'podman info --format json'
    assert 'built with systemd' in evidence['podman_facts']['why_podman_info']
    assert [c[1] for c in fake.calls].count('info') == 1


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
