"""docker_overlay_sandbox's parts that do not need a daemon: sandbox names across epochs, link
flags, the version rule, and the Engine API client against a unix-socket server that answers
with the shapes recorded from dockerd 20.10 (../shared/reference/docker). The real two-node
swarm is in tests/e2e/test_docker_overlay_real.py."""
import json
import os
import socket
import threading

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import docker_overlay_sandbox as det

NET_ID = 'ak7of1jriprxzfppltmyzgkiw'


@pytest.mark.parametrize('names,expected', [
    (['1-ak7of1jrip'], ['1-ak7of1jrip']),
    (['2-ak7of1jrip'], ['2-ak7of1jrip']),            # rebuilt once in this daemon's lifetime
    (['10-ak7of1jri'], ['10-ak7of1jri']),            # the tenth: one id character less
    (['1-zzzzzzzzzz', 'ingress_sbox', 'lb_ak7of1jri'], []),
    (['1-ak7of1jri'], []),                           # too short for epoch 1: another network's prefix
])
def test_sandbox_names_match_any_epoch(tmp_path, names, expected):
    for name in names:
        (tmp_path / name).write_text('')
    assert [os.path.basename(p) for p in det.sandbox_files(str(tmp_path), NET_ID)] == expected


def test_sandbox_dir_missing_is_none(tmp_path):
    assert det.sandbox_files(str(tmp_path / 'nope'), NET_ID) is None


IP_LINK = ('1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000'
           '\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n'
           '24: eth0@if25: <NO-CARRIER,BROADCAST,MULTICAST,UP,M-DOWN> mtu 1450 qdisc noqueue state DOWN mode DEFAULT '
           'group default \\    link/ether 02:42:0a:00:01:02 brd ff:ff:ff:ff:ff:ff link-netnsid 0\n'
           '26: eth1@if27: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default '
           '\\    link/ether 02:42:ac:12:00:03 brd ff:ff:ff:ff:ff:ff link-netnsid 1\n')


def test_link_flags_are_read_per_mac():
    ctx = AuditContext(run_command=lambda cmd: (0, IP_LINK, ''), which=lambda name: '/usr/bin/' + name)
    links, problem = det.read_links(ctx, 4242)
    assert problem is None
    assert links['02:42:0a:00:01:02'] == ('eth0', ['NO-CARRIER', 'BROADCAST', 'MULTICAST', 'UP', 'M-DOWN'], 'DOWN')
    assert 'LOWER_UP' in links['02:42:ac:12:00:03'][1]


class FakeDaemon:
    """A unix-socket HTTP server answering like dockerd 20.10 (shapes from shared/reference/docker)."""

    def __init__(self, path, routes):
        self.path, self.routes = path, routes
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(path)
        self.server.listen(8)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn = self.server.accept()[0]
            except OSError:
                return
            request = conn.recv(65536).decode()
            target = request.split(' ')[1].split('?')[0]
            status, body = self.routes.get(target, (404, {'message': 'page not found'}))
            data = json.dumps(body).encode()
            conn.sendall(b'HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s'
                         % (status, len(data), data))
            conn.close()


FAILED_TASK = {'ID': 't1', 'ServiceID': 's1', 'NetworksAttachments': [{'Network': {'ID': NET_ID}}],
               'Status': {'State': 'failed', 'Timestamp': 'now',
                          'Err': 'starting container failed: ... Bind for 0.0.0.0:8080 failed: port is already allocated'}}


def routes(version='20.10.24+dfsg1', containers=None, failed=True):
    return {
        '/version': (200, {'Version': version, 'ApiVersion': '1.41'}),
        '/info': (200, {'Swarm': {'LocalNodeState': 'active', 'NodeID': 'n1', 'ControlAvailable': True}}),
        '/networks': (200, [{'Name': 'ovs', 'Id': NET_ID, 'Driver': 'overlay', 'Ingress': False},
                            {'Name': 'ingress', 'Id': 'x' * 25, 'Driver': 'overlay', 'Ingress': True}]),
        '/networks/' + NET_ID: (200, {'Name': 'ovs', 'Id': NET_ID, 'Containers': containers or {}}),
        '/tasks': (200, [FAILED_TASK] if failed else []),
    }


def ctx_for(tmp_path, version, failed=True, **settings):
    sock = str(tmp_path / 'docker.sock')
    FakeDaemon(sock, routes(version, failed=failed))
    values = {'socket': 'unix://' + sock, 'exec_root': str(tmp_path / 'exec'), 'journal_unit': ''}
    values.update(settings)
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        settings=registry.validate_settings({'docker_overlay_sandbox': values}), euid=0,
                        which=lambda name: None)


