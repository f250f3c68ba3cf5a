"""The podman_quadlet workflow (podman/quadlet_convert.Conversion) on a fake host: plan, check
mode, the swap, its check and the way back, and the refusals.

The fake host answers podman, systemctl, journalctl and the Quadlet generator the way they answer
on a host: the containers are the recorded 4.3.1 inspect output (tests/unit/fixtures/podman)
without their CreateCommand (so the unit is built from the inspect fields and needs no --help);
a missing container is podman's "no such container NAME" with rc 125 (4.3.1:
cmd/podman/inspect/inspect.go:197, pkg/domain/infra/abi/containers.go:546); ``systemctl show``
of a unit that does not exist is rc 0 with LoadState=not-found. The real generator, real podman
and systemd run in tests/e2e/test_quadlet_real.py, test_quadlet_conformance.py and the
podman_quadlet Molecule scenario.
"""
import copy
import errno
import json
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, fix_protocol
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert

from ....helpers.paths import FIXTURES_DIR

FIXTURES = os.path.join(FIXTURES_DIR, 'podman')
PODMAN = '/usr/bin/podman'
SYSTEMCTL = '/usr/bin/systemctl'
JOURNALCTL = '/usr/bin/journalctl'
GENERATOR = '/usr/libexec/podman/quadlet'


def recorded(base, name, status):
    with open(os.path.join(FIXTURES, 'inspect-%s.json' % base)) as handle:
        data = copy.deepcopy(json.load(handle)[0])
    data['Name'] = name
    data['Id'] = (name.encode().hex() * 16)[:64]
    data['State']['Status'] = status
    data['Config'].pop('CreateCommand', None)
    return data


class FakeHost(object):
    """podman, systemd and the generator of one host, as a runner: ``run`` answers each command
    and changes the state the way the real tools would."""

    def __init__(self, containers, version='5.4.2', service_comes_up=True, layer=None, fail=None, units=None,
                 started_state='active'):
        self.containers = dict((c['Name'], c) for c in containers)
        self.version = version
        self.service_comes_up = service_comes_up
        self.started_state = started_state
        self.layer = layer or {}
        self.fail = fail or {}
        self.units = dict(units or {})   # service -> (LoadState, ActiveState, FragmentPath)
        self.calls = []
        self.images = []

    def run(self, cmd, timeout=None, env=None):
        cmd = [str(c) for c in cmd]
        self.calls.append(cmd)
        for words, answer in self.fail.items():
            if ' '.join(cmd).startswith(words):
                return answer
        if cmd[0] == PODMAN:
            return self.podman(cmd[1:])
        if cmd[0] == SYSTEMCTL:
            return self.systemctl(cmd[1:])
        if cmd[0] == JOURNALCTL:
            return 0, 'Starting web...\nError: crun: executable file `nope` not found\n', ''
        if cmd[0] == GENERATOR:
            return self.generator(env['QUADLET_UNIT_DIRS'])
        return 127, '', 'unexpected command %s' % cmd

    def podman(self, args):
        if args[0] == 'info':
            return 0, json.dumps({'version': {'Version': self.version}, 'host': {'security': {}}}), ''
        if args[:2] == ['container', 'inspect']:
            name = args[2]
            if name not in self.containers:
                return 125, '[]\n', 'Error: no such container %s\n' % name
            return 0, json.dumps([self.containers[name]]), ''
        if args[0] == 'diff':
            return 0, json.dumps(self.layer), ''
        if args[:2] == ['image', 'inspect']:
            return 0, json.dumps([{'Config': {'Cmd': ['sleep', '4'], 'Env': ['PATH=/usr/bin']}}]), ''
        if args[0] == 'commit':
            self.images.append(args[-1])
            return 0, 'sha256:abc\n', ''
        if args[0] == 'stop':
            self.containers[args[1]]['State']['Status'] = 'exited'
            return 0, args[1] + '\n', ''
        if args[0] == 'rename':
            self.containers[args[2]] = self.containers.pop(args[1])
            self.containers[args[2]]['Name'] = args[2]
            return 0, '', ''
        if args[0] == 'rm':
            self.containers.pop(args[-1], None)
            return 0, '', ''
        if args[0] == 'start':
            self.containers[args[1]]['State']['Status'] = 'running'
            return 0, args[1] + '\n', ''
        return 125, '', 'Error: unexpected podman %s' % args

    def systemctl(self, args):
        if args[0] == 'show':
            load, active, fragment = self.units.get(args[1], ('not-found', 'inactive', ''))
            return 0, 'LoadState=%s\nActiveState=%s\nFragmentPath=%s\nSourcePath=\n' % (load, active, fragment), ''
        if args[0] == 'start':
            service = args[1]
            name = service[:-len('.service')]
            if not self.service_comes_up:
                self.units[service] = ('loaded', 'failed', '/run/systemd/generator/' + service)
                return 1, '', 'Job for %s failed because the control process exited with error code.\n' % service
            new = recorded('plain', name, 'running')
            new['Config']['Labels'] = {'PODMAN_SYSTEMD_UNIT': service}
            self.containers[name] = new
            self.units[service] = ('loaded', self.started_state, '/run/systemd/generator/' + service)
            return 0, '', ''
        if args[0] == 'stop':
            service = args[1]
            if service in self.units:
                self.units[service] = self.units[service][:1] + ('inactive',) + self.units[service][2:]
            return 0, '', ''
        return 0, '', ''

    def generator(self, unit_dir):
        name = os.listdir(unit_dir)[0]
        with open(os.path.join(unit_dir, name)) as handle:
            text = handle.read()
        image = [line.split('=', 1)[1] for line in text.splitlines() if line.startswith('Image=')]
        if not image:
            return 1, '', 'quadlet-generator[1]: converting "%s": no Image or Rootfs key specified' % name
        service = name.rsplit('.', 1)[0] + '.service'
        return 0, '---%s---\n[Service]\nExecStart=%s run --name %s --replace --rm -d %s\n' % (
            service, PODMAN, service[:-8], image[0]), ''


