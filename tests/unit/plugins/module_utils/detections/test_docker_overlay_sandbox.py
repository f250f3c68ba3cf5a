"""docker_overlay_sandbox's parts that do not need a daemon: the version rule, the exec root's resolution,
the codes each instance carries, and the Engine API client against a unix-socket server that answers
with the shapes recorded from dockerd 20.10 (../shared/reference/docker). Sandbox names and link flags are
in ../docker/test_netns.py; the real two-node swarm is in tests/e2e/test_docker_overlay_real.py."""
import json
import os
import socket
import threading

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.docker_overlay_sandbox import DETECTION as det
from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import docker_overlay_sandbox as verdict

NET_ID = 'ak7of1jriprxzfppltmyzgkiw'


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
    item = [i for i in finding['evidence']['instances'] if i['evidence']['kind'] == 'failed_starts'][0]
    assert item['status'] == status, item
    assert item['evidence']['cause'] == {'ok': 'outside_affected_range', 'at_risk': 'in_affected_range'}[status]
    assert (item['evidence']['network'], item['evidence']['network_id'], item['evidence']['services']) == ('ovs', NET_ID, ['s1'])
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
    found, where = verdict._peer_warnings(ctx, 'docker.service')  # pylint: disable=protected-access
    assert found == count and where.startswith(source)


# --- Where the sandboxes are -------------------------------------------------------------------
# Expected values follow dockerd's own resolution (moby/moby, v20.10.24 and docker-v29.0.0..v29.7.2;
# file and line in plugins/module_utils/docker/dockerd.py). The refusals were also measured with
# Debian's dockerd 20.10.24 here: --exec-root with "exec-root" in the file, -H with "hosts" in the
# file ("specified both as a flag and in the configuration file"), a missing --config-file
# ("no such file or directory"), "Exec-Root" ("don't match any configuration option") and a number
# ("cannot unmarshal number into Go struct field Config.exec-root") all stop dockerd at start.

@pytest.mark.parametrize('argv,hosts,exec_root,config_file', [
    (['dockerd', '-H', 'fd://', '--containerd=/run/containerd/containerd.sock'], ['fd://'], None, None),
    (['dockerd', '-H', 'unix:///run/a.sock', '--exec-root', '/run/a'], ['unix:///run/a.sock'], '/run/a', None),
    (['dockerd', '--host=unix:///run/a.sock', '--exec-root=/run/a', '--config-file=/srv/d.json'],
     ['unix:///run/a.sock'], '/run/a', '/srv/d.json'),
    (['dockerd', '-Hunix:///run/a.sock', '-H=unix:///run/b.sock'], ['unix:///run/a.sock', 'unix:///run/b.sock'], None, None),
    (['dockerd', '-DH', 'unix:///run/a.sock'], ['unix:///run/a.sock'], None, None),    # pflag: -D then -H's value
    (['dockerd', '-p', '/run/x.pid', '-H', 'unix:///run/a.sock'], ['unix:///run/a.sock'], None, None),
    (['dockerd', '--exec-root', '/run/a', '--exec-root', '/run/b'], [], '/run/b', None),  # the last one counts
    (['dockerd', '--label', 'k=v', '--exec-root', '/run/a'], [], '/run/a', None),
    (['dockerd', '--', '--exec-root', '/run/a'], [], None, None),                       # no flags after --
    (['dockerd', '-H', '', '--exec-root'], [], None, None),                              # empty host dropped; no value
])
def test_dockerd_argv_is_read_as_pflag_reads_it(argv, hosts, exec_root, config_file):
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
    assert dockerd.parse_argv(argv) == {'hosts': hosts, 'exec_root': exec_root, 'config_file': config_file}


def fake_dockerd(tmp_path, argv, env=None, files=None, pid=4242, cwd=None):
    """A /proc/<pid> of a dockerd: cmdline, environ, its root (with ``files``) and working directory."""
    proc = tmp_path / 'proc' / str(pid)
    (proc / 'root').mkdir(parents=True)
    proc.joinpath('cmdline').write_bytes(b'\0'.join(a.encode() for a in argv) + b'\0')
    proc.joinpath('environ').write_bytes(b''.join(('%s=%s\0' % kv).encode() for kv in (env or {}).items()))
    for path, text in (files or {}).items():
        target = proc / 'root' / path.lstrip('/')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    (tmp_path / 'cwd').mkdir(exist_ok=True)
    os.symlink(cwd or str(tmp_path / 'cwd'), str(proc / 'cwd'))
    return AuditContext(proc_root=str(tmp_path / 'proc'))


