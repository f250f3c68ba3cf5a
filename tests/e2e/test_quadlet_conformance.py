"""Round trip through the real Quadlet generator: no option lost, changed or added.

Real: podman 5.4.2's own option list (``podman --help`` and ``podman run --help`` of the podman
5.4.2 in the Debian 13 image scripts/setup-podman.sh builds), and podman 5.4.2's Quadlet
generator (scripts/setup-quadlet.sh). Each case is a recorded CreateCommand (``podman run``
as podman 5.4.2 would record it); this host's podman is 4.3.1, which lacks most of these
options, so the containers themselves are not created here (tests/e2e/test_quadlet_real.py
converts real 4.3.1 containers, and roles/podman_quadlet/molecule runs a unit under systemd).
The unit is built, the generator turns it into a service, and the ExecStart= it writes, read
the way systemd runs it, is compared with the CreateCommand option by option.
"""
import os
import subprocess
import sys

import pytest

from helpers import BUILD, read_env_file

sys.path.insert(0, os.path.join(BUILD, 'collections'))

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_check  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert  # noqa: E402

GENERATOR = os.path.join(BUILD, 'quadlet', 'usr', 'libexec', 'podman', 'quadlet')
VERSION = (5, 4, 2)
HOSTILE = 'a b\t"q" \'s\' %h $HOME ${X} ,; \\ ünï\ncode'

