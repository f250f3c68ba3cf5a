"""The docker_overlay_recover_plan module as a host runs it (its file, its arguments as JSON, its own
interpreter), against a fake Engine API on a unix socket (tests/hostile_servers.py, the inspect shapes of
../shared/reference/docker). The finding it plans from is the detection's own, read from the same fake
daemon: the codes the detection writes are the codes the plan reads. Every branch of the plan itself is in
tests/unit/plugins/module_utils/docker/test_overlay_recovery.py; the real swarm in the role's Molecule
scenario and tests/e2e/test_docker_overlay_real.py.
"""
import json
import os
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.docker_overlay_sandbox import DETECTION as det

from ...helpers.hostile import snapshot
from ...helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position

COLLECTIONS = registry.__file__
for _level in range(6):
    COLLECTIONS = os.path.dirname(COLLECTIONS)
MODULE = os.path.join(COLLECTIONS, 'ansible_collections', 'homelab', 'postmortem', 'plugins', 'modules',
                      'docker_overlay_recover_plan.py')
NET_ID = 'ak7of1jriprxzfppltmyzgkiw'
CID = 'c' * 64
MAC = '02:42:0a:00:01:02'
NO_CARRIER = ('24: eth0@if25: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1450 qdisc noqueue state DOWN mode DEFAULT group '
              'default \\    link/ether %s brd ff:ff:ff:ff:ff:ff link-netnsid 0\n' % MAC)


class Node:
    """A swarm manager with one running container (web, no restart policy) on overlay network ovs, its
    sandbox in place, and a service whose task failed network setup. Records every request line."""

    def __init__(self, tmp_path):
        self.tmp_path = tmp_path
        self.netns = tmp_path / 'exec' / 'netns'
        self.netns.mkdir(parents=True)
        for name in (CID[:12], '1-' + NET_ID[:10]):
            (self.netns / name).write_text('')
        web = {'Name': '/web', 'State': {'Status': 'running', 'Running': True, 'Pid': 4321},
               'HostConfig': {'RestartPolicy': {'Name': 'no'}, 'AutoRemove': False}, 'Config': {'Labels': {}},
               'NetworkSettings': {'SandboxKey': str(self.netns / CID[:12])}}
        task = {'ID': 't1', 'ServiceID': 'svc1', 'NetworksAttachments': [{'Network': {'ID': NET_ID}}],
                'Status': {'State': 'failed', 'Err': 'Bind for 0.0.0.0:8080 failed: port is already allocated'}}
        self.table = {
            '/version': (200, {'Version': '29.0.0', 'ApiVersion': '1.52'}),
            '/info': (200, {'Swarm': {'LocalNodeState': 'active', 'NodeID': 'n1', 'ControlAvailable': True}}),
            '/networks': (200, [{'Name': 'ovs', 'Id': NET_ID, 'Driver': 'overlay', 'Ingress': False}]),
            '/networks/' + NET_ID: (200, {'Name': 'ovs', 'Id': NET_ID, 'Containers': {
                CID: {'Name': 'web', 'EndpointID': 'e', 'MacAddress': MAC, 'IPv4Address': '10.0.1.2/24'}}}),
            '/containers/%s/json' % CID: (200, web),
            '/containers/json': (200, [{'Id': CID}]),
            '/tasks': (200, [task]),
        }
        self.requests = []
        self.socket = str(tmp_path / 'docker.sock')
        self.server = None

    def __enter__(self):
        serve = hs.routes(self.table)

        def recording(connection, stop):
            self.requests.append(connection.recv(4096, __import__('socket').MSG_PEEK).split(b'\r\n', 1)[0].decode())
            return serve(connection, stop)
        self.server = hs.MisbehavingServer(recording, unix_path=self.socket)
        return self

    def __exit__(self, *exc):
        self.server.close()

    def finding(self, link_output):
        (self.tmp_path / 'proc').mkdir(exist_ok=True)
        settings = registry.validate_settings({'docker_overlay_sandbox': {'socket': self.socket, 'journal_unit': ''}})
        ctx = AuditContext(proc_root=str(self.tmp_path / 'proc'), settings=settings, euid=0,
                           run_command=lambda cmd: (0, link_output, ''), which=lambda name: '/usr/bin/' + name)
        return registry.run_one(ctx, det)