ROOTLESS = {'ROOTLESSKIT_STATE_DIR': '/run/user/1000/dockerd-rootless', 'XDG_RUNTIME_DIR': '/run/user/1000',
            'HOME': '/home/pi'}


@pytest.mark.parametrize('argv,env,files,exec_root,source', [
    # Nothing set: dockerd's default (v20.10.24 cmd/dockerd/config_common_unix.go:38-40; 29.x config_linux.go:190/193).
    (['dockerd', '-H', 'fd://'], {}, {}, '/var/run/docker', "dockerd's default"),
    (['dockerd', '-H', 'fd://', '--exec-root', '/srv/run'], {}, {}, '/srv/run', '--exec-root'),
    # The default config file (/etc/docker/daemon.json) fills what the flags left at their default (mergo.Merge).
    (['dockerd', '-H', 'fd://'], {}, {'/etc/docker/daemon.json': '{"exec-root": "/srv/run", "log-level": "warn"}'},
     '/srv/run', '"exec-root" in /etc/docker/daemon.json (the default config file'),
    # --config-file replaces the default file: /etc/docker/daemon.json is not read at all.
    (['dockerd', '-H', 'fd://', '--config-file', '/srv/docker.json'], {},
     {'/srv/docker.json': '{"exec-root": "/srv/b"}', '/etc/docker/daemon.json': '{"exec-root": "/srv/a"}'},
     '/srv/b', '"exec-root" in /srv/docker.json (--config-file'),
    (['dockerd', '-H', 'fd://', '--config-file', '/srv/docker.json'], {},
     {'/srv/docker.json': '{"log-level": "warn"}', '/etc/docker/daemon.json': '{"exec-root": "/srv/a"}'},
     '/var/run/docker', "dockerd's default"),
    # An empty value is what mergo fills from the flag's default.
    (['dockerd', '-H', 'fd://'], {}, {'/etc/docker/daemon.json': '{"exec-root": ""}'}, '/var/run/docker', "dockerd's default"),
    # A nested key is not the top-level "exec-root" the Config struct decodes.
    (['dockerd', '-H', 'fd://'], {}, {'/etc/docker/daemon.json': '{"x": {"exec-root": "/srv/run"}}'},
     '/var/run/docker', "dockerd's default"),
    # Rootless (ROOTLESSKIT_STATE_DIR set): $XDG_RUNTIME_DIR/docker, and the config file under the user's config home.
    (['dockerd'], ROOTLESS, {'/etc/docker/daemon.json': '{"exec-root": "/srv/a"}'}, '/run/user/1000/docker',
     "rootless dockerd's default"),
    (['dockerd'], ROOTLESS, {'/home/pi/.config/docker/daemon.json': '{"exec-root": "/home/pi/run"}'}, '/home/pi/run',
     '"exec-root" in /home/pi/.config/docker/daemon.json (the rootless default config file'),
    (['dockerd'], dict(ROOTLESS, XDG_CONFIG_HOME='/srv/cfg'), {'/srv/cfg/docker/daemon.json': '{"exec-root": "/srv/r"}'},
     '/srv/r', '"exec-root" in /srv/cfg/docker/daemon.json'),
])
def test_exec_root_is_resolved_as_dockerd_resolves_it(tmp_path, argv, env, files, exec_root, source):
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
    ctx = fake_dockerd(tmp_path, argv, env, files)
    found = dockerd.exec_root_of(ctx.processes('dockerd', lambda n: n == 'dockerd')[0][0])
    assert (found['exec_root'], found['from'].startswith(source)) == (exec_root, True), found
    assert found['notes'] == []


