"""Building Quadlet units from podman inspect: keys per podman version, PodmanArgs, refusals.

Inspect data is the recorded 4.3.1 output (tests/unit/fixtures/podman) with
CreateCommand lines changed per case; podman's options are the recorded --help of
podman 5.4.2 and 4.3.1 (same folder). The units are validated with the real Quadlet
generator (podman 5.4.2) in tests/e2e/test_quadlet_real.py and
tests/e2e/test_quadlet_conformance.py, and really run under systemd in
roles/podman_quadlet/molecule.
"""
import copy
import json
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert

from ....helpers.paths import FIXTURES_DIR

FIXTURES = os.path.join(FIXTURES_DIR, 'podman')


def mapped(create_command=None, policy='always', retries=0, mounts=None):
    with open(os.path.join(FIXTURES, 'inspect-mapped.json')) as handle:
        data = copy.deepcopy(json.load(handle)[0])
    if create_command is not None:
        data['Config']['CreateCommand'] = create_command
    data['HostConfig']['RestartPolicy'] = {'Name': policy, 'MaximumRetryCount': retries}
    if mounts is not None:
        data['Mounts'] = mounts
    return podman.Container(data)


def specs(version='5.4.2'):
    def read(name):
        with open(os.path.join(FIXTURES, '%s-help-%s.txt' % (name, version))) as handle:
            return options.parse_help(handle.read())
    return read('global'), read('run')


def build(container, version=(5, 4, 2), **kwargs):
    kwargs.setdefault('specs', specs())
    text, notes, source = quadlet_convert.build(container, version, **kwargs)
    return text, notes, source


def lines(text):
    return [line for line in text.splitlines() if line and not line.startswith('#')]


def test_recorded_mapped_container_becomes_the_write_ups_unit():
    text, notes, source = build(mapped())
    assert source == 'CreateCommand'
    body = lines(text)
    for expected in ('ContainerName=mapped', 'Image=localhost/debian:12', 'Exec=sleep 4', 'UIDMap=0:200000:65536',
                     'GIDMap=0:200000:65536', 'Restart=always', 'RestartSec=1', 'StartLimitIntervalSec=0',
                     'WantedBy=default.target'):
        assert expected in body
    assert '--restart' not in text and 'PodmanArgs' not in text
    assert build(mapped())[0] == text  # deterministic: a second run compares equal


def test_uidmap_before_podman_4_8_goes_to_podman_args_and_is_listed():
    text, notes, _source = build(mapped(), version=(4, 6, 2))
    assert 'UIDMap=' not in text
    assert 'PodmanArgs=--uidmap=0:200000:65536\nPodmanArgs=--gidmap=0:200000:65536' in text
    assert any('no UIDMap= (needs 4.8)' in n for n in notes)


def test_podman_4_4_carries_options_without_a_key_in_podman_args():
    # PodmanArgs= is in podman 4.4.0's supportedContainerKeys (pkg/systemd/quadlet/quadlet.go @ v4.4.0).
    text, notes, _source = build(mapped(), version=(4, 4, 1), specs=specs('4.3.1'))
    assert 'PodmanArgs=--uidmap=0:200000:65536' in text


def test_restart_policies():
    assert 'Restart=on-failure' in build(mapped(policy='on-failure'))[0]
    text, notes, _source = build(mapped(policy='on-failure', retries=3))
    assert 'StartLimitIntervalSec=0' not in text and any('on-failure:3' in n for n in notes)
    text, notes, _source = build(mapped(policy='unless-stopped'))
    assert 'Restart=always' in text
    text, notes, _source = build(mapped(policy='no'))
    assert 'Restart=' not in text and any('does not restart' in n for n in notes)


def test_every_listed_option_kind():
    argv = ['podman', '--syslog', 'run', '-d', '--name', 'web', '-p', '8080:80', '--publish=127.0.0.1:9090:90/udp',
            '-v', '/srv/web:/data:Z', '--mount', 'type=tmpfs,destination=/cache', '-e', 'A=b c', '--env=PCT=100%',
            '-l', 'app=web', '--network', 'none', '-u', '1000:1000', '--cap-add', 'NET_ADMIN', '--cap-drop=MKNOD',
            '--device', '/dev/ttyUSB0', '--memory', '64m', '--read-only', '--rm', '--cidfile', '/run/x.cid',
            '--restart', 'always', 'localhost/web:1', 'sh', '-c', 'echo $HOME "a b"']
    text, notes, _source = build(mapped(argv))
    body = lines(text)
    for expected in ('PublishPort=8080:80', 'PublishPort=127.0.0.1:9090:90/udp', 'Volume=/srv/web:/data:Z',
                     'Mount=type=tmpfs,destination=/cache', 'Environment="A=b c"', 'Environment=PCT=100%%',
                     'Label=app=web', 'Network=none', 'User=1000', 'Group=1000', 'AddCapability=NET_ADMIN',
                     'DropCapability=MKNOD', 'AddDevice=/dev/ttyUSB0', 'ReadOnly=true', 'Image=localhost/web:1',
                     'Exec=sh -c "echo $$HOME \\"a b\\""', 'GlobalArgs=--syslog', 'PodmanArgs=--memory=64m'):
        assert expected in body, (expected, body)
    joined = '\n'.join(notes)
    assert '--rm dropped' in joined and '--cidfile' in joined