# A value for every option of the key table: (option, value, the line the unit must have).
KEYED = {
    '--add-host': ('db.local:10.0.0.2', 'AddHost=db.local:10.0.0.2'),
    '--annotation': ('team=ops', 'Annotation=team=ops'),
    '--cap-add': ('NET_ADMIN', 'AddCapability=NET_ADMIN'),
    '--cap-drop': ('MKNOD', 'DropCapability=MKNOD'),
    '--cgroups': ('enabled', 'CgroupsMode=enabled'),
    '--device': ('/dev/null:/dev/mynull', 'AddDevice=/dev/null:/dev/mynull'),
    '--dns': ('10.0.0.53', 'DNS=10.0.0.53'),
    '--dns-option': ('ndots:2', 'DNSOption=ndots:2'),
    '--dns-search': ('lab.example', 'DNSSearch=lab.example'),
    '--entrypoint': ('/bin/sh', 'Entrypoint=/bin/sh'),
    '--env': ('MODE=prod', 'Environment=MODE=prod'),
    '--env-file': ('/etc/web.env', 'EnvironmentFile=/etc/web.env'),
    '--env-host': ('true', 'EnvironmentHost=true'),
    '--expose': ('8000-8010/udp', 'ExposeHostPort=8000-8010/udp'),
    '--gidmap': ('0:300000:65536', 'GIDMap=0:300000:65536'),
    '--group-add': ('keep-groups', 'GroupAdd=keep-groups'),
    '--health-cmd': ('curl -f http://localhost/', 'HealthCmd=curl -f http://localhost/'),
    '--health-interval': ('30s', 'HealthInterval=30s'),
    '--health-log-destination': ('/var/log/web-health', 'HealthLogDestination=/var/log/web-health'),
    '--health-max-log-count': ('9', 'HealthMaxLogCount=9'),
    '--health-max-log-size': ('1000', 'HealthMaxLogSize=1000'),
    '--health-on-failure': ('restart', 'HealthOnFailure=restart'),
    '--health-retries': ('4', 'HealthRetries=4'),
    '--health-start-period': ('10s', 'HealthStartPeriod=10s'),
    '--health-startup-cmd': ('test -e /ready', 'HealthStartupCmd=test -e /ready'),
    '--health-startup-interval': ('2s', 'HealthStartupInterval=2s'),
    '--health-startup-retries': ('5', 'HealthStartupRetries=5'),
    '--health-startup-success': ('2', 'HealthStartupSuccess=2'),
    '--health-startup-timeout': ('3s', 'HealthStartupTimeout=3s'),
    '--health-timeout': ('5s', 'HealthTimeout=5s'),
    '--hostname': ('web-1', 'HostName=web-1'),
    '--init': ('true', 'RunInit=true'),
    '--ip': ('10.88.0.7', 'IP=10.88.0.7'),
    '--ip6': ('fd00::7', 'IP6=fd00::7'),
    '--label': ('app=web', 'Label=app=web'),
    '--log-driver': ('journald', 'LogDriver=journald'),
    '--log-opt': ('tag=web', 'LogOpt=tag=web'),
    '--mount': ('type=bind,source=/srv,destination=/srv,ro=true', 'Mount=type=bind,source=/srv,destination=/srv,ro=true'),
    '--network': ('host', 'Network=host'),
    '--network-alias': ('www', 'NetworkAlias=www'),
    '--pids-limit': ('200', 'PidsLimit=200'),
    '--publish': ('127.0.0.1:8080:80/tcp', 'PublishPort=127.0.0.1:8080:80/tcp'),
    '--pull': ('never', 'Pull=never'),
    '--read-only': ('true', 'ReadOnly=true'),
    '--read-only-tmpfs': ('false', 'ReadOnlyTmpfs=false'),
    '--secret': ('token,type=env,target=TOKEN', 'Secret=token,type=env,target=TOKEN'),
    '--shm-size': ('128m', 'ShmSize=128m'),
    '--stop-signal': ('SIGINT', 'StopSignal=SIGINT'),
    '--stop-timeout': ('30', 'StopTimeout=30'),
    '--subgidname': ('web', 'SubGIDMap=web'),
    '--subuidname': ('web', 'SubUIDMap=web'),
    '--sysctl': ('net.ipv4.ip_forward=1', 'Sysctl=net.ipv4.ip_forward=1'),
    '--tmpfs': ('/run:size=16m', 'Tmpfs=/run:size=16m'),
    '--tz': ('Europe/Berlin', 'Timezone=Europe/Berlin'),
    '--uidmap': ('0:300000:65536', 'UIDMap=0:300000:65536'),
    '--ulimit': ('nofile=1024:2048', 'Ulimit=nofile=1024:2048'),
    '--userns': ('auto', 'UserNS=auto'),
    '--volume': ('/srv/data:/data:ro,Z', 'Volume=/srv/data:/data:ro,Z'),
    '--workdir': ('/app', 'WorkingDir=/app'),
}
SECURITY = [
    ('no-new-privileges', 'NoNewPrivileges=true'),
    ('label=disable', 'SecurityLabelDisable=true'),
    ('label=nested', 'SecurityLabelNested=true'),
    ('label=type:spc_t', 'SecurityLabelType=spc_t'),
    ('label=filetype:container_file_t', 'SecurityLabelFileType=container_file_t'),
    ('label=level:s0:c1,c2', 'SecurityLabelLevel=s0:c1,c2'),
    ('seccomp=/etc/seccomp.json', 'SeccompProfile=/etc/seccomp.json'),
    ('mask=/proc/acpi', 'Mask=/proc/acpi'),
    ('unmask=ALL', 'Unmask=ALL'),
]
# Options without a key: PodmanArgs, exactly.
UNKEYED = [
    ['--gpus', 'all'], ['--volumes-from', 'other:ro'], ['--pidfile', '/run/web.pid'], ['-P'], ['--rmi'],
    ['-i'], ['-t'], ['--privileged'], ['--privileged=false'], ['--memory', '64m'], ['--conmon-pidfile', '/run/c.pid'],
    ['--env-merge', 'PATH=${PATH}:/opt'], ['--security-opt', 'apparmor=unconfined'], ['--no-healthcheck'],
    ['--systemd', 'always'], ['--http-proxy=false'], ['--timeout', '60'], ['--chrootdirs', '/srv/chroot'],
]