@pytest.mark.parametrize('argv,files,exec_root,note', [
    # Both can only be there when the file changed after the start (dockerd refuses both): the flag is in use.
    (['dockerd', '--exec-root', '/srv/flag'], {'/etc/docker/daemon.json': '{"exec-root": "/srv/file"}'}, '/srv/flag',
     'the file changed after it started'),
    (['dockerd', '--config-file', '/srv/gone.json'], {}, '/var/run/docker', 'named by --config-file, is gone'),
    (['dockerd'], {'/etc/docker/daemon.json': '{"exec-root": '}, '/var/run/docker', 'is not JSON (Expecting value'),
    # Bounded like every parsed input (#24): before, RecursionError and a "bug in homelab.postmortem" finding.
    (['dockerd'], {'/etc/docker/daemon.json': '[' * 500000}, '/var/run/docker',
     'is nested deeper than 64 levels (500000) now; dockerd would not start with it'),
    (['dockerd'], {'/etc/docker/daemon.json': '{"exec-root": 5}'}, '/var/run/docker', 'not a string'),
    (['dockerd'], {'/etc/docker/daemon.json': '["exec-root"]'}, '/var/run/docker', 'not a JSON object'),
])
def test_a_config_file_that_changed_since_the_start_is_named(tmp_path, argv, files, exec_root, note):
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
    ctx = fake_dockerd(tmp_path, argv, {}, files)
    found = dockerd.exec_root_of(ctx.processes('dockerd', lambda n: n == 'dockerd')[0][0])
    assert found['exec_root'] == exec_root
    assert any(note in n for n in found['notes']), found['notes']


def test_relative_paths_are_the_daemons_working_directory(tmp_path):
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
    work = tmp_path / 'work'
    work.mkdir()
    ctx = fake_dockerd(tmp_path, ['dockerd', '--config-file', 'daemon.json'], cwd=str(work))
    (work / 'daemon.json').write_text('{"exec-root": "run/docker"}')
    found = dockerd.exec_root_of(ctx.processes('dockerd', lambda n: n == 'dockerd')[0][0])
    assert found['exec_root'] == str(work / 'run' / 'docker')


@pytest.mark.parametrize('argv,env,files,socket,expected', [
    (['dockerd', '-H', 'fd://'], {}, {}, '/var/run/docker.sock', True),  # socket activation: docker.socket's path
    (['dockerd'], {}, {}, '/var/run/docker.sock', True),
    (['dockerd', '-H', 'unix:///run/other.sock'], {}, {}, '/var/run/docker.sock', False),
    # "hosts" in the config file, as dockerd reads them when no -H is given.
    (['dockerd', '--config-file', '/srv/b.json'], {}, {'/srv/b.json': '{"hosts": ["unix:///run/b.sock"], "exec-root": "/srv/b"}'},
     '/run/b.sock', True),
    (['dockerd', '--config-file', '/srv/b.json'], {}, {'/srv/b.json': '{"hosts": ["unix:///run/b.sock"]}'},
     '/var/run/docker.sock', False),
    (['dockerd'], ROOTLESS, {}, '/run/user/1000/docker.sock', True),
])
def test_the_dockerd_serving_the_socket_is_the_one_read(tmp_path, argv, env, files, socket, expected):
    from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
    ctx = fake_dockerd(tmp_path, argv, env, files)
    found = dockerd.exec_root_for_socket(ctx, socket)
    assert (found['dockerd_pid'] == 4242) is expected, found
    if not expected:
        assert found['exec_root'] == '/var/run/docker' and 'no dockerd process serving' in found['from']


CID = 'c' * 64
MAC = '02:42:0a:00:01:02'
IP_LINK_UP = ('24: eth0@if25: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1450 qdisc noqueue state UP mode DEFAULT group '
              'default \\    link/ether %s brd ff:ff:ff:ff:ff:ff link-netnsid 0\n' % MAC)


def running_node(tmp_path, sandbox_key, ip_link=IP_LINK_UP, **settings):
    """A daemon with one running container on overlay network ``ovs`` whose sandbox key is ``sandbox_key``."""
    sock = str(tmp_path / 'docker.sock')
    answers = routes(containers={CID: {'Name': 'web', 'EndpointID': 'e', 'MacAddress': MAC, 'IPv4Address': '10.0.1.2/24'}},
                     failed=False)
    answers['/containers/%s/json' % CID] = (200, {
        'State': {'Status': 'running', 'Running': True, 'Pid': 4321}, 'HostConfig': {'RestartPolicy': {'Name': 'no'}},
        'NetworkSettings': {'SandboxKey': sandbox_key}})
    FakeDaemon(sock, answers)
    (tmp_path / 'proc').mkdir(exist_ok=True)
    values = {'socket': 'unix://' + sock, 'journal_unit': ''}
    values.update(settings)
    return AuditContext(proc_root=str(tmp_path / 'proc'), settings=registry.validate_settings({'docker_overlay_sandbox': values}),
                        euid=0, run_command=lambda cmd: (0, ip_link, ''), which=lambda name: '/usr/bin/' + name)


