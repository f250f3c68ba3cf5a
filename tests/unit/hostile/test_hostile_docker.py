"""docker_overlay_sandbox against a hostile Engine API and hostile sandbox directories.

The API is a fake on a unix socket (tests/hostile_servers.py) answering the shapes recorded from
dockerd 20.10 (../shared/reference/docker) with one field made wrong at a time; the directories
are real named pipes, link loops and links on this machine. What must hold, per class:

- a field of the wrong type or missing names itself; the container it belongs to is ``unknown``
  (whether it is cut off cannot be told), never ``ok`` with a summary that claims a carrier, never
  ``affected``; the other containers are still judged;
- an Engine version that does not parse makes failed starts ``unknown``, never "outside the
  affected range, ok";
- a netns directory or sandbox that is not what dockerd creates (osl.createNamespaceFile: a regular
  file under <exec-root>/netns) is a reason (``unknown``), never "the sandbox is gone" (``affected``),
  and nothing outside it is listed;
- every case ends within its bound.
"""
import json
import os
import sys
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.docker_overlay_sandbox import DETECTION as det
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import overlay_evidence
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import json_safe

from ..helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position

BOUND_S = 10
NET_ID = 'ak7of1jriprxzfppltmyzgkiw'
CID, OTHER = 'c' * 64, 'd' * 64
MAC, OTHER_MAC = '02:42:0a:00:01:02', '02:42:0a:00:01:03'
LINKS = ''.join('%d: eth0@if25: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP mode DEFAULT group '
                'default \\    link/ether %s brd ff:ff:ff:ff:ff:ff link-netnsid 0\n' % (n, mac)
                for n, mac in ((24, MAC), (26, OTHER_MAC)))
FAILED_TASK = {'ID': 't1', 'ServiceID': 's1', 'NetworksAttachments': [{'Network': {'ID': NET_ID}}],
               'Status': {'State': 'failed', 'Timestamp': 'now',
                          'Err': 'starting container failed: Bind for 0.0.0.0:8080 failed: port is already allocated'}}


def inspect(pid=4321, key=None):
    return {'State': {'Status': 'running', 'Running': True, 'Pid': pid}, 'HostConfig': {'RestartPolicy': {'Name': 'no'}},
            'NetworkSettings': {'SandboxKey': key or ''}}


def set_field(data, dotted, value):
    parts = dotted.split('.')
    for part in parts[:-1]:
        data = data[part]
    if value is KeyError:
        del data[parts[-1]]
    else:
        data[parts[-1]] = value
    return data


class Node:
    """A daemon with two running containers (web, db) on overlay network ovs, and a netns directory."""

    def __init__(self, tmp_path, version='20.10.24+dfsg1', tasks=(), exec_root='exec'):
        self.tmp_path = tmp_path
        self.netns = tmp_path / exec_root / 'netns'
        self.netns.mkdir(parents=True, exist_ok=True)
        for name in (CID[:12], OTHER[:12], '1-' + NET_ID[:10]):
            (self.netns / name).write_text('')
        self.answers = {
            '/version': (200, {'Version': version, 'ApiVersion': '1.41'}),
            '/info': (200, {'Swarm': {'LocalNodeState': 'active', 'NodeID': 'n1', 'ControlAvailable': True}}),
            '/networks': (200, [{'Name': 'ovs', 'Id': NET_ID, 'Driver': 'overlay', 'Ingress': False},
                                {'Name': 'ingress', 'Id': 'x' * 25, 'Driver': 'overlay', 'Ingress': True}]),
            '/networks/' + NET_ID: (200, {'Name': 'ovs', 'Id': NET_ID, 'Containers': {
                CID: {'Name': 'web', 'EndpointID': 'e', 'MacAddress': MAC, 'IPv4Address': '10.0.1.2/24'},
                OTHER: {'Name': 'db', 'EndpointID': 'f', 'MacAddress': OTHER_MAC, 'IPv4Address': '10.0.1.3/24'}}}),
            '/containers/%s/json' % CID: (200, inspect(4321, str(self.netns / CID[:12]))),
            '/containers/%s/json' % OTHER: (200, inspect(4322, str(self.netns / OTHER[:12]))),
            '/tasks': (200, list(tasks)),
        }

    def audit(self, run_command=None, proc_pids=(), **settings):
        sock = str(self.tmp_path / 'docker.sock')
        if os.path.exists(sock):
            os.unlink(sock)
        proc = self.tmp_path / 'proc'
        proc.mkdir(exist_ok=True)
        for pid in proc_pids:
            (proc / str(pid)).mkdir(exist_ok=True)
        values = {'socket': 'unix://' + sock, 'journal_unit': '', 'api_timeout': 2}
        values.update(settings)
        ctx = AuditContext(proc_root=str(proc), settings=registry.validate_settings({'docker_overlay_sandbox': values}),
                           euid=0, run_command=run_command or (lambda cmd: (0, LINKS, '')),
                           which=lambda name: '/usr/bin/' + name)
        with hs.MisbehavingServer(hs.routes(self.answers), unix_path=sock):
            started = time.monotonic()
            finding = registry.run_one(ctx, det)
            assert time.monotonic() - started < BOUND_S
        json.dumps(json_safe(finding), allow_nan=False)
        assert not finding['summary'].startswith('bug in homelab.postmortem'), finding['summary']
        assert_declared_codes(finding)
        return finding