def test_booleans_keep_their_value_and_new_keys_are_used():
    argv = ['podman', '--module', 'extra.conf', '--imagestore', '/srv/images', 'run', '--read-only=false',
            '--init=false', '--sdnotify=healthy', '--network-alias', 'web', '--health-on-failure', 'restart',
            '--health-cmd', 'true', '-dit', '--volumes-from', 'other', '-P', '--rmi', 'img']
    text, notes, _source = build(mapped(argv))
    body = lines(text)
    for expected in ('ReadOnly=false', 'RunInit=false', 'Notify=healthy', 'NetworkAlias=web', 'HealthOnFailure=restart',
                     'HealthCmd=true', 'ContainersConfModule=extra.conf', 'GlobalArgs=--imagestore=/srv/images',
                     'PodmanArgs=--interactive', 'PodmanArgs=--tty', 'PodmanArgs=--volumes-from=other', 'PodmanArgs=--publish-all',
                     'PodmanArgs=--rmi'):
        assert expected in body, (expected, body)
    assert 'ReadOnly=true' not in text and 'RunInit=true' not in text


def test_keys_a_podman_version_does_not_have_go_to_podman_args():
    argv = ['podman', 'run', '--network-alias', 'web', '--stop-signal', 'SIGINT', '--add-host', 'db:10.0.0.2', 'img']
    text, notes, _source = build(mapped(argv), version=(5, 1, 0))
    assert 'PodmanArgs=--network-alias=web' in text and 'PodmanArgs=--stop-signal=SIGINT' in text
    assert any('no NetworkAlias= (needs 5.2)' in n for n in notes) and any('no AddHost= (needs 5.3)' in n for n in notes)
    with pytest.raises(quadlet.ConversionProblem, match='GlobalArgs'):
        build(mapped(['podman', '--root', '/x', 'run', 'img']), version=(4, 7, 0))


def test_values_each_key_cannot_hold_go_to_podman_args_exactly():
    argv = ['podman', 'run', '--hostname', 'a\nb', '--workdir', ' /lead', '--cap-add', 'a b"c', '-v', 'x.volume:/d',
            '--network', 'front.network', '--mount', 'type=volume,dst=/anon', '--expose', '80/sctp', '--user', '"q"',
            '--label', 'k=line\nbreak', 'img']
    text, notes, _source = build(mapped(argv))
    body = lines(text)
    for expected in ('PodmanArgs="--hostname=a\\nb"', 'PodmanArgs="--workdir= /lead"', 'PodmanArgs="--cap-add=a b\\"c"',
                     'PodmanArgs=--volume=x.volume:/d', 'PodmanArgs=--network=front.network',
                     'PodmanArgs=--mount=type=volume,dst=/anon', 'PodmanArgs=--expose=80/sctp',
                     'PodmanArgs="--user=\\"q\\""', 'Label="k=line\\nbreak"'):
        assert expected in body, (expected, body)


@pytest.mark.parametrize('argv, message', [
    (['podman', 'run', '--frobnicate', 'x', 'img'], r'--frobnicate is not an option of podman 5.4.2 run \(podman run --help\)'),
    (['podman', 'run', '--pod', 'p1', 'img'], 'pod'),
    (['podman', 'run', '-e', 'FROM_SHELL', 'img'], 'environment of the shell'),
    (['podman', 'run', '--name', 'x'], 'names no image'),
    (['podman', 'run', '--name'], '--name has no value'),
    (['podman', 'run', '--init=maybe', 'img'], 'on/off flag'),
    (['podman', 'run', '--sdnotify=ignore', 'img'], 'Type=notify'),
    (['podman', 'run', '-v', './data:/d', 'img'], 'relative to the directory podman ran in'),
    (['podman', 'images'], 'not a podman run/create'),
])
def test_refusals_name_the_reason(argv, message):
    with pytest.raises(quadlet.ConversionProblem, match=message):
        build(mapped(argv), version_text='5.4.2')


