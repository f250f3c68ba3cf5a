"""Quadlet units built from real containers, validated by the real Quadlet generator.

Real: containers made by this machine's podman 4.3.1 (with the CLI, and through
podman's REST API, which records no CreateCommand), and Debian 13's Quadlet
generator from the podman 5.4.2 package (scripts/setup-quadlet.sh). 4.3.1 has no
Quadlet, so the units are built for 5.4.2 and dry-run here; the full conversion
(systemd running the unit, restarting it after repeated exits) runs with podman
5.4.2 under systemd in roles/podman_quadlet/molecule/default.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

from helpers import BUILD, run_module

sys.path.insert(0, os.path.join(BUILD, 'collections'))

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_check
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert  # noqa: E402

pytestmark = pytest.mark.needs_root('the containers converted here are rootful podman containers, '
                                    'which need root; make test runs as root (CI does)')

GENERATOR = os.path.join(BUILD, 'quadlet', 'usr', 'libexec', 'podman', 'quadlet')
IMAGE = 'localhost/postmortem-tiny:1'
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf'))


def run(*args, check=True):
    return subprocess.run(['podman'] + list(args), env=ENV, capture_output=True, text=True, check=check, timeout=120)


def inspect(name):
    return podman.Container(json.loads(run('container', 'inspect', name).stdout)[0])


def image_config(image):
    return json.loads(run('image', 'inspect', image).stdout)[0].get('Config') or {}


@pytest.fixture
def cleanup():
    names = []
    yield names
    for name in names:
        run('rm', '--force', name, check=False)


@pytest.fixture(scope='module')
def host_specs():
    """This host's podman (4.3.1) options, from its own --help: the containers were created by it."""
    return options.specs_for('host-%s' % run('--version').stdout.split()[-1], lambda args: run(*(args + ['--help'])).stdout)


def exec_start(generated):
    return [line for line in generated.splitlines() if line.startswith('ExecStart=')][0]


def test_cli_container_with_many_options_converts_and_validates(cleanup, tmp_path, request, host_specs):
    name = 'pm_quad.odd-%s' % uuid.uuid4().hex[:6]
    volume = 'pm-quad-vol-%s' % name[-6:]
    cleanup.append(name)
    request.addfinalizer(lambda: run('volume', 'rm', '--force', volume, check=False))
    (tmp_path / 'bind').mkdir()
    run('create', '--name', name, '--restart', 'always', '--uidmap', '0:200000:65536', '--gidmap', '0:200000:65536',
        '-p', '18080:80', '-v', '%s:/bind:ro' % (tmp_path / 'bind'), '-v', '%s:/vol' % volume,
        '-e', 'GREETING=hello world', '-e', 'PCT=100%', '-l', 'app=quad', '--cap-add', 'NET_ADMIN',
        '--cap-drop', 'MKNOD', '--device', '/dev/null:/dev/mynull', '--user', '1000:1000', '--memory', '64m',
        IMAGE, 'sh', '-c', 'echo $HOME "a b"; sleep 1000')
    container = inspect(name)
    assert container.create_command
    text, notes, source = quadlet_convert.build(container, (5, 4, 2), specs=host_specs)
    ok, generated, messages = quadlet.dry_run(GENERATOR, '%s.container' % name, text)
    assert ok, (messages, text)
    line = exec_start(generated)
    # The real CreateCommand against what the real generator makes of the unit: nothing lost or added.
    differences = quadlet_check.compare(container.create_command, quadlet_check.exec_argv(line), host_specs,
                                        container=container)
    assert differences == [], differences
    for expected in ('--name %s' % name, '--uidmap 0:200000:65536', '--gidmap 0:200000:65536',
                     '--publish 18080:80', '-v %s:/vol' % volume, '--env "GREETING=hello world"',
                     '--env PCT=100%%', '--label app=quad', '--cap-add net_admin', '--cap-drop mknod',
                     '--device /dev/null:/dev/mynull', '--user 1000:1000', '--memory=64m', '--rm',
                     'sh -c "echo $$HOME \\"a b\\"; sleep 1000"'):
        assert expected in line, (expected, line)
    assert '--restart' not in line and 'Restart=always' in generated
    assert any('--memory' in n for n in notes)

    # The same container through the structured fields gives a unit the generator accepts too.
    text2, _notes2, source2 = quadlet_convert.build(_without_create_command(container), (5, 4, 2), image_config(IMAGE))
    assert source2 == 'inspect'
    ok2, generated2, messages2 = quadlet.dry_run(GENERATOR, '%s.container' % name, text2)
    assert ok2, (messages2, text2)
    assert '--uidmap 0:200000:65536' in exec_start(generated2)