class FakeModule(object):
    """What filewrite.write_all asks of the module."""

    @staticmethod
    def selinux_enabled():
        return False

    @staticmethod
    def fail_json(**kwargs):
        raise AssertionError('write_all failed: %s' % kwargs)


def write(writes, backup):
    """As fix_protocol.run binds it: a failed write raises, so a roll back in progress goes on."""
    return filewrite.write_all(FakeModule, writes, backup, fail=fix_protocol.write_failed)


def conversion(tmp_path, host, euid=0, **params):
    options = dict(name='web', unit_name=None, unit_dir=str(tmp_path / 'units'), commit=False, replace_running=False,
                   apparmor_unconfined=False, restart_sec=1, start_timeout=5, quadlet_generator=GENERATOR, backup=True)
    options.update(params)
    tools = {'podman': PODMAN, 'systemctl': SYSTEMCTL, 'journalctl': JOURNALCTL}
    ctx = AuditContext(runner=host, which=tools.get, euid=euid)
    clock = [0.0]

    def sleep(seconds):
        clock[0] += seconds
    return Job(ctx, quadlet_convert.Options(**options), sleep=sleep, clock=lambda: clock[0])


class Job(quadlet_convert.Conversion):
    """The conversion driven by the fix protocol, as the module drives it."""

    def run(self, check_mode):
        self.planned = fix_protocol.drive(self, check_mode, write)[0]
        return self.planned.changed


def verbs(host):
    return [' '.join(os.path.basename(w) if n == 0 else w for n, w in enumerate(c[:3])) for c in host.calls
            if c[0] != PODMAN or c[1] not in ('info', 'container', 'diff', 'image')]


def test_a_stopped_container_becomes_its_service(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'exited')])
    job = conversion(tmp_path, host)
    assert job.run(check_mode=False) is True
    unit = (tmp_path / 'units' / 'web.container').read_text()
    assert 'Image=localhost/debian:12' in unit and 'Restart=always' in unit
    assert job.result['source'] == 'inspect' and job.result['unit'] == unit
    assert job.result['generated_exec_start'].startswith('ExecStart=%s run --name web' % PODMAN)
    aside = 'web-pre-quadlet-%s' % recorded('plain', 'web', 'exited')['Id'][:12]
    # No stop for a stopped container; the old one is removed only after the new one runs.
    assert verbs(host) == ['systemctl show web.service', 'quadlet -dryrun', 'systemctl daemon-reload', 'podman rename web',
                           'systemctl start web.service', 'systemctl show web.service', 'podman rm ' + aside]
    assert 'web.service is active and web runs' in job.steps
    assert set(host.containers) == {'web'} and host.containers['web']['Config']['Labels']['PODMAN_SYSTEMD_UNIT'] == 'web.service'
    # A second run finds the container run by its unit and changes nothing.
    again = conversion(tmp_path, host)
    assert again.run(check_mode=False) is False
    assert 'already run by web.service' in again.result['msg']