def test_a_relative_bind_source_is_made_absolute_from_inspect():
    container = mapped(['podman', 'run', '-v', './data:/d:ro', 'img'],
                       mounts=[{'Type': 'bind', 'Source': '/home/ops/data', 'Destination': '/d'}])
    assert 'Volume=/home/ops/data:/d:ro' in build(container)[0]


def test_without_podman_options_a_create_command_is_not_guessed():
    with pytest.raises(quadlet.ConversionProblem, match='podman --help'):
        quadlet_convert.build(mapped(), (5, 4, 2))


def test_the_options_of_older_podman_come_from_its_own_help():
    global_spec, run_spec = specs('4.3.1')
    assert run_spec.kind('--init') == 'flag' and run_spec.kind('--name') == 'value'
    assert run_spec.kind('--health-on-failure') == 'value' and run_spec.kind('--sdnotify') == 'value'
    assert global_spec.kind('--syslog') == 'flag' and global_spec.kind('--imagestore') is None
    assert run_spec.canonical('-p') == '--publish' and run_spec.canonical('--net') == '--network'


def test_env_without_value_uses_what_the_container_got():
    container = mapped(['podman', 'run', '-e', 'TOKEN', 'img'])
    container.raw['Config']['Env'] = ['TOKEN=from-shell', 'PATH=/bin']
    assert 'Environment=TOKEN=from-shell' in build(container)[0]


def test_api_created_container_is_built_from_the_fields():
    container = mapped([], mounts=[{'Type': 'bind', 'Source': '/srv/a', 'Destination': '/a', 'RW': False},
                                   {'Type': 'volume', 'Name': 'named', 'Destination': '/v', 'RW': True}])
    container.raw['Config'].update({'Env': ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
                                            'container=podman', 'MODE=prod'],
                                    'Cmd': ['sleep', '4'], 'Entrypoint': '', 'User': 'app',
                                    'Labels': {'from-image': '1', 'team': 'ops'}})
    container.raw['HostConfig'].update({'PortBindings': {'80/tcp': [{'HostIp': '', 'HostPort': '8080'}]},
                                        'NetworkMode': 'bridge', 'CapAdd': ['CAP_NET_RAW'], 'SecurityOpt': []})
    image_config = {'Env': [], 'Cmd': ['/bin/sh'], 'Labels': {'from-image': '1'}}
    text, notes, source = build(container, image_config=image_config)
    body = lines(text)
    assert source == 'inspect' and any('no CreateCommand' in n for n in notes)
    for expected in ('Environment=MODE=prod', 'Label=team=ops', 'PublishPort=8080:80', 'Volume=/srv/a:/a:ro',
                     'Volume=named:/v', 'AddCapability=CAP_NET_RAW', 'User=app', 'Exec=sleep 4',
                     'UIDMap=0:200000:65536'):
        assert expected in body, (expected, body)
    assert 'container=podman' not in text and 'from-image' not in text and 'Network=' not in text
    assert '--entrypoint' not in text


def test_anonymous_volumes_are_kept_by_name():
    anon = 'a' * 64
    container = mapped(['podman', 'run', '-v', 'named:/v', 'img'],
                       mounts=[{'Type': 'volume', 'Name': 'named', 'Destination': '/v'},
                               {'Type': 'volume', 'Name': anon, 'Destination': '/var/lib/data'}])
    text, notes, _source = build(container)
    assert 'Volume=%s:/var/lib/data' % anon in text and text.count('Volume=') == 2


def test_unconfined_is_explicit_and_listed():
    text, notes, _source = build(mapped(), unconfined=True)
    assert 'PodmanArgs=--security-opt=apparmor=unconfined' in text
    assert any('without AppArmor confinement' in n for n in notes)
    assert 'apparmor' not in build(mapped())[0]


def test_layer_changes_ignore_what_podman_writes_and_mount_points():
    container = mapped(mounts=[{'Type': 'volume', 'Name': 'v', 'Destination': '/data'}])
    diff = {'changed': ['/etc', '/root', '/data'], 'added': ['/root/state', '/data/x', '/run/.containerenv'],
            'deleted': ['/usr/share/doc/x']}
    assert quadlet_convert.layer_changes(diff, container) == ['added /root/state', 'deleted /usr/share/doc/x']
    assert quadlet_convert.layer_changes({'changed': ['/etc']}, container) == []
    assert quadlet_convert.layer_changes(None, container) == []


def test_commit_image_name_is_valid_and_stable():
    container = mapped()
    container.name = 'My_Web.App'
    name = quadlet_convert.image_name_for_commit(container)
    assert name == 'localhost/postmortem-quadlet-my_web.app:%s' % container.id[:12]