def _without_create_command(container):
    container.raw['Config']['CreateCommand'] = None
    return podman.Container(container.raw)


def test_api_created_container_has_no_create_command_and_still_converts(cleanup, tmp_path):
    """Bad input from the issue: a container created through the API, not the CLI."""
    sock_path = str(tmp_path / 'podman.sock')
    service = subprocess.Popen(['podman', 'system', 'service', '--time', '30', 'unix://' + sock_path], env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    name = 'pm-quad-api-%s' % uuid.uuid4().hex[:6]
    cleanup.append(name)
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock_path) and time.time() < deadline:
            time.sleep(0.2)
        body = {'name': name, 'image': IMAGE, 'command': ['sleep', '1000'], 'env': {'MODE': 'prod'},
                'restart_policy': 'always', 'idmappings': {'UIDMap': [{'container_id': 0, 'host_id': 200000, 'size': 65536}],
                                                           'GIDMap': [{'container_id': 0, 'host_id': 200000, 'size': 65536}]},
                'netns': {'nsmode': 'none'}, 'userns': {'nsmode': 'private'}}
        status, reply = _unix_post(sock_path, '/v4.0.0/libpod/containers/create', body)
        assert status == 201, reply
    finally:
        service.terminate()
        service.wait(timeout=30)
    container = inspect(name)
    assert not container.create_command
    text, notes, source = quadlet_convert.build(container, (5, 4, 2), image_config(IMAGE))
    assert source == 'inspect'
    ok, generated, messages = quadlet.dry_run(GENERATOR, 'api.container', text)
    assert ok, (messages, text)
    line = exec_start(generated)
    assert '--env MODE=prod' in line and 'sleep 1000' in line and '--network none' in line
    assert '--uidmap 0:200000:65536' in line
    assert 'Restart=always' in generated


def _unix_post(path, url, body):
    conn = http.client.HTTPConnection('localhost')
    conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.sock.connect(path)
    conn.request('POST', url, body=json.dumps(body), headers={'Content-Type': 'application/json'})
    response = conn.getresponse()
    return response.status, response.read().decode()


def test_the_generator_rejects_a_broken_unit():
    """The dry run can fail: a key Quadlet does not know is reported, not written."""
    ok, _generated, messages = quadlet.dry_run(GENERATOR, 'bad.container',
                                               '[Container]\nImage=localhost/x:1\nNoSuchKey=1\n')
    assert not ok and 'NoSuchKey' in messages
    ok, _generated, messages = quadlet.dry_run(GENERATOR, 'noimage.container', '[Container]\nExec=true\n')
    assert not ok


def test_the_module_refuses_on_a_podman_without_quadlet(cleanup, tmp_path):
    """This host's podman 4.3.1 has no Quadlet: the module says so and touches nothing."""
    name = 'pm-quad-old-%s' % uuid.uuid4().hex[:6]
    cleanup.append(name)
    run('create', '--name', name, '--restart', 'always', IMAGE, 'true')
    before = inspect(name).id
    unit_dir = tmp_path / 'units'
    result = run_module(tmp_path, 'homelab.postmortem.podman_quadlet', {'name': name, 'unit_dir': str(unit_dir)})
    assert 'FAILED' in result.stdout and 'has no Quadlet' in result.stdout, result.stdout + result.stderr
    assert not unit_dir.exists()
    assert inspect(name).id == before