def run(args, check=False):
    handle, args_file = tempfile.mkstemp(suffix='.json', prefix='docker-plan-args-')
    with os.fdopen(handle, 'w') as out:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_check_mode=check)}, out)
    try:
        proc = subprocess.run([sys.executable, MODULE, args_file], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONPATH=COLLECTIONS), check=False)
    finally:
        os.unlink(args_file)
    assert 'Traceback' not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_check_mode_plans_from_the_detections_own_finding_and_only_reads(tmp_path):
    with Node(tmp_path) as node:
        found = node.finding(NO_CARRIER)
        before, node.requests[:] = snapshot(str(tmp_path)), []
        result = run({'finding': found, 'docker_host': 'unix://' + node.socket, 'scale_down_failing': True,
                      'restart': True, 'restart_command': ['systemctl', 'restart', 'docker']}, check=True)
    assert found['status'] == 'affected', found
    assert result.get('failed') is not True, result
    assert (result['changed'], result['cut_off'], result['scale_down'], result['start_again']) == (False, ['web'], ['svc1'], ['web'])
    assert result['steps'] == ['would: scale service svc1 to 0', 'would: restart dockerd: systemctl restart docker',
                               'would: wait until the daemon answers and the swarm state is active',
                               'would: start again: web', 'would: check with the detection']
    assert node.requests and all(line.startswith('GET ') for line in node.requests), node.requests
    assert snapshot(str(tmp_path)) == before


def test_a_healthy_node_plans_nothing_and_the_check_after_passes(tmp_path):
    up = NO_CARRIER.replace('NO-CARRIER,BROADCAST,MULTICAST,UP', 'BROADCAST,MULTICAST,UP,LOWER_UP')
    with Node(tmp_path) as node:
        found = node.finding(up)
        planned = run({'finding': found, 'docker_host': 'unix://' + node.socket, 'restart': True})
        checked = run({'finding': found, 'stage': 'verify'})
    assert (planned['restart_required'], planned['steps'], planned['start_again']) == (False, [], [])
    assert planned['msg'].startswith('nothing: no container on this node is cut off its overlay network')
    assert checked.get('failed') is not True and checked['cut_off'] == [] and checked['unconfirmed'] == []


def test_the_check_after_fails_on_a_container_still_cut_off(tmp_path):
    with Node(tmp_path) as node:
        found = node.finding(NO_CARRIER)
    result = run({'finding': found, 'stage': 'verify'})
    assert result['failed'] is True and result['cut_off'] == ['web']
    assert result['msg'].startswith('Still affected after the recovery: 1 running container(s) cut off their overlay network (web)')


def test_a_node_that_could_not_be_judged_stops_the_plan(tmp_path):
    with Node(tmp_path) as node:
        node.table['/containers/%s/json' % CID] = (200, {'State': {'Running': True, 'Pid': '4321'}})
        found = node.finding(NO_CARRIER)
        node.requests[:] = []
        result = run({'finding': found, 'docker_host': 'unix://' + node.socket, 'restart': True})
    assert result['failed'] is True and result['cut_off'] == []
    assert result['msg'].startswith('docker_overlay_sandbox is at_risk here and nothing is proven cut off: container web on '
                                    'ovs cannot be judged: Docker API GET /containers/%s/json: field State.Pid is a string' % CID)
    assert node.requests == []


@pytest.mark.parametrize('args,message', [
    ({'docker_host': 'unix:///nonexistent/docker.sock'},
     'the running containers cannot be read, so those to start again after the restart are not known: no Docker daemon '
     'answers at /nonexistent/docker.sock'),
    ({'docker_host': 'tcp://10.0.0.1:2375'}, "'tcp://10.0.0.1:2375' is not a unix socket"),
    ({'api_timeout': 0}, 'api_timeout must be 1 to 300 seconds, got 0'),
])
def test_bad_arguments_and_an_absent_daemon_fail_saying_why(tmp_path, args, message):
    with Node(tmp_path) as node:
        found = node.finding(NO_CARRIER)
    result = run(dict({'finding': found}, **args))
    assert result['failed'] is True and message in result['msg'], result['msg']