@pytest.fixture(scope='module')
def specs():
    image = read_env_file('podman.env').get('POSTMORTEM_PODMAN13_IMAGE')
    if not (image and os.path.exists(GENERATOR)):
        pytest.fail('no podman 5.4.2 image or Quadlet generator: run `make test-env`')
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf'))

    def read_help(args):
        proc = subprocess.run(['podman', 'run', '--rm', '--network', 'none', image, 'podman'] + args + ['--help'],
                              env=env, capture_output=True, text=True, timeout=120, check=True)
        return proc.stdout
    version = subprocess.run(['podman', 'run', '--rm', '--network', 'none', image, 'podman', '--version'], env=env,
                             capture_output=True, text=True, timeout=120, check=True).stdout
    assert '5.4.2' in version
    return options.specs_for('5.4.2', read_help)


def container(argv, env=(), mounts=()):
    return podman.Container({
        'Id': 'c0ffee' * 10 + 'abcd', 'Name': 'web', 'State': {'Status': 'exited'},
        'HostConfig': {'RestartPolicy': {'Name': 'always', 'MaximumRetryCount': 0}},
        'Config': {'CreateCommand': argv, 'Env': list(env), 'Image': 'localhost/web:1'}, 'Mounts': list(mounts)})


def round_trip(specs, argv, env=()):
    """(unit text, generated ExecStart argv, differences)."""
    subject = container(argv, env)
    text, _notes, _source = quadlet_convert.build(subject, VERSION, specs=specs, version_text='5.4.2')
    ok, generated, messages = quadlet.dry_run(GENERATOR, 'web.container', text)
    assert ok, ('the generator rejected the unit', messages, text)
    line = [l for l in generated.splitlines() if l.startswith('ExecStart=')][0]
    produced = quadlet_check.exec_argv(line)
    env_values = dict(e.split('=', 1) for e in env)
    return text, produced, quadlet_check.compare(argv, produced, specs, env_values=env_values, container=subject)


def run_argv(*args):
    return ['/usr/bin/podman', 'run', '-d', '--name', 'web', '--restart', 'always'] + list(args) + [
        'localhost/web:1', 'sh', '-c', 'exec sleep 1000']


@pytest.mark.parametrize('option', sorted(KEYED))
def test_every_keyed_option_round_trips_through_its_key(specs, option):
    value, line = KEYED[option]
    kind = specs[1].kind(option)
    argv = run_argv(option if kind == 'flag' and value == 'true' else '%s=%s' % (option, value))
    text, _produced, differences = round_trip(specs, argv)
    assert differences == [], (differences, text)
    assert line in text.splitlines(), text
    assert 'PodmanArgs' not in text, text


@pytest.mark.parametrize('value,line', SECURITY)
def test_security_options_with_keys(specs, value, line):
    text, _produced, differences = round_trip(specs, run_argv('--security-opt', value))
    assert differences == [] and line in text.splitlines(), (differences, text)


@pytest.mark.parametrize('tokens', UNKEYED, ids=' '.join)
def test_options_without_a_key_go_to_podman_args_exactly(specs, tokens):
    text, _produced, differences = round_trip(specs, run_argv(*tokens))
    assert differences == [], (differences, text)
    assert 'PodmanArgs=' in text


@pytest.mark.parametrize('tokens,line', [
    (['--read-only=false'], 'ReadOnly=false'),
    (['--init=false'], 'RunInit=false'),
    (['--env-host=false'], 'EnvironmentHost=false'),
    (['--read-only-tmpfs'], 'ReadOnlyTmpfs=true'),
    (['--sdnotify=container'], 'Notify=true'),
    (['--sdnotify=healthy', '--health-cmd', 'true'], 'Notify=healthy'),
    (['-u', 'app:staff'], 'Group=staff'),
    (['--net', 'none'], 'Network=none'),
    (['--dns-opt', 'ndots:1'], 'DNSOption=ndots:1'),
    (['-dit', '-p8080:80', '-eA=1'], 'PublishPort=8080:80'),
])
def test_booleans_aliases_and_short_forms(specs, tokens, line):
    text, _produced, differences = round_trip(specs, run_argv(*tokens))
    assert differences == [] and line in text.splitlines(), (differences, text)


