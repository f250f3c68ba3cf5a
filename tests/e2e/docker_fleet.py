"""A real two-node Docker swarm on this machine, started and stopped by the tests.

Debian's dockerd 20.10 runs twice, each in a network namespace of its own
(``pm-dock-a``, ``pm-dock-b``) joined by a bridge in the host namespace, with
its own socket, exec root and data root, so nothing touches a Docker the
machine may already run. Node A initialises the swarm, node B joins it; an
attachable overlay network ``pmovs`` carries a container on each node. The
image is the tiny busybox root filesystem the podman tests use, imported into
each daemon (no registry).

``dockerd`` is started through ``nsenter --net=/run/netns/X`` because ``ip
netns exec`` remounts /sys and fails with "Devices cgroup isn't mounted" here.

Where each daemon's exec root is set (``up(exec_root_in=...)``):

- ``flag`` (the default): ``--exec-root`` on both command lines.
- ``config``: in config files, the way most hosts set it. Node A reads dockerd's
  default config file, /etc/docker/daemon.json, which the fleet writes (a file
  that was there is put back by ``down()``); node B is started with
  ``--config-file`` naming a file of its own that holds its exec root and its
  socket (``"hosts"``), so neither is on its command line. Upstream refuses a key
  that is both a flag and in the file, so node B must not read
  /etc/docker/daemon.json: that is why it has a file of its own.

``restart`` starts a daemon again with the command line it had.

Usage from a shell: python3 docker_fleet.py up|up-config|down|status|broken|restart NODE
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO_ROOT, 'build')
RUN = '/run/pm-docker'
BRIDGE = 'pmdockbr0'
SUBNET = '10.231.77'
IMAGE = 'local/pm-busybox:1'
NETWORK = 'pmovs'
# dockerd's default config file (v20.10.24 cmd/dockerd/daemon_unix.go:27-47).
ETC_CONFIG = '/etc/docker/daemon.json'
ETC_BACKUP = os.path.join(RUN, 'etc-docker-daemon.json.orig')
ETC_OURS = os.path.join(RUN, 'etc-docker-daemon.json.ours')


class Node:
    def __init__(self, name, index):
        self.name = name
        self.netns = 'pm-dock-%s' % name
        self.address = '%s.%d' % (SUBNET, index + 1)
        self.socket = os.path.join(RUN, '%s.sock' % name)
        self.exec_root = os.path.join(RUN, name)
        self.data_root = os.path.join(BUILD, 'docker', name)
        self.pidfile = os.path.join(RUN, '%s.pid' % name)
        self.log = os.path.join(BUILD, 'docker', '%s.log' % name)
        self.exec_root_in = 'flag'  # or 'default-config' (/etc/docker/daemon.json), 'config-file' (--config-file)
        self.config_file = os.path.join(RUN, '%s-daemon.json' % name)

    @property
    def host(self):
        return 'unix://' + self.socket

    def docker(self, *args, check=True, timeout=120):
        proc = subprocess.run(['docker', '-H', self.host] + list(args), capture_output=True, text=True,
                              timeout=timeout, check=False, env=dict(os.environ, DOCKER_API_VERSION='1.41'))
        if check and proc.returncode != 0:
            raise RuntimeError('docker -H %s %s failed: %s' % (self.host, ' '.join(args), proc.stderr.strip()))
        return proc.stdout.strip()

    def pid(self):
        try:
            with open(self.pidfile) as handle:
                pid = int(handle.read().strip())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def nsenter(self):
        return ['nsenter', '--net=/run/netns/%s' % self.netns]

    def dockerd_argv(self):
        where = {'flag': ['-H', self.host, '--exec-root', self.exec_root],
                 'default-config': ['-H', self.host],
                 'config-file': ['--config-file', self.config_file]}[self.exec_root_in]
        return self.nsenter() + ['dockerd'] + where + ['--data-root', self.data_root, '--pidfile', self.pidfile,
                                                       '--storage-driver', 'vfs']

    def write_config(self):
        if self.exec_root_in == 'default-config':
            write_etc_config({'exec-root': self.exec_root, 'log-level': 'info'})
        elif self.exec_root_in == 'config-file':
            with open(self.config_file, 'w') as handle:
                json.dump({'exec-root': self.exec_root, 'hosts': [self.host]}, handle)

    def running_argv(self):
        pid = self.pid()
        if not pid:
            return None
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as handle:
                return self.nsenter() + [part.decode() for part in handle.read().split(b'\0') if part]
        except OSError:
            return None  # exited meanwhile

    def start(self, argv=None):
        """Start dockerd: with ``argv`` as it was (a restart), else as ``exec_root_in`` says."""
        os.makedirs(self.data_root, exist_ok=True)
        if argv is None:
            self.write_config()
        log = open(self.log, 'ab')
        subprocess.Popen(argv or self.dockerd_argv(), stdout=log, stderr=log, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(self.socket) and subprocess.run(
                    ['docker', '-H', self.host, 'version'], capture_output=True, check=False,
                    env=dict(os.environ, DOCKER_API_VERSION='1.41')).returncode == 0:
                return
            time.sleep(0.2)
        raise RuntimeError('dockerd %s did not come up; see %s' % (self.name, self.log))

    def stop(self):
        pid = self.pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            deadline = time.time() + 30
            while time.time() < deadline and self.pid():
                time.sleep(0.2)
            if self.pid():
                os.kill(pid, signal.SIGKILL)

    def restart(self):
        argv = self.running_argv()
        self.stop()
        self.start(argv)


NODES = [Node('a', 0), Node('b', 1)]


def write_etc_config(data):
    """Write dockerd's default config file; one that was there is kept aside for restore_etc_config()."""
    text = json.dumps(data, indent=1) + '\n'
    os.makedirs(RUN, exist_ok=True)
    if os.path.exists(ETC_CONFIG) and not os.path.exists(ETC_BACKUP) and not _etc_config_is_ours():
        shutil.copy2(ETC_CONFIG, ETC_BACKUP)
    os.makedirs(os.path.dirname(ETC_CONFIG), exist_ok=True)
    with open(ETC_OURS, 'w') as handle:
        handle.write(text)
    with open(ETC_CONFIG, 'w') as handle:
        handle.write(text)


