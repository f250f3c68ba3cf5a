"""podman's version, rootless mode, AppArmor and event logger without podman info (podman/facts.py),
and podman info whenever a cheap source could say something else than podman would.

Expected answers come from podman's code (file:line in podman/facts.py) and from this machine's
podman 4.3.1, whose podman info (reference/podman/podman-info.txt) says version 4.3.1, rootless
false, apparmorEnabled false and eventLogger file on a host whose PID 1 is not systemd, with no
AppArmor and Debian's /usr/share/containers/containers.conf (events_logger commented out).
tests/e2e/test_podman_real.py compares both answers on the real podman, with several
containers.conf set-ups.
"""
import json
import os
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import CommandTimeout
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import facts as podman_facts
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

PODMAN = '/usr/bin/podman'
FULL_CAPS = '000001ffffffffff'
DEBIAN_DEFAULT_CONF = '[containers]\n[engine]\n#events_logger = "journald"\n[engine.runtimes]\n'
INFO = {'version': {'Version': '4.3.1'},
        'host': {'eventLogger': 'journald', 'security': {'rootless': False, 'apparmorEnabled': True}}}


class FakePodman(object):
    def __init__(self, version_out='podman version 4.3.1\n', info=None, fail=None):
        self.version_out = version_out
        self.info = info or INFO
        self.fail = fail or {}
        self.calls = []

    def __call__(self, cmd):
        self.calls.append(cmd)
        args = cmd[cmd.index(PODMAN) + 1:]
        if args[0] in self.fail:
            answer = self.fail[args[0]]
            if isinstance(answer, Exception):
                raise answer
            return answer
        if args == ['--version']:
            return 0, self.version_out, ''
        if args[0] == 'info':
            return 0, json.dumps(self.info), ''
        return 125, '', 'Error: unexpected %s' % args

    def asked(self, verb):
        return sum(1 for c in self.calls if c[c.index(PODMAN) + 1] == verb)


