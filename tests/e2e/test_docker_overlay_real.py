"""docker_overlay_sandbox against a real two-node swarm (Debian's dockerd 20.10, two daemons in
network namespaces of their own, started by the tests: docker_fleet.py).

The upstream bug (a second Leave on every failed start, Engine 29.0.0 and later) does not exist
in 20.10, so the broken states are induced for real instead: the sandbox side of a container's
veth taken down (the container sees NO-CARRIER), and a network's sandbox namespace removed.
Task failures during network setup are real: a service publishing a host port that a container
already holds.

The healthy and broken cases run twice: with ``--exec-root`` on the daemons' command lines
(``flag``), and with the exec roots only in config files (``config``: node A in
/etc/docker/daemon.json, node B in a file named by ``--config-file``), where the sandboxes are not
under the default /var/run/docker and nothing on the command line says so.
"""
import json
import os
import subprocess
import sys
import time

import pytest

import docker_fleet
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from helpers import local_host, run_audit

pytestmark = pytest.mark.needs_root('dockerd, network namespaces and nsenter need root')

A, B = docker_fleet.NODES


BOTH_WAYS = pytest.mark.parametrize('fleet', ['flag', 'config'], indirect=True)


@pytest.fixture(scope='module')
def fleet(request):
    docker_fleet.down()
    docker_fleet.up(exec_root_in=getattr(request, 'param', 'flag'))
    yield docker_fleet
    docker_fleet.down()


@pytest.fixture
def containers(fleet):
    made = []

    def run(node, name, *extra):
        made.append((node, name))
        return docker_fleet.run_container(node, name, *extra)
    yield run
    for node, name in made:
        node.docker('rm', '-f', name, check=False)


def detect(node, probes=(), **settings):
    values = {'socket': node.host}
    values.update(settings)
    ctx = AuditContext(probes=probes, settings=registry.validate_settings({'docker_overlay_sandbox': values}))
    findings, _timings = registry.run(ctx, registry.select(['docker_overlay_sandbox']))
    return findings['docker_overlay_sandbox']


def by_container(finding, name):
    found = [i for i in finding['evidence'].get('instances', []) if i['evidence'].get('container') == name]
    assert found, finding
    return found[0]


def where_dockerd_read_it(node):
    """How dockerd itself got its exec root in this fleet (docker_fleet.Node.dockerd_argv)."""
    return {'flag': '--exec-root on the command line of dockerd pid %d' % node.pid(),
            'default-config': '"exec-root" in /etc/docker/daemon.json (the default config file of dockerd pid %d)' % node.pid(),
            'config-file': '"exec-root" in %s (--config-file of dockerd pid %d)' % (node.config_file, node.pid()),
            }[node.exec_root_in]


@BOTH_WAYS
def test_healthy_nodes_are_ok_with_real_traffic(containers):
    containers(A, 'pm-c1')
    containers(B, 'pm-c2')
    for node, name in ((A, 'pm-c1'), (B, 'pm-c2')):
        finding = detect(node, probes=['overlay_ping'])
        assert finding['status'] == 'ok', finding
        item = by_container(finding, name)
        assert item['evidence']['carrier'] is True
        assert item['evidence']['ping']['ok'] is True, item
        assert finding['evidence']['engine_version'].startswith('20.10')
        # Where the daemon put the sandboxes, from its containers' sandbox keys ...
        assert item['evidence']['netns_dir_confirmed'] is True
        assert finding['evidence']['exec_root'] == node.exec_root
        assert 'sandbox keys' in finding['evidence']['exec_root_from']
        assert finding['evidence']['networks'][0]['sandbox']
        # ... and the same place read from dockerd's command line and config file, as dockerd read them.
        assumed = finding['evidence']['exec_root_assumed']
        assert (assumed['exec_root'], assumed['from'], assumed['notes']) == (node.exec_root, where_dockerd_read_it(node), [])
        assert 'exec_root_note' not in finding['evidence']
        # A wrong setting does not make a healthy node affected: the sandbox keys are the daemon's answer.
        wrong = detect(node, exec_root='/var/run/docker')
        assert wrong['status'] == 'ok', wrong
        assert 'not at /var/run/docker (setting exec_root)' in wrong['evidence']['exec_root_note']