def test_global_options_and_modules(specs):
    argv = ['/usr/bin/podman', '--module', 'extra.conf', '--imagestore', '/srv/images', '--log-level=info', '--syslog',
            'run', '--name', 'web', 'localhost/web:1']
    text, produced, differences = round_trip(specs, argv)
    assert differences == [], (differences, text)
    assert 'ContainersConfModule=extra.conf' in text and 'GlobalArgs=--imagestore=/srv/images' in text
    assert produced.index('--imagestore=/srv/images') < produced.index('run')


def test_rootfs_container(specs):
    argv = ['/usr/bin/podman', 'run', '--name', 'web', '--rootfs', '/srv/rootfs', 'sh', '-c', 'sleep 9']
    text, _produced, differences = round_trip(specs, argv)
    assert differences == [] and 'Rootfs=/srv/rootfs' in text and 'Image=' not in text, (differences, text)


@pytest.mark.parametrize('option', ['--hostname', '--env', '--label', '--annotation', '--health-cmd', '--volume',
                                    '--network-alias', '--cap-add', '--log-opt', '--mount', '--secret', '--workdir',
                                    '--entrypoint', '--user', '--add-host', '--tmpfs', '--memory'])
def test_hostile_values_survive_every_kind_of_key(specs, option):
    value = {'--env': 'X=' + HOSTILE, '--label': 'k=' + HOSTILE, '--annotation': 'k=' + HOSTILE,
             '--volume': '/srv/%s x:/d' % HOSTILE.replace('\n', ''),
             '--mount': 'type=tmpfs,"destination=/a,b %h"', '--secret': 's,target=/run/%h $x'}.get(option, HOSTILE)
    argv = run_argv('%s=%s' % (option, value))
    text, _produced, differences = round_trip(specs, argv)
    assert differences == [], (differences, text)


def test_hostile_command_arguments_and_image(specs):
    argv = ['/usr/bin/podman', 'run', '--name', 'web', 'localhost/web:1', 'printf', '%s\n', HOSTILE, '$$', '%%', "'"]
    text, produced, differences = round_trip(specs, argv)
    assert differences == [], (differences, text)
    assert produced[-5:] == ['%s\n', HOSTILE, '$$', '%%', "'"]


def test_environment_from_the_shell_and_duplicates(specs):
    argv = run_argv('-e', 'TOKEN', '-e', 'A=1', '--env', 'A=2', '--hostname', 'first', '--hostname', 'second')
    text, _produced, differences = round_trip(specs, argv, env=['TOKEN=s3cret', 'A=2'])
    assert differences == [], (differences, text)
    assert 'Environment=TOKEN=s3cret' in text


def test_the_comparison_catches_what_was_wrong_before(specs):
    """The defects the issue measured, fed to the comparison directly: each must be reported."""
    original = run_argv('--read-only=false', '--sdnotify=container', '--mount', 'type=bind,src=/a,"dst=/p,1"')
    wrong = ['/usr/bin/podman', 'run', '--name', 'web', '--cidfile=%t/%N.cid', '--replace', '--rm', '--cgroups=split',
             '--sdnotify=conmon', '-d', '--read-only', '--mount', 'type=bind,src=/a,dst=/p,1', 'localhost/web:1',
             'sh', '-c', 'exec sleep 1000']
    differences = quadlet_check.compare(original, wrong, specs)
    assert any(d.startswith('changed --read-only') for d in differences), differences
    assert any(d.startswith('lost --sdnotify') for d in differences), differences
    assert any(d.startswith('changed --mount') for d in differences), differences