@pytest.mark.parametrize('version,status', [
    ('20.10.24+dfsg1', 'not_applicable'),   # no local container: nothing to cut off
    ('29.8.2', 'not_applicable'),
])
def test_networks_without_local_containers_are_not_applicable(tmp_path, version, status):
    assert registry.run_one(ctx_for(tmp_path, version, failed=False), det)['status'] == status


@pytest.mark.parametrize('version,fixed_in,status', [
    ('20.10.24+dfsg1', None, 'ok'),     # one Leave per failed start before 29.0.0
    ('28.5.2', None, 'ok'),
    ('29.0.0', None, 'at_risk'),        # PR #50945, first in v29.0.0
    ('29.8.2', None, 'at_risk'),
    ('29.8.2', '29.9.0', 'at_risk'),
    ('29.9.1', '29.9.0', 'ok'),         # a fixed release, once one is known
])
def test_failed_network_setup_tasks_are_judged_by_the_engine_version(tmp_path, version, fixed_in, status):
    (tmp_path / 'proc').mkdir()
    settings = {'fixed_in': fixed_in} if fixed_in else {}
    finding = registry.run_one(ctx_for(tmp_path, version, **settings), det)
    item = [i for i in finding['evidence']['instances'] if i['name'] == 'failed starts on ovs'][0]
    assert item['status'] == status, item
    assert item['evidence']['failed_network_setup_tasks'] == 1
    assert 'port is already allocated' in item['evidence']['tasks'][0]['error']


def test_http_errors_and_garbage_are_clear(tmp_path):
    sock = str(tmp_path / 'docker.sock')
    FakeDaemon(sock, {'/version': (500, {'message': 'boom'})})
    ctx = AuditContext(settings=registry.validate_settings({'docker_overlay_sandbox': {'socket': sock}}), euid=0)
    finding = registry.run_one(ctx, det)
    assert finding['status'] == 'error'
    assert finding['summary'] == 'Docker API GET /version failed with HTTP 500: boom'


def test_a_socket_we_may_not_open_is_unknown():
    """Root opens any socket, so the refusal itself is built here from the errno connect() gives."""
    import errno
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api
    problem = api.DockerApi('/run/docker.sock')._socket_problem(OSError(errno.EACCES, 'Permission denied'))
    assert problem.finding_status == 'unknown'
    assert str(problem) == 'permission denied on /run/docker.sock: run the audit as root (become: true)'


def test_a_daemon_not_in_swarm_mode_without_overlay_networks_is_not_applicable(tmp_path):
    sock = str(tmp_path / 'docker.sock')
    FakeDaemon(sock, {'/version': (200, {'Version': '20.10.24'}),
                      '/info': (200, {'Swarm': {'LocalNodeState': 'inactive', 'NodeID': ''}}),
                      '/networks': (200, [])})
    ctx = AuditContext(settings=registry.validate_settings({'docker_overlay_sandbox': {'socket': sock, 'journal_unit': ''}}),
                       euid=0, proc_root=str(tmp_path / 'proc'))
    finding = registry.run_one(ctx, det)
    assert finding['status'] == 'not_applicable'
    assert finding['summary'] == 'No overlay network on this daemon (swarm inactive).'


def test_a_container_that_exits_during_the_scan_is_not_an_error(tmp_path):
    sock = str(tmp_path / 'docker.sock')
    containers = {'c' * 64: {'Name': 'gone', 'EndpointID': 'e', 'MacAddress': '02:42:0a:00:01:09', 'IPv4Address': '10.0.1.9/24'}}
    routes_now = routes(containers=containers, failed=False)
    # /containers/<id>/json answers 404: the container left between the network list and its inspect.
    FakeDaemon(sock, routes_now)
    ctx = AuditContext(settings=registry.validate_settings({'docker_overlay_sandbox': {
        'socket': sock, 'exec_root': str(tmp_path), 'journal_unit': ''}}), euid=0, proc_root=str(tmp_path / 'proc'))
    finding = registry.run_one(ctx, det)
    item = finding['evidence']['instances'][0]
    assert item['status'] == 'ok' and 'left while it was read' in item['summary']


@pytest.mark.parametrize('answer,count,source', [
    ((0, 'x\nlevel=warning msg="Peer entry was not in db"\nPeer entry was not in db\n', ''), 2, 'journal of docker.service'),
    ((0, '', 'No journal files were found.\n'), None, 'not read: No journal files were found.'),
    ((1, '', 'Failed to add filter\n'), None, 'not read: Failed to add filter'),
])
def test_peer_entry_warnings_are_counted_from_the_journal(answer, count, source):
    ctx = AuditContext(run_command=lambda cmd: answer, which=lambda name: '/usr/bin/' + name)
    found, where = det._peer_warnings(ctx, 'docker.service')  # pylint: disable=protected-access
    assert found == count and where.startswith(source)