def _etc_config_is_ours():
    try:
        with open(ETC_CONFIG) as current, open(ETC_OURS) as ours:
            return current.read() == ours.read()
    except OSError:
        return False


def restore_etc_config():
    if _etc_config_is_ours():
        os.unlink(ETC_CONFIG)
    if os.path.exists(ETC_BACKUP):
        shutil.move(ETC_BACKUP, ETC_CONFIG)
    if os.path.exists(ETC_OURS):
        os.unlink(ETC_OURS)


def sh(*args, check=True):
    proc = subprocess.run(list(args), capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError('%s failed: %s' % (' '.join(args), proc.stderr.strip()))
    return proc.stdout.strip()


def network_up():
    if not os.path.exists('/sys/class/net/%s' % BRIDGE):
        sh('ip', 'link', 'add', BRIDGE, 'type', 'bridge')
    sh('ip', 'link', 'set', BRIDGE, 'up')
    for index, node in enumerate(NODES):
        if not os.path.exists('/run/netns/%s' % node.netns):
            sh('ip', 'netns', 'add', node.netns)
        host_end, node_end = 'pmdh%s' % node.name, 'pmdn%s' % node.name
        if not os.path.exists('/sys/class/net/%s' % host_end):
            sh('ip', 'link', 'add', host_end, 'type', 'veth', 'peer', 'name', node_end)
            sh('ip', 'link', 'set', node_end, 'netns', node.netns)
            sh('ip', 'link', 'set', host_end, 'master', BRIDGE, 'up')
            ns = ['nsenter', '--net=/run/netns/%s' % node.netns]
            sh(*(ns + ['ip', 'link', 'set', 'lo', 'up']))
            sh(*(ns + ['ip', 'addr', 'add', '%s/24' % node.address, 'dev', node_end]))
            sh(*(ns + ['ip', 'link', 'set', node_end, 'up']))


def image_tar():
    tar = os.path.join(BUILD, 'images', 'postmortem-tiny.tar')
    if not os.path.exists(tar):
        os.makedirs(os.path.dirname(tar), exist_ok=True)
        subprocess.run([sys.executable, os.path.join(REPO_ROOT, 'scripts', 'make_tiny_image.py'), tar], check=True)
    return tar


def up(exec_root_in='flag'):
    """Start both daemons, form the swarm, create the overlay network; idempotent for running daemons.

    ``exec_root_in``: ``flag`` (--exec-root on both command lines) or ``config`` (node A in
    /etc/docker/daemon.json, node B in a file named by --config-file).
    """
    modes = {'flag': ('flag', 'flag'), 'config': ('default-config', 'config-file')}[exec_root_in]
    os.makedirs(RUN, exist_ok=True)
    network_up()
    for node, mode in zip(NODES, modes):
        node.exec_root_in = mode
        if not node.pid():
            node.start()
        if IMAGE not in node.docker('images', '--format', '{{.Repository}}:{{.Tag}}'):
            with open(image_tar(), 'rb') as handle:
                subprocess.run(['docker', '-H', node.host, 'import', '-c', 'CMD ["/bin/sh"]', '-c', 'ENV PATH=/bin:/usr/bin',
                                '-', IMAGE], stdin=handle, check=True, capture_output=True,
                               env=dict(os.environ, DOCKER_API_VERSION='1.41'))
    a, b = NODES
    if a.docker('info', '--format', '{{.Swarm.LocalNodeState}}') != 'active':
        a.docker('swarm', 'init', '--advertise-addr', a.address, '--listen-addr', '%s:2377' % a.address)
    if b.docker('info', '--format', '{{.Swarm.LocalNodeState}}') != 'active':
        token = a.docker('swarm', 'join-token', '-q', 'worker')
        b.docker('swarm', 'join', '--advertise-addr', b.address, '--token', token, '%s:2377' % a.address)
    if NETWORK not in a.docker('network', 'ls', '--format', '{{.Name}}'):
        a.docker('network', 'create', '-d', 'overlay', '--attachable', NETWORK)
    return status()


def node_id(node):
    return node.docker('info', '--format', '{{.Swarm.NodeID}}')


def run_container(node, name, *extra):
    node.docker('rm', '-f', name, check=False)
    return node.docker('run', '-d', '--name', name, '--network', NETWORK, *extra, IMAGE, 'sleep', '100000')


def status():
    return dict((n.name, {'pid': n.pid(), 'socket': n.socket, 'exec_root': n.exec_root, 'argv': n.running_argv()})
                for n in NODES)


def down():
    for node in NODES:
        if node.pid():
            for cid in node.docker('ps', '-aq', check=False).split():
                node.docker('rm', '-f', cid, check=False)
            node.docker('swarm', 'leave', '--force', check=False)
        node.stop()
        subprocess.run(['ip', 'netns', 'delete', node.netns], capture_output=True, check=False)
        subprocess.run(['ip', 'link', 'delete', 'pmdh%s' % node.name], capture_output=True, check=False)
        # Leftover mounts under the exec root keep its files busy.
        for line in reversed(open('/proc/self/mounts').read().splitlines()):
            target = line.split()[1]
            if target.startswith(node.exec_root + '/') or target.startswith(node.data_root + '/'):
                subprocess.run(['umount', '-l', target], capture_output=True, check=False)
        shutil.rmtree(node.exec_root, ignore_errors=True)
        shutil.rmtree(node.data_root, ignore_errors=True)
        if os.path.exists(node.config_file):
            os.unlink(node.config_file)
    restore_etc_config()
    subprocess.run(['ip', 'link', 'delete', BRIDGE], capture_output=True, check=False)


def sandbox_of(node, network=NETWORK):
    net_id = node.docker('network', 'inspect', network, '--format', '{{.Id}}')
    folder = os.path.join(node.exec_root, 'netns')
    for name in os.listdir(folder):
        epoch, _sep, rest = name.partition('-')
        if epoch.isdigit() and net_id.startswith(rest):
            return os.path.join(folder, name)
    return None


def cut_carrier(node, container):
    """Take down the sandbox side of the container's veth: the container sees NO-CARRIER."""
    pid = node.docker('inspect', container, '--format', '{{.State.Pid}}')
    link = sh('nsenter', '-t', pid, '-n', 'ip', '-o', 'link', 'show', 'eth0')
    peer_index = link.split(':', 2)[1].split('@if')[1]
    sandbox = sandbox_of(node)
    peers = sh('nsenter', '--net=%s' % sandbox, 'ip', '-o', 'link', 'show')
    peer = [line.split(':')[1].strip().split('@')[0] for line in peers.splitlines() if line.startswith(peer_index + ':')][0]
    sh('nsenter', '--net=%s' % sandbox, 'ip', 'link', 'set', peer, 'down')
    return peer


def remove_sandbox(node):
    sandbox = sandbox_of(node)
    subprocess.run(['umount', sandbox], capture_output=True, check=False)
    os.unlink(sandbox)
    return sandbox


def broken():
    """The Molecule scenario's starting point: node A has a container cut off its overlay network
    (pm-c1, no restart policy) next to one with a restart policy (pm-c3); node B is healthy (pm-c2)."""
    up()
    a, b = NODES
    run_container(a, 'pm-c1')
    run_container(a, 'pm-c3', '--restart', 'always')
    run_container(b, 'pm-c2')
    cut_carrier(a, 'pm-c1')
    return status()


def by_name(name):
    return [n for n in NODES if n.name == name][0]


if __name__ == '__main__':
    action = sys.argv[1] if len(sys.argv) > 1 else 'status'
    actions = {'up': up, 'up-config': lambda: up('config'), 'down': lambda: down() or {}, 'status': status,
               'broken': broken,
               # Restarts one node's dockerd, the way `systemctl restart docker` would.
               'restart': lambda: by_name(sys.argv[2]).restart() or status()}
    print(json.dumps(actions[action](), indent=1))