def netns(tmp_path, exec_root, *names):
    folder = tmp_path / exec_root / 'netns'
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text('')
    return folder


def test_the_sandbox_key_shows_the_exec_root_whatever_was_assumed(tmp_path):
    """A healthy node whose exec root is set where we do not look (the config file, say): ok."""
    folder = netns(tmp_path, 'srv-run', CID[:12], '1-' + NET_ID[:10])
    finding = registry.run_one(running_node(tmp_path, str(folder / CID[:12]), exec_root=str(tmp_path / 'elsewhere')), det)
    assert finding['status'] == 'ok', finding
    assert finding['evidence']['instances'][0]['evidence']['cause'] == 'overlay_up'
    assert finding['evidence']['exec_root'] == str(tmp_path / 'srv-run')
    assert 'sandbox keys' in finding['evidence']['exec_root_from']
    assert 'not at %s' % (tmp_path / 'elsewhere') in finding['evidence']['exec_root_note']
    assert finding['evidence']['networks'][0]['sandbox'] == [str(folder / ('1-' + NET_ID[:10]))]


def test_a_sandbox_gone_from_where_the_key_says_is_affected(tmp_path):
    folder = netns(tmp_path, 'srv-run', CID[:12])
    finding = registry.run_one(running_node(tmp_path, str(folder / CID[:12])), det)
    assert finding['status'] == 'affected'
    item = finding['evidence']['instances'][0]
    assert "the network's sandbox is gone" in item['summary']
    assert (item['evidence']['kind'], item['evidence']['cause'], item['evidence']['causes']) == (
        'container', 'sandbox_gone', ['sandbox_gone'])
    assert (item['evidence']['container'], item['evidence']['carrier']) == ('web', True)


@pytest.mark.parametrize('sandbox_key', ['/nonexistent/netns/cccccccccccc', ''])
def test_a_sandbox_missing_where_it_was_only_assumed_is_unknown(tmp_path, sandbox_key):
    netns(tmp_path, 'assumed')
    finding = registry.run_one(running_node(tmp_path, sandbox_key, exec_root=str(tmp_path / 'assumed')), det)
    item = finding['evidence']['instances'][0]
    assert finding['status'] == item['status'] == 'unknown', finding
    assert "sandbox could not be looked for" in item['summary'] and 'assumed (setting exec_root)' in item['summary']
    assert "could not be looked for" in finding['summary']
    assert (item['evidence']['kind'], item['evidence']['cause'], item['evidence']['carrier']) == ('container', 'sandbox_unseen', True)


def test_an_assumed_directory_that_has_the_sandbox_is_ok(tmp_path):
    netns(tmp_path, 'assumed', '1-' + NET_ID[:10])
    finding = registry.run_one(running_node(tmp_path, '/nonexistent/netns/cccccccccccc', exec_root=str(tmp_path / 'assumed')), det)
    assert finding['status'] == 'ok', finding


def test_no_carrier_is_affected_even_where_the_sandbox_could_not_be_looked_for(tmp_path):
    netns(tmp_path, 'assumed')
    down = IP_LINK_UP.replace('BROADCAST,MULTICAST,UP,LOWER_UP', 'NO-CARRIER,BROADCAST,MULTICAST,UP')
    finding = registry.run_one(running_node(tmp_path, '', ip_link=down, exec_root=str(tmp_path / 'assumed')), det)
    item = finding['evidence']['instances'][0]
    assert finding['status'] == 'affected'
    assert 'no carrier' in item['summary'] and 'sandbox is gone' not in item['summary']
    assert (item['evidence']['cause'], item['evidence']['causes'], item['evidence']['carrier']) == (
        'no_carrier', ['no_carrier'], False)
    assert 'none in' in item['evidence']['sandbox_unknown']