def test_check_mode_lists_the_steps_and_changes_nothing(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'running')])
    job = conversion(tmp_path, host, replace_running=True)
    assert job.run(check_mode=True) is True
    assert not (tmp_path / 'units').exists()
    assert [s for s in job.steps if s.startswith('would: ')] == [
        'would: write %s' % job.unit_path, 'would: systemctl daemon-reload', 'would: podman stop web',
        'would: podman rename web web-pre-quadlet-%s' % host.containers['web']['Id'][:12], 'would: systemctl start web.service',
        'would: check web.service is active and container web runs',
        'would: podman rm web-pre-quadlet-%s (volumes kept)' % host.containers['web']['Id'][:12]]
    assert job.planned.diff[0]['before'] == '' and 'Image=' in job.planned.diff[0]['after']
    assert not any(c[0] == SYSTEMCTL and c[1] != 'show' for c in host.calls)


def test_a_running_container_waits_for_replace_running(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'running')])
    job = conversion(tmp_path, host)
    assert job.run(check_mode=False) is False
    assert 'replace_running: true' in job.result['skipped_reason'] and job.warnings == [job.result['skipped_reason']]
    assert not (tmp_path / 'units').exists() and host.containers['web']['State']['Status'] == 'running'


def test_a_service_that_does_not_come_up_puts_everything_back(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'running')], service_comes_up=False)
    job = conversion(tmp_path, host, replace_running=True)
    with pytest.raises(quadlet_convert.ConversionFailed) as failed:
        job.run(check_mode=False)
    message = str(failed.value)
    assert 'systemctl start web.service failed (rc 1): Job for web.service failed' in message
    assert 'everything was put back as it was' in message
    assert 'Last journal lines of web.service: Starting web... | Error: crun' in message
    # The unit is gone again, systemd reloaded, the old container has its name back and runs.
    assert not (tmp_path / 'units' / 'web.container').exists()
    assert verbs(host)[-6:] == ['systemctl stop web.service', 'systemctl daemon-reload', 'podman rm --force',
                                'podman rename web-pre-quadlet-%s' % host.containers['web']['Id'][:12], 'podman start web',
                                'journalctl --unit web.service']
    assert set(host.containers) == {'web'} and host.containers['web']['State']['Status'] == 'running'


def test_a_unit_that_was_there_is_written_back_when_the_service_fails(tmp_path):
    units = tmp_path / 'units'
    units.mkdir()
    (units / 'web.container').write_text('[Container]\nImage=localhost/old:1\n')
    host = FakeHost([recorded('plain', 'web', 'exited')], service_comes_up=False)
    with pytest.raises(quadlet_convert.ConversionFailed):
        conversion(tmp_path, host).run(check_mode=False)
    assert (units / 'web.container').read_text() == '[Container]\nImage=localhost/old:1\n'
    backups = [p for p in os.listdir(str(units)) if p.endswith('.bak')]
    assert len(backups) == 1


def test_a_unit_that_cannot_be_written_back_is_named_and_the_old_container_still_comes_back(tmp_path, monkeypatch):
    """The service fails and the old unit file cannot be written back (the filesystem went read-only after the
    new one landed): the failure names the unit file, rolled_back is false, and the rest of the roll back still
    gives the old container its name back and starts it."""
    units = tmp_path / 'units'
    units.mkdir()
    unit = units / 'web.container'
    unit.write_text('[Container]\nImage=localhost/old:1\n')
    rename, renames = os.rename, []

    def renaming(src, dst):
        if dst == str(unit):
            renames.append(dst)
            if len(renames) > 1:
                raise OSError(errno.EROFS, 'Read-only file system')
        return rename(src, dst)
    monkeypatch.setattr(os, 'rename', renaming)
    host = FakeHost([recorded('plain', 'web', 'running')], service_comes_up=False)
    with pytest.raises(quadlet_convert.ConversionFailed) as failed:
        conversion(tmp_path, host, replace_running=True).run(check_mode=False)
    assert failed.value.rolled_back is False
    assert 'could NOT be put back: %s' % unit in str(failed.value) and 'Read-only file system' in str(failed.value)
    assert 'podman start web' in verbs(host) and host.containers['web']['State']['Status'] == 'running'
    assert 'Image=localhost/old:1' not in unit.read_text()   # the new unit is what is left, and the message says so


def test_a_service_that_never_becomes_active_times_out_with_what_was_seen(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'exited')], started_state='activating')
    job = conversion(tmp_path, host, start_timeout=3)
    with pytest.raises(fix_protocol.FixFailed, match=r'did not come up within 3 s \(service activating, '
                       r'container running\)'):
        job.run(check_mode=False)