class Host(object):
    """A host tree: / under ``root``, /proc and /sys beside it, and podman's environment."""

    def __init__(self, tmp_path, uid=0, cap_eff=FULL_CAPS, uid_map='0 0 4294967295', pid1='process_api',
                 apparmor=None, securityfs=False, env=None):
        self.root = tmp_path / 'root'
        self.proc = tmp_path / 'proc'
        self.sys = tmp_path / 'sys'
        for path in (self.root, self.proc / 'self', self.proc / '1', self.sys):
            path.mkdir(parents=True, exist_ok=True)
        (self.proc / 'self' / 'status').write_text('Name:\tpython3\nUid:\t%d\t%d\t%d\t%d\nCapEff:\t%s\n'
                                                   % (uid, uid, uid, uid, cap_eff))
        (self.proc / 'self' / 'uid_map').write_text('         %s\n' % uid_map)
        (self.proc / '1' / 'comm').write_text(pid1 + '\n')
        if apparmor is not None:
            self.write_sys('module/apparmor/parameters/enabled', apparmor + '\n')
        if securityfs:
            (self.sys / 'kernel' / 'security' / 'apparmor').mkdir(parents=True)
        self.write('/usr/share/containers/containers.conf', DEBIAN_DEFAULT_CONF)
        self.env = {'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'HOME': '/root'}
        self.env.update(env or {})

    def write(self, path, text):
        target = self.root / path.lstrip('/')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def write_sys(self, relative, text):
        target = self.sys / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def ctx(self, fake):
        runner = CommandRunner()
        runner.env = dict(self.env)
        return AuditContext(root=str(self.root), live=True, proc_root=str(self.proc), sys_root=str(self.sys),
                            kernel_release='6.12.1', run_command=fake, runner=runner,
                            which={'podman': PODMAN, 'runuser': '/usr/sbin/runuser'}.get, euid=0)


def facts(host, fake=None, user=None):
    fake = fake or FakePodman()
    found = podman.PodmanCli(host.ctx(fake), user).facts()
    return found, fake


def test_this_machines_podman_without_podman_info(tmp_path):
    """The host podman-info.txt was recorded on: every field as podman info said it, none asked of it."""
    found, fake = facts(Host(tmp_path))
    assert (found['version'], found['rootless'], found['apparmor_enabled'], found['event_logger']) == \
        ('4.3.1', False, False, 'file')
    assert fake.asked('info') == 0 and fake.asked('--version') == 1
    assert found['sources'] == {
        'version': 'podman --version',
        'rootless': 'podman runs as uid 0 (rootless when that is not 0)',
        'apparmor_enabled': 'no AppArmor for podman: %s/module/apparmor/parameters/enabled absent' % (tmp_path / 'sys'),
        'event_logger': "podman's default: PID 1 is process_api, not systemd"}


@pytest.mark.parametrize('version, files, env, expected', [
    # /etc wins over /usr/share, a drop-in over /etc, the last drop-in by name (config.go:732-760).
    ('4.3.1', {'/etc/containers/containers.conf': '[engine]\nevents_logger = "journald"\n'}, {}, 'journald'),
    ('4.3.1', {'/etc/containers/containers.conf': '[engine]\nevents_logger = "journald"\n',
               '/etc/containers/containers.conf.d/10-a.conf': '[engine]\nevents_logger = "none"\n',
               '/etc/containers/containers.conf.d/20-b.conf': '[engine]\nevents_logger = "file"\n',
               '/etc/containers/containers.conf.d/30-c.txt': '[engine]\nevents_logger = "journald"\n'}, {}, 'file'),
    # CONTAINERS_CONF: that file alone (config.go:735-741).
    ('4.3.1', {'/etc/containers/containers.conf': '[engine]\nevents_logger = "journald"\n',
               '/srv/c.conf': '[containers]\n'}, {'CONTAINERS_CONF': '/srv/c.conf'}, 'file'),
    # Root's own file: 4.3.1 reads it only rootless (config_linux.go:36-45), 5.x always (new.go:176-184).
    ('4.3.1', {'/srv/xdg/containers/containers.conf': '[engine]\nevents_logger = "none"\n'},
     {'XDG_CONFIG_HOME': '/srv/xdg'}, 'file'),
    ('5.4.2', {'/srv/xdg/containers/containers.conf': '[engine]\nevents_logger = "none"\n'},
     {'XDG_CONFIG_HOME': '/srv/xdg'}, 'none'),
    ('5.4.2', {'/root/.config/containers/containers.conf.d/x.conf': '[engine]\nevents_logger = "none"\n'}, {}, 'none'),
    # CONTAINERS_CONF_OVERRIDE: last in 5.x (new.go:102-108), unknown to 4.3.1.
    ('5.4.2', {'/etc/containers/containers.conf': '[engine]\nevents_logger = "journald"\n',
               '/srv/o.conf': '[engine]\nevents_logger = "none"\n'}, {'CONTAINERS_CONF_OVERRIDE': '/srv/o.conf'}, 'none'),
    ('4.3.1', {'/etc/containers/containers.conf': '[engine]\nevents_logger = "journald"\n',
               '/srv/o.conf': '[engine]\nevents_logger = "none"\n'}, {'CONTAINERS_CONF_OVERRIDE': '/srv/o.conf'}, 'journald'),
    # BurntSushi/toml matches names regardless of case; podman names the logger in lower case.
    ('4.3.1', {'/etc/containers/containers.conf': '[ENGINE]\nEvents_Logger = "None"\n'}, {}, 'none'),
    # A key of a sub-table is not [engine]'s.
    ('4.3.1', {'/etc/containers/containers.conf': '[engine.runtimes]\nevents_logger = ["none"]\n'}, {}, 'file'),
])
def test_events_logger_from_containers_conf_in_podmans_order(tmp_path, version, files, env, expected):
    host = Host(tmp_path, env=env)
    for path, text in files.items():
        host.write(path, text)
    found, fake = facts(host, FakePodman('podman version %s\n' % version))
    assert found['event_logger'] == expected and fake.asked('info') == 0, found['sources']


@pytest.mark.parametrize('setup, why', [
    (dict(pid1='systemd', journal=True), 'depends on whether podman was built with systemd'),
    (dict(conf='[engine]\nevents_logger = "journald"\n[Engine]\nevents_logger = "file"\n'), 'more than one [engine]'),
    (dict(conf='[engine]\nevents_logger = "journald"\nEVENTS_LOGGER = "file"\n'), 'sets events_logger more than once'),
    (dict(conf='[engine]\nevents_logger = "syslog"\n'), "events_logger = 'syslog'"),
    (dict(conf='[engine\nnot toml'), 'is not TOML'),
    (dict(conf='[engine]\nremote = true\n'), 'sets remote'),
    (dict(env={'CONTAINER_HOST': 'unix:///run/other.sock'}), 'podman talks to another podman'),
    (dict(env={'_CONTAINERS_USERNS_CONFIGURED': 'done'}), "_CONTAINERS_USERNS_CONFIGURED is set in podman's environment"),
    (dict(version='podman version 4.9.3\n'), 'podman 4.9.3: how this version reads containers.conf was not read'),
    (dict(version='podman version 5.7.0\n'), 'podman 5.7.0'),
    (dict(version='podman-remote version 5.4.2\nextra\n'), 'not "podman version X"'),
    (dict(apparmor='Y', securityfs=True, cap_eff='0000000000000000'), 'root without CAP_SYS_ADMIN'),
])
def test_anything_not_certain_asks_podman_info(tmp_path, setup, why):
    host = Host(tmp_path, pid1=setup.get('pid1', 'process_api'), env=setup.get('env'),
                apparmor=setup.get('apparmor'), securityfs=setup.get('securityfs', False),
                cap_eff=setup.get('cap_eff', FULL_CAPS))
    if setup.get('journal'):
        (host.root / 'var' / 'log' / 'journal' / ('a' * 32)).mkdir(parents=True)
    if 'conf' in setup:
        host.write('/etc/containers/containers.conf', setup['conf'])
    found, fake = facts(host, FakePodman(setup.get('version', 'podman version 4.3.1\n')))
    assert fake.asked('info') == 1
    assert (found['version'], found['event_logger'], found['apparmor_enabled']) == ('4.3.1', 'journald', True)
    assert found['sources']['event_logger'] == 'podman info --format json'
    assert why in found['sources']['why_podman_info']


def test_a_failing_version_or_no_toml_reader_asks_podman_info(tmp_path, monkeypatch):
    found, fake = facts(Host(tmp_path), FakePodman(fail={'--version': (125, '', 'Error: something\n')}))
    assert fake.asked('info') == 1 and 'podman --version failed (rc 125): Error: something' in found['sources']['why_podman_info']
    monkeypatch.setitem(sys.modules, 'tomllib', None)
    found, fake = facts(Host(tmp_path / 'b'))
    assert fake.asked('info') == 1 and 'no TOML reader' in found['sources']['why_podman_info']


def test_a_systemd_host_without_a_journal_defaults_to_file(tmp_path):
    found, fake = facts(Host(tmp_path, pid1='systemd'))
    assert found['event_logger'] == 'file' and fake.asked('info') == 0


@pytest.mark.parametrize('setup, enabled, words', [
    # supported.go:43-53 and runc's isEnabled: kernel flag, securityfs, not rootless, a parser.
    (dict(apparmor='Y', securityfs=True, parser='/sbin/apparmor_parser'), True, '/sbin/apparmor_parser present'),
    (dict(apparmor='Y', securityfs=True, parser='/usr/local/bin/apparmor_parser'), True, '/usr/local/bin/apparmor_parser'),
    (dict(apparmor='Y', securityfs=True), False, 'no apparmor_parser'),
    (dict(apparmor='Y', securityfs=True, parser='/usr/local/bin/apparmor_parser', mode=0o644), False, 'no apparmor_parser'),
    (dict(apparmor='Y', securityfs=False, parser='/sbin/apparmor_parser'), False, 'kernel/security/apparmor absent'),
    (dict(apparmor='N', securityfs=True, parser='/sbin/apparmor_parser'), False, 'enabled = N'),
    (dict(apparmor='Y', securityfs=True, parser='/sbin/apparmor_parser', uid_map='0 100000 65536'), False,
     'root in a user namespace'),
])
def test_apparmor_as_podman_decides_it(tmp_path, setup, enabled, words):
    host = Host(tmp_path, apparmor=setup['apparmor'], securityfs=setup['securityfs'],
                uid_map=setup.get('uid_map', '0 0 4294967295'), env={'PATH': '/usr/local/bin:/usr/bin'})
    if 'parser' in setup:
        host.write(setup['parser'], '#!/bin/sh\n')
        os.chmod(str(host.root / setup['parser'].lstrip('/')), setup.get('mode', 0o755))
    found, fake = facts(host)
    assert found['apparmor_enabled'] is enabled and words in found['sources']['apparmor_enabled']
    assert fake.asked('info') == 0


def test_another_users_podman_is_rootless_and_reads_that_users_files(tmp_path, monkeypatch):
    class Entry(object):
        pw_uid, pw_dir = 1000, '/home/alice'
    monkeypatch.setattr(podman_facts.pwd, 'getpwnam', lambda name: Entry)
    host = Host(tmp_path, apparmor='Y', securityfs=True)
    host.write('/sbin/apparmor_parser', '')
    host.write('/home/alice/.config/containers/containers.conf', '[engine]\nevents_logger = "none"\n')
    found, fake = facts(host, user='alice')
    assert (found['rootless'], found['apparmor_enabled'], found['event_logger']) == (True, False, 'none')
    assert found['sources']['rootless'] == 'podman runs as uid 1000 (rootless when that is not 0)'
    assert fake.calls[0][:4] == ['/usr/sbin/runuser', '-u', 'alice', '--']


def test_a_timed_out_command_is_not_run_again_in_the_run(tmp_path):
    """Both podman detections ask the same podman: a hung one costs one command_timeout."""
    fake = FakePodman(fail={'ps': CommandTimeout('podman ps --all --format json did not finish within 2 s (command_timeout)')})
    cli = podman.PodmanCli(Host(tmp_path).ctx(fake))
    for _detection in range(2):
        with pytest.raises(CommandTimeout, match='did not finish within 2 s'):
            cli.containers()
    assert fake.asked('ps') == 1
    with pytest.raises(CommandTimeout, match='not run again'):
        cli.containers()


def test_a_command_the_used_up_budget_kept_from_starting_is_run_next_time(tmp_path):
    """Only a command that ran out of its own time is remembered: one the detection's used-up
    budget kept from starting is asked again by the next detection, which has a budget of its own."""
    used_up = CommandTimeout('podman --version was not run: the detection time budget of 0 s (detection_timeout) is used up')
    fake = FakePodman(fail={'--version': used_up})
    ctx = Host(tmp_path).ctx(fake)
    cli = podman.PodmanCli(ctx)
    with ctx.runner.budget(0):
        with pytest.raises(CommandTimeout):
            cli.facts()
    del fake.fail['--version']
    assert cli.facts()['version'] == '4.3.1' and fake.asked('--version') == 2