def test_failed_joins_before_the_join_count_is_raised_are_counted(tmp_path):
    """From v29 the deferred sbLeave comes before d.Join (daemon/libnetwork/endpoint.go:514-523, 536 at
    docker-v29.0.0): "could not find subnet" (drivers/overlay/joinleave.go:65) fails before joinCnt++
    (ov_network.go:286) and still takes a join off. Container starts wrap it in "failed to set up container
    networking" (daemon/start_linux.go:38)."""
    task = dict(FAILED_TASK, Status=dict(FAILED_TASK['Status'], Err='starting container failed: failed to set up '
                                         'container networking: could not find subnet for endpoint 4f1c'))
    sock = str(tmp_path / 'docker.sock')
    answers = routes('29.0.0', failed=False)
    answers['/tasks'] = (200, [task])
    FakeDaemon(sock, answers)
    (tmp_path / 'proc').mkdir()
    ctx = AuditContext(proc_root=str(tmp_path / 'proc'), euid=0, settings=registry.validate_settings(
        {'docker_overlay_sandbox': {'socket': sock, 'journal_unit': ''}}))
    finding = registry.run_one(ctx, det)
    assert finding['status'] == 'at_risk'
    assert 'could not find subnet' in finding['evidence']['instances'][0]['evidence']['tasks'][0]['error']


def test_without_root_no_socket_is_said_as_no_daemon_not_needs_root(tmp_path):
    """A user without root on a host with no Docker at all used to read "Needs root"."""
    settings = registry.validate_settings({'docker_overlay_sandbox': {'socket': 'unix://%s' % (tmp_path / 'docker.sock')}})
    absent = registry.run_one(AuditContext(settings=settings, euid=1000), det)
    assert (absent['status'], absent['summary']) == ('not_applicable', 'No Docker daemon socket at %s.' % (tmp_path / 'docker.sock'))
    (tmp_path / 'docker.sock').write_text('')
    present = registry.run_one(AuditContext(settings=settings, euid=1000), det)
    assert present['status'] == 'unknown' and present['summary'].startswith('Needs root')


def test_a_workers_failed_starts_name_each_service_once(tmp_path):
    """A worker cannot list tasks: the task containers it kept are read (labels com.docker.swarm.task.id and
    com.docker.swarm.service.id, as swarm's executor sets them). The services, each once, are what
    docker_overlay_recover_scale_down_failing scales to zero."""
    def task_container(task, service):
        return (200, {'State': {'Status': 'created', 'Error': 'Bind for 0.0.0.0:8080 failed: port is already allocated',
                                'FinishedAt': 'now'},
                      'Config': {'Labels': {'com.docker.swarm.task.id': task, 'com.docker.swarm.service.id': service}},
                      'NetworkSettings': {'Networks': {'ovs': {'NetworkID': NET_ID}}}})
    sock = str(tmp_path / 'docker.sock')
    answers = routes('29.0.0', failed=False)
    answers['/info'] = (200, {'Swarm': {'LocalNodeState': 'active', 'NodeID': 'n2', 'ControlAvailable': False}})
    answers['/containers/json'] = (200, [{'Id': 'a' * 64}, {'Id': 'b' * 64}, {'Id': 'e' * 64}])
    answers['/containers/%s/json' % ('a' * 64)] = task_container('t1', 's1')
    answers['/containers/%s/json' % ('b' * 64)] = task_container('t2', 's2')
    answers['/containers/%s/json' % ('e' * 64)] = task_container('t3', 's1')
    FakeDaemon(sock, answers)
    (tmp_path / 'proc').mkdir()
    ctx = AuditContext(proc_root=str(tmp_path / 'proc'), euid=0, settings=registry.validate_settings(
        {'docker_overlay_sandbox': {'socket': sock, 'journal_unit': ''}}))
    item = registry.run_one(ctx, det)['evidence']['instances'][0]
    assert (item['status'], item['evidence']['kind'], item['evidence']['cause']) == ('at_risk', 'failed_starts', 'in_affected_range')
    assert item['evidence']['services'] == ['s1', 's2']
    assert item['evidence']['failed_network_setup_tasks'] == 3