@pytest.mark.parametrize('answer, reason', [
    ((125, '', 'Error: database is locked\n'), 'database is locked'),
    ((125, '', 'time="x" level=warning msg="cgroup v1"\nError: open /var/lib/containers: permission denied\n'),
     'permission denied'),
    ((0, 'not json', ''), 'did not print JSON'),
])
def test_an_inspect_failure_keeps_its_reason(tmp_path, answer, reason):
    """Only podman's "no such container NAME" means there is none; anything else is its own reason."""
    host = FakeHost([recorded('plain', 'web', 'exited')], fail={'%s container inspect' % PODMAN: answer})
    with pytest.raises(podman.PodmanProblem) as failed:
        conversion(tmp_path, host).run(check_mode=False)
    assert reason in str(failed.value) and 'no container named' not in str(failed.value)
    assert not (tmp_path / 'units').exists()


def test_a_missing_container_and_an_earlier_conversion(tmp_path):
    with pytest.raises(quadlet_convert.ConversionFailed, match='no container named web'):
        conversion(tmp_path, FakeHost([])).run(check_mode=False)
    units = tmp_path / 'units'
    units.mkdir()
    (units / 'web.container').write_text('[Container]\nImage=x\n')
    job = conversion(tmp_path, FakeHost([]))
    assert job.run(check_mode=False) is False and 'already converted' in job.result['msg']


def test_a_failing_systemctl_show_says_why(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'exited')],
                    fail={'%s show' % SYSTEMCTL: (1, '', 'System has not been booted with systemd as init system (PID 1).\n')})
    with pytest.raises(Exception, match='systemctl show failed \\(rc 1\\): System has not been booted with systemd'):
        conversion(tmp_path, host).run(check_mode=False)


@pytest.mark.parametrize('setup, message', [
    (dict(version='4.3.1'), 'podman 4.3.1 has no Quadlet'),
    (dict(units={'web.service': ('loaded', 'active', '/etc/systemd/system/web.service')}),
     'web.service already exists (/etc/systemd/system/web.service) and Quadlet did not generate it'),
    (dict(layer={'added': ['/root/state']}), 'web has 1 change(s) in its writable layer (added /root/state)'),
])
def test_refusals_change_nothing(tmp_path, setup, message):
    host = FakeHost([recorded('plain', 'web', 'exited')], **setup)
    with pytest.raises(quadlet_convert.ConversionFailed, match=message.replace('(', r'\(').replace(')', r'\)')):
        conversion(tmp_path, host).run(check_mode=False)
    assert not (tmp_path / 'units').exists()
    assert not any(c[0] == SYSTEMCTL and c[1] != 'show' for c in host.calls)


def test_another_container_run_by_a_unit_and_a_paused_one_are_refused(tmp_path):
    labelled = recorded('plain', 'web', 'running')
    labelled['Config']['Labels'] = {'PODMAN_SYSTEMD_UNIT': 'other.service'}
    with pytest.raises(quadlet_convert.ConversionFailed, match='already run by systemd unit other.service'):
        conversion(tmp_path, FakeHost([labelled])).run(check_mode=False)
    with pytest.raises(quadlet_convert.ConversionFailed, match='web is paused'):
        conversion(tmp_path, FakeHost([recorded('plain', 'web', 'paused')])).run(check_mode=False)


def test_layer_changes_are_committed_and_the_unit_runs_the_image(tmp_path):
    host = FakeHost([recorded('plain', 'web', 'exited')], layer={'added': ['/root/state']})
    job = conversion(tmp_path, host, commit=True)
    assert job.run(check_mode=False) is True
    image = job.result['committed_image']
    assert image.startswith('localhost/postmortem-quadlet-web:') and host.images == [image]
    assert 'Image=%s' % image in (tmp_path / 'units' / 'web.container').read_text()
    assert job.result['layer_changes'] == ['added /root/state']


def test_root_podman_and_systemd_are_needed(tmp_path):
    with pytest.raises(quadlet_convert.ConversionFailed, match='needs root'):
        conversion(tmp_path, FakeHost([]), euid=1000).run(check_mode=False)
    job = conversion(tmp_path, FakeHost([recorded('plain', 'web', 'exited')]))
    job.ctx.which = {'podman': PODMAN}.get
    with pytest.raises(quadlet_convert.ConversionFailed, match='systemctl is not installed'):
        job.run(check_mode=False)
