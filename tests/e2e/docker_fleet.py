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

Usage from a shell: python3 docker_fleet.py up|down|status
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

    def dockerd_argv(self):
        return ['nsenter', '--net=/run/netns/%s' % self.netns, 'dockerd', '-H', self.host,
                '--exec-root', self.exec_root, '--data-root', self.data_root, '--pidfile', self.pidfile,
                '--storage-driver', 'vfs']

    def start(self):
        os.makedirs(self.data_root, exist_ok=True)
        log = open(self.log, 'ab')
        subprocess.Popen(self.dockerd_argv(), stdout=log, stderr=log, start_new_session=True)
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
        self.stop()
        self.start()


NODES = [Node('a', 0), Node('b', 1)]


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


def up():
    """Start both daemons, form the swarm, create the overlay network; idempotent."""
    os.makedirs(RUN, exist_ok=True)
    network_up()
    for node in NODES:
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
    return dict((n.name, {'pid': n.pid(), 'socket': n.socket, 'exec_root': n.exec_root}) for n in NODES)


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
    actions = {'up': up, 'down': lambda: down() or {}, 'status': status, 'broken': broken,
               # Restarts one node's dockerd, the way `systemctl restart docker` would.
               'restart': lambda: by_name(sys.argv[2]).restart() or status()}
    print(json.dumps(actions[action](), indent=1))
