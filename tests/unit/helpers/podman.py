"""Recorded podman inspect output and a fake podman that answers from it."""
import copy
import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

from .paths import FIXTURES_DIR

FIXTURES = os.path.join(FIXTURES_DIR, 'podman')
PROFILE = 'containers-default-0.62.2'


def recorded(name):
    with open(os.path.join(FIXTURES, 'inspect-%s.json' % name)) as handle:
        return json.load(handle)[0]


def recorded_by_name(name):
    """{container name: inspect object} of a recording holding several containers."""
    with open(os.path.join(FIXTURES, 'inspect-%s.json' % name)) as handle:
        return dict((c['Name'], c) for c in json.load(handle))


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


def instances(finding):
    return dict((i['evidence'].get('name'), i) for i in finding['evidence'].get('instances', []))