def assert_declared_codes(finding):
    """Every instance, whatever went wrong, carries a kind and a cause of docker/overlay_evidence.py's table: what
    the docker_overlay_recover plan reads instead of names and summaries."""
    for item in finding['evidence'].get('instances', []):
        evidence = item['evidence']
        assert evidence['cause'] in overlay_evidence.CAUSES[evidence['kind']][item['status']], item


def by_name(finding, fragment):
    return [i for i in finding['evidence']['instances'] if fragment in i['name']][0]


def test_the_healthy_node_is_ok(tmp_path):
    finding = Node(tmp_path).audit()
    assert finding['status'] == 'ok', finding['summary']
    assert finding['summary'] == 'Every running container on 1 overlay network(s) has its sandbox and a carrier.'


@pytest.mark.parametrize('path,field,value,reason', [
    ('/containers/%s/json' % CID, 'State.Pid', '4321', 'field State.Pid is a string, not an integer'),
    ('/containers/%s/json' % CID, 'State.Pid', 0, 'State.Running is true but State.Pid is 0'),
    ('/containers/%s/json' % CID, 'State.Running', 'yes', 'field State.Running is a string, not a boolean'),
    ('/containers/%s/json' % CID, 'State.Running', KeyError, 'field State.Running is missing'),
    ('/containers/%s/json' % CID, 'State', None, 'field State is null'),
    ('/containers/%s/json' % CID, 'HostConfig', 'always', 'field HostConfig is a string, not an object'),
    ('/containers/%s/json' % CID, 'NetworkSettings.SandboxKey', 7, 'field NetworkSettings.SandboxKey is a number (7)'),
    ('/networks/' + NET_ID, 'Containers.' + CID + '.Name', 42,
     'field Containers[cccccccccccc].Name is a number (42), not a string'),
    ('/networks/' + NET_ID, 'Containers.' + CID + '.MacAddress', KeyError,
     'field Containers[cccccccccccc].MacAddress is missing'),
    ('/networks/' + NET_ID, 'Containers.' + CID, 'web', 'field Containers[cccccccccccc] is a string, not an object'),
])
def test_a_field_of_the_wrong_type_makes_its_container_unknown(tmp_path, path, field, value, reason):
    node = Node(tmp_path)
    set_field(node.answers[path][1], field, value)
    finding = node.audit()
    item = [i for i in finding['evidence']['instances'] if i['evidence']['id'] == CID[:12]][0]
    assert item['status'] == 'unknown', item
    assert reason in item['summary'], item['summary']
    assert finding['status'] == 'unknown'
    assert 'carrier' not in finding['summary'] and 'could not be judged' in finding['summary'], finding['summary']
    assert by_name(finding, 'container db on ovs')['status'] == 'ok'  # the other container is still judged


def test_a_container_whose_inspect_fails_is_unknown_and_one_that_left_is_not(tmp_path):
    node = Node(tmp_path)
    node.answers['/containers/%s/json' % CID] = (500, {'message': 'boom'})
    item = [i for i in node.audit()['evidence']['instances'] if i['evidence']['id'] == CID[:12]][0]
    assert item['status'] == 'unknown' and 'failed with HTTP 500: boom' in item['summary']
    del node.answers['/containers/%s/json' % CID]  # 404: it left between the network's list and its inspect
    item = [i for i in node.audit()['evidence']['instances'] if i['evidence']['id'] == CID[:12]][0]
    assert item['status'] == 'ok' and 'left while it was read' in item['summary']