# The detection run in a mount namespace of its own, where a tmpfs hides the daemon's netns directory.
HIDDEN_RUN = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
ctx = AuditContext(settings=registry.validate_settings({'docker_overlay_sandbox': {'socket': sys.argv[2]}}))
print(json.dumps(registry.run(ctx, registry.select(['docker_overlay_sandbox']))[0]['docker_overlay_sandbox']))
'''


@pytest.mark.parametrize('fleet', ['config'], indirect=True)
def test_sandboxes_the_audit_cannot_see_are_unknown_not_affected(containers):
    containers(A, 'pm-c1')
    collections = os.path.abspath(os.path.join(os.path.dirname(registry.__file__), *(['..'] * 5)))
    proc = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
                           'mount -t tmpfs pm-hidden "$1" && exec "$2" -c "$3" "$4" "$5"', 'sh',
                           os.path.join(A.exec_root, 'netns'), sys.executable, HIDDEN_RUN, collections, A.host],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    finding = json.loads(proc.stdout)
    item = by_container(finding, 'pm-c1')
    assert finding['status'] == item['status'] == 'unknown', finding
    assert item['evidence']['carrier'] is True and item['evidence']['netns_dir_confirmed'] is False
    assert "sandbox could not be looked for" in item['summary'] and 'is not there as seen from here' in item['summary']
    # The same node seen from the host's mount namespace.
    assert detect(A)['status'] == 'ok'


@BOTH_WAYS
def test_no_carrier_is_affected_on_that_node_only(containers):
    containers(A, 'pm-c1')
    containers(A, 'pm-c3')
    containers(B, 'pm-c2')
    docker_fleet.cut_carrier(A, 'pm-c1')
    finding = detect(A, probes=['overlay_ping'])
    assert finding['status'] == 'affected'
    cut = by_container(finding, 'pm-c1')
    assert cut['status'] == 'affected'
    assert 'NO-CARRIER' in cut['evidence']['flags']
    assert cut['evidence']['ping']['ok'] is False
    assert 'pm-c1' in finding['summary']
    assert by_container(finding, 'pm-c3')['status'] == 'ok'
    assert detect(B)['status'] == 'ok'


@BOTH_WAYS
def test_a_removed_sandbox_is_affected(containers):
    containers(A, 'pm-c1')
    docker_fleet.remove_sandbox(A)
    finding = detect(A)
    assert finding['status'] == 'affected'
    assert "sandbox is gone" in by_container(finding, 'pm-c1')['summary']
    assert finding['evidence']['networks'][0]['sandbox'] == []


def test_failed_starts_during_network_setup_are_counted_and_judged_by_version(containers):
    containers(A, 'pm-c1')
    A.docker('rm', '-f', 'pm-holder', check=False)
    A.docker('run', '-d', '--name', 'pm-holder', '-p', '18080:80', docker_fleet.IMAGE, 'sleep', '100000')
    try:
        A.docker('service', 'create', '-d', '--name', 'pm-web', '--network', docker_fleet.NETWORK, '--no-resolve-image',
                 '--constraint', 'node.id==%s' % docker_fleet.node_id(A),
                 '--publish', 'mode=host,target=80,published=18080', docker_fleet.IMAGE, 'sleep', '100000')
        deadline = time.time() + 90
        finding = None
        while time.time() < deadline:
            finding = detect(A)
            failed = [i for i in finding['evidence']['instances'] if i['evidence']['kind'] == 'failed_starts']
            if failed and failed[0]['evidence']['failed_network_setup_tasks'] >= 2:
                break
            time.sleep(3)
        item = [i for i in finding['evidence']['instances'] if i['evidence']['kind'] == 'failed_starts'][0]
        assert 'port is already allocated' in item['evidence']['tasks'][0]['error']
        # 20.10 rolls a failed start back with one Leave: counted, not a risk, and c1 is fine.
        assert item['status'] == 'ok' and 'outside the affected range' in item['summary']
        assert item['evidence']['cause'] == 'outside_affected_range'
        # The service, once, by the id swarm gives it: what docker_overlay_recover_scale_down_failing scales.
        service_id = A.docker('service', 'inspect', '--format', '{{.ID}}', 'pm-web')
        assert item['evidence']['services'] == [service_id]
        assert finding['status'] == 'ok'
        # The same node judged by the rules of an affected Engine (29.0.0 and later).
        risky = detect(A, affected_from='20.10')
        assert risky['status'] == 'at_risk'
        assert 'one join too many' in risky['summary']
    finally:
        A.docker('service', 'rm', 'pm-web', check=False)
        A.docker('rm', '-f', 'pm-holder', check=False)


def test_bad_input_gives_clear_results(tmp_path, fleet):
    # No daemon at that socket.
    assert detect(A, socket='unix://%s' % (tmp_path / 'none.sock'))['status'] == 'not_applicable'
    # Something that is not a Docker daemon answers on the socket.
    import socket as socketlib
    import threading
    path = str(tmp_path / 'liar.sock')
    server = socketlib.socket(socketlib.AF_UNIX)
    server.bind(path)
    server.listen(1)

    def answer():
        conn = server.accept()[0]
        conn.recv(4096)
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nnot json!')
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    finding = detect(A, socket='unix://' + path, exec_root=A.exec_root)
    assert finding['status'] == 'error' and 'did not answer JSON' in finding['summary']
    # A daemon that never answers.
    mute = str(tmp_path / 'mute.sock')
    hung = socketlib.socket(socketlib.AF_UNIX)
    hung.bind(mute)
    hung.listen(1)
    started = time.time()
    finding = detect(A, socket='unix://' + mute, api_timeout=2)
    assert time.time() - started < 10
    assert finding['status'] == 'unknown' and 'did not answer within 2 s' in finding['summary']
    server.close()
    hung.close()


@BOTH_WAYS
def test_the_audit_playbook_reports_both_nodes(tmp_path, containers):
    containers(A, 'pm-c1')
    containers(B, 'pm-c2')
    docker_fleet.cut_carrier(A, 'pm-c1')
    inventory = {'all': {'hosts': {
        'node-a': local_host(postmortem_settings={'docker_overlay_sandbox': {'socket': A.host}}),
        'node-b': local_host(postmortem_settings={'docker_overlay_sandbox': {'socket': B.host}}),
    }}}
    run = run_audit(tmp_path, inventory, {'postmortem_checks': ['docker'], 'postmortem_fail_on': 'affected'})
    assert run.proc.returncode != 0
    assert run.finding('node-a', 'docker_overlay_sandbox')['status'] == 'affected'
    assert run.finding('node-b', 'docker_overlay_sandbox')['status'] == 'ok'


HIDDEN_PYTHON = '''#!/bin/sh
# The module's Python with <exec-root>/netns hidden (a tmpfs over it, in a mount namespace of its own):
# the audit sees the containers and their interfaces but not one sandbox file.
exec unshare --mount --propagation private sh -c 'mount -t tmpfs pm-hidden "$1" && shift && exec "$@"' sh %s %s "$@"
'''

RECOVER_PLAY = '''- hosts: node-a
  gather_facts: false
  roles:
    - role: homelab.postmortem.docker_overlay_recover
      vars:
        docker_overlay_recover_restart: true
        docker_overlay_recover_settings: {socket: "%s"}
        # The restart runs in the test's own mount namespace, so dockerd is not started inside the hidden view.
        docker_overlay_recover_restart_command: [nsenter, "--mount=/proc/%d/ns/mnt", "%s", "%s", restart, a]