def test_interfaces_that_cannot_be_read_of_a_process_still_there_are_unknown(tmp_path):
    def failing(cmd):
        return 1, '', 'nsenter: reassociate to namespace failed: Operation not permitted\n'
    finding = Node(tmp_path).audit(run_command=failing, proc_pids=[4321])
    assert by_name(finding, 'web')['status'] == 'unknown'
    assert 'interfaces cannot be read (nsenter: reassociate' in by_name(finding, 'web')['summary']
    assert by_name(finding, 'db')['status'] == 'ok' and 'exited while it was read' in by_name(finding, 'db')['summary']


@pytest.mark.parametrize('network,reason', [
    ({'Id': NET_ID, 'Driver': 'overlay'}, 'field Name is missing'),
    ({'Id': NET_ID, 'Name': 5}, 'field Name is a number (5), not a string'),
    ({'Name': 'ovs', 'Id': None}, 'field Id is null'),
    ({'Name': 'ovs', 'Id': NET_ID, 'Ingress': 'no'}, 'field Ingress is a string, not a boolean'),
    ('ovs', 'entry #1 is a string, not an object'),
])
def test_a_network_entry_that_cannot_be_read_is_unknown_not_skipped(tmp_path, network, reason):
    node = Node(tmp_path)
    node.answers['/networks'] = (200, [network])
    finding = node.audit()
    assert finding['status'] == 'unknown', finding
    assert reason in finding['evidence']['instances'][0]['summary']


@pytest.mark.parametrize('path,value,reason', [
    ('/version', ['29.0.0'], 'Docker API GET /version answered a list, not an object'),
    ('/info', 'swarm', 'Docker API GET /info answered a string, not an object'),
    ('/networks', {'Id': NET_ID}, 'Docker API GET /networks answered an object, not a list'),
    ('/version', b'{"Version": ' + b'9' * 5000 + b'}', 'answered JSON that cannot be used: JSON with a number of 5000 digits'),
    ('/networks', b'[' * 100000 + b']' * 100000, 'answered JSON that cannot be used: nested deeper than 64 levels (100000)'),
])
def test_replies_of_the_wrong_shape_are_errors_that_say_so(tmp_path, path, value, reason):
    node = Node(tmp_path)
    node.answers[path] = (200, value)
    finding = node.audit()
    assert finding['status'] == 'error' and reason in finding['summary'], finding['summary']


@pytest.mark.parametrize('version,shown', [
    ('abc', "the Engine version 'abc' is not a version this audit can compare"),
    ('9' * 5000, "the Engine version '%s...' is not" % ('9' * 64)),
    ('1.' + '2' * 5000, 'is not a version this audit can compare'),
    (29, 'the Engine version field (a number (29)) is not a version this audit can compare'),
    (None, 'the Engine version field (null) is not'),
])
def test_failed_starts_on_an_engine_version_that_does_not_parse_are_unknown_never_ok(tmp_path, version, shown):
    """Before: version_tuple None made in_affected_range False: "outside the affected range", ok."""
    finding = Node(tmp_path, version=version, tasks=[FAILED_TASK]).audit()
    item = by_name(finding, 'failed starts on ovs')
    assert item['status'] == 'unknown', item
    assert shown in item['summary'] and 'cannot be told' in item['summary']
    assert finding['evidence']['in_affected_range'] is None
    assert len(json.dumps(finding)) < 20000


@pytest.mark.parametrize('task,reason', [
    (dict(FAILED_TASK, Status='failed'), 'field Status is a string, not an object'),
    (dict(FAILED_TASK, NetworksAttachments={'Network': NET_ID}), 'field NetworksAttachments is an object, not a list'),
    (dict(FAILED_TASK, Spec={'Networks': [{'Target': 5}]}), 'field Spec.Networks[].Target is a number (5)'),
    ('t1', 'a task is a string, not an object'),
])
def test_a_task_that_cannot_be_read_makes_failed_starts_unknown(tmp_path, task, reason):
    finding = Node(tmp_path, version='29.0.0', tasks=[task]).audit()
    item = by_name(finding, 'failed starts on this node')
    assert item['status'] == 'unknown' and reason in item['summary'], item['summary']
    assert finding['status'] == 'unknown'


def test_a_null_network_in_a_task_is_no_attachment(tmp_path):
    task = dict(FAILED_TASK, NetworksAttachments=[{'Network': None}])
    finding = Node(tmp_path, version='29.0.0', tasks=[task]).audit()
    assert finding['status'] == 'ok', finding['summary']  # its failure belongs to no network here


def test_a_swarm_field_of_the_wrong_type_makes_failed_starts_unknown(tmp_path):
    node = Node(tmp_path, version='29.0.0', tasks=[FAILED_TASK])
    node.answers['/info'] = (200, {'Swarm': 'active'})
    item = by_name(node.audit(), 'failed starts on this node')
    assert item['status'] == 'unknown' and 'field Swarm is a string, not an object' in item['summary']


# --- sandbox directories that are not what dockerd makes ----------------------------------------

def replace_with(path, kind):
    if path.is_dir():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    elif path.exists() or path.is_symlink():
        path.unlink()
    if kind == 'fifo':
        os.mkfifo(str(path))
    elif kind == 'loop':
        os.symlink(path.name, str(path))
    elif kind == 'dangling':
        os.symlink('/nonexistent/netns', str(path))


@pytest.mark.parametrize('kind,reason', [
    ('fifo', 'is a named pipe, not a directory'),
    ('loop', 'is a loop of symbolic links'),
])
def test_a_netns_directory_that_is_no_directory_is_unknown_not_gone(tmp_path, kind, reason):
    """Where the exec root is only assumed (the setting), the directory itself is what is looked at."""
    node = Node(tmp_path)
    for cid in (CID, OTHER):
        node.answers['/containers/%s/json' % cid][1]['NetworkSettings']['SandboxKey'] = ''
    replace_with(node.netns, kind)
    finding = node.audit(exec_root=str(tmp_path / 'exec'))
    assert finding['status'] == 'unknown', finding['summary']
    assert reason in by_name(finding, 'web')['summary'], by_name(finding, 'web')['summary']
    assert "sandbox is gone" not in json.dumps(finding)


@pytest.mark.parametrize('kind,reason', [
    ('fifo', 'is a named pipe, not a namespace file'),
    ('loop', 'is a symbolic link, not a namespace file'),
    ('dangling', 'is a symbolic link, not a namespace file'),
])
def test_a_sandbox_that_is_no_namespace_file_is_unknown(tmp_path, kind, reason):
    node = Node(tmp_path)
    replace_with(node.netns / ('1-' + NET_ID[:10]), kind)
    finding = node.audit()
    assert finding['status'] == 'unknown', finding['summary']
    assert reason in by_name(finding, 'web')['summary']
    assert finding['evidence']['networks'][0]['sandbox_problem'].endswith(reason)


@pytest.mark.parametrize('key,why', [
    ('fifo', 'is a named pipe, not a namespace file'),
    ('/etc/passwd', "is not of the form <exec-root>/netns/<id> dockerd gives"),
    ('/srv/netns/../../etc/netns/abc', 'is not of the form'),
    ('netns/cccccccccccc', 'is not of the form'),
])
def test_a_sandbox_key_that_is_not_what_dockerd_gives_confirms_nothing(tmp_path, key, why):
    """A key that cannot be dockerd's never decides where sandboxes are: what is missing there is
    unknown, and nothing but the netns directories is listed (never /etc)."""
    node = Node(tmp_path)
    if key == 'fifo':
        replace_with(node.netns / CID[:12], 'fifo')
        key = str(node.netns / CID[:12])
    node.answers['/containers/%s/json' % CID][1]['NetworkSettings']['SandboxKey'] = key
    (tmp_path / 'assumed' / 'netns').mkdir(parents=True)
    finding = node.audit(exec_root=str(tmp_path / 'assumed'))
    item = by_name(finding, 'web')
    assert item['status'] == 'unknown', item
    assert why in item['summary'], item['summary']
    assert item['evidence']['netns_dir'] == str(tmp_path / 'assumed' / 'netns')
    assert by_name(finding, 'db')['status'] == 'ok'  # its own key is dockerd's: judged where it says


def test_a_fifo_where_a_sandbox_should_be_never_blocks(tmp_path):
    """Nothing is opened: a named pipe would block an open() forever."""
    node = Node(tmp_path)
    replace_with(node.netns / ('1-' + NET_ID[:10]), 'fifo')
    replace_with(node.netns / OTHER[:12], 'fifo')
    started = time.monotonic()
    node.audit()
    assert time.monotonic() - started < BOUND_S