'''


def test_the_role_recovers_a_node_whose_sandboxes_the_audit_cannot_see(tmp_path, containers):
    """#22's open point: the role failed when the detection said unknown after the recovery, and a node
    whose sandbox files the audit cannot see is unknown even when it is healthy. Before: cut off (no
    carrier); the role restarts dockerd; after: the carrier is back and the sandbox still cannot be
    seen, so the role passes and says what it could only confirm by the carrier."""
    containers(A, 'pm-c1')
    docker_fleet.cut_carrier(A, 'pm-c1')
    before_pid = A.pid()
    wrapper = tmp_path / 'hidden-python'
    wrapper.write_text(HIDDEN_PYTHON % (os.path.join(A.exec_root, 'netns'), sys.executable))
    wrapper.chmod(0o755)
    playbook = tmp_path / 'recover.yml'
    playbook.write_text(RECOVER_PLAY % (A.host, os.getpid(), sys.executable, docker_fleet.__file__))
    inventory = {'all': {'hosts': {'node-a': local_host(ansible_python_interpreter=str(wrapper))}}}
    run = run_audit(tmp_path, inventory, playbook=str(playbook), timeout=600)
    assert run.proc.returncode == 0, run.output[-4000:]
    assert A.pid() != before_pid  # dockerd was restarted
    assert 'Recovered as far as this node shows: container pm-c1 on' in run.output, run.output[-4000:]
    assert "sandbox could not be looked for" in run.output
    assert detect(A)['status'] == 'ok'  # and from the host's own mount namespace, the sandbox is there
