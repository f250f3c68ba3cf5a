# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn ``podman container inspect`` into a Quadlet ``.container`` unit.

The unit is built from ``Config.CreateCommand`` (the original ``podman run``)
when podman recorded it, otherwise from the structured inspect fields. Keys
follow podman-systemd.unit(5) for the podman version on the host: a key that
version's Quadlet does not know becomes a ``PodmanArgs=`` argument, and every
such argument is listed, so nothing is carried silently. The restart policy
goes to ``[Service] Restart=``, never to ``PodmanArgs`` (Quadlet runs the
container with ``--rm``; systemd does the restarting).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import tempfile
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner


QUADLET_MIN = (4, 4)
PODMAN_ARGS_MIN = (4, 5)

# Quadlet key for each podman run option, and the first podman whose Quadlet knows it.
KEYED = {
    '--publish': ('PublishPort', (4, 4)), '-p': ('PublishPort', (4, 4)),
    '--volume': ('Volume', (4, 4)), '-v': ('Volume', (4, 4)),
    '--env': ('Environment', (4, 4)), '-e': ('Environment', (4, 4)),
    '--label': ('Label', (4, 4)), '-l': ('Label', (4, 4)),
    '--network': ('Network', (4, 4)), '--net': ('Network', (4, 4)),
    '--cap-add': ('AddCapability', (4, 4)), '--cap-drop': ('DropCapability', (4, 4)),
    '--device': ('AddDevice', (4, 5)),
    '--uidmap': ('UIDMap', (4, 8)), '--gidmap': ('GIDMap', (4, 8)), '--userns': ('UserNS', (4, 8)),
    '--hostname': ('HostName', (4, 5)), '-h': ('HostName', (4, 5)),
    '--mount': ('Mount', (4, 5)),
}
KEYED_FLAGS = {'--read-only': ('ReadOnly', (4, 4)), '--init': ('RunInit', (4, 4))}
# Options handled by hand or owned by Quadlet/systemd.
SPECIAL_VALUE = ('--name', '--restart', '--user', '-u')
DROPPED_VALUE = {
    '--cidfile': 'Quadlet manages its own --cidfile',
    '--conmon-pidfile': 'Quadlet runs conmon under systemd',
    '--sdnotify': 'Quadlet sets --sdnotify=conmon',
    '--pod-id-file': 'pods are not converted',
}
DROPPED_FLAGS = {
    '--detach': 'Quadlet runs the container detached', '-d': 'Quadlet runs the container detached',
    '--rm': 'Quadlet adds --rm', '--replace': 'Quadlet adds --replace',
}
# Options carried as PodmanArgs, with whether they take a value.
PASSTHROUGH_VALUE = (
    '--add-host', '--annotation', '--blkio-weight', '--cgroup-parent', '--cgroupns', '--cgroups', '--cpu-period',
    '--cpu-quota', '--cpu-shares', '--cpus', '--cpuset-cpus', '--cpuset-mems', '--dns', '--dns-option',
    '--dns-search', '--entrypoint', '--env-file', '--expose', '--group-add', '--health-cmd',
    '--health-interval', '--health-retries', '--health-start-period', '--health-timeout', '--ip', '--ip6',
    '--ipc', '--label-file', '--log-driver', '--log-opt', '--mac-address', '--memory', '-m',
    '--memory-reservation', '--memory-swap', '--oom-score-adj', '--pid', '--pids-limit', '--pull',
    '--security-opt', '--shm-size', '--stop-signal', '--stop-timeout', '--subgidname', '--subuidname',
    '--sysctl', '--systemd', '--tmpfs', '--tz', '--ulimit', '--umask', '--uts', '--workdir', '-w',
    '--arch', '--os', '--platform', '--variant', '--secret', '--log-level',
)
PASSTHROUGH_FLAGS = ('--privileged', '--tty', '-t', '--interactive', '-i', '--no-healthcheck',
                     '--oom-kill-disable', '--read-only-tmpfs', '--env-host', '--http-proxy', '--no-hosts',
                     '--quiet', '-q', '--sig-proxy')
# podman's global options that may precede "run"; --syslog only helps podman's own restart path.
GLOBAL_VALUE = ('--root', '--runroot', '--log-level', '--cgroup-manager', '--events-backend', '--runtime',
                '--storage-driver', '--tmpdir', '--network-cmd-path', '--conmon', '--url', '--connection',
                '--identity', '--module', '--storage-opt', '--hooks-dir', '--ssh')
GLOBAL_FLAGS = ('--syslog', '--remote', '-r', '--noout')

REFUSED = {
    '--pod': 'containers in a pod are converted with their pod (.pod units); not handled here',
    '--rootfs': 'a container run from a root filesystem has no image for Image=',
}
# Environment podman sets on every container; not part of the user's intent.
PODMAN_ENV = ('container', 'HOSTNAME', 'HOME', 'TERM')
DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
RESTART_MAP = {'always': 'always', 'unless-stopped': 'always', 'on-failure': 'on-failure'}


class ConversionProblem(HostInputError):
    pass


class Unit(object):
    """A [Container] section under construction, with the notes on what was carried how."""

    def __init__(self, version):
        self.version = version
        self.keys = []          # (key, value)
        self.podman_args = []   # already-joined arguments
        self.notes = []

    def knows(self, minimum):
        return self.version is None or self.version >= minimum

    def add(self, key, value, minimum=(4, 4), option=None, joined=None):
        if self.knows(minimum):
            self.keys.append((key, value))
            return
        self.passthrough(joined or '%s=%s' % (option, value),
                         'Quadlet in podman %s has no %s= (needs %s)' % (_dotted(self.version), key, _dotted(minimum)))

    def passthrough(self, arg, why):
        if not self.knows(PODMAN_ARGS_MIN):
            raise ConversionProblem('%s cannot be carried: %s, and Quadlet in podman %s has no PodmanArgs= either'
                                    % (arg, why, _dotted(self.version)))
        self.podman_args.append(arg)
        self.notes.append('PodmanArgs=%s (%s)' % (arg, why))


def _dotted(version):
    return '.'.join(str(v) for v in version) if version else '?'


def _split_option(argv, index):
    """(name, inline value or None) for argv[index]."""
    arg = argv[index]
    if arg.startswith('--') and '=' in arg:
        name, value = arg.split('=', 1)
        return name, value
    if not arg.startswith('--') and len(arg) > 2 and arg[:2] in ('-p', '-v', '-e', '-l', '-u', '-h', '-m', '-w'):
        return arg[:2], arg[2:]
    return arg, None


def _run_index(argv):
    """Index of the first argument after 'run'/'create' (skipping podman's global options)."""
    index = 1
    globals_seen = []
    while index < len(argv):
        arg = argv[index]
        name = arg.split('=', 1)[0]
        if arg in ('run', 'create'):
            return index + 1, globals_seen
        if arg == 'container' and index + 1 < len(argv) and argv[index + 1] in ('run', 'create'):
            return index + 2, globals_seen
        if name in GLOBAL_VALUE:
            globals_seen.append(arg if '=' in arg else '%s %s' % (arg, argv[index + 1] if index + 1 < len(argv) else ''))
            index += 1 if '=' in arg else 2
            continue
        if name in GLOBAL_FLAGS:
            globals_seen.append(arg)
            index += 1
            continue
        break
    raise ConversionProblem('CreateCommand is not a podman run/create command line: %s'
                            % ' '.join(argv[:6]))


def from_create_command(container, version, env_values=None):
    """Build the unit from the recorded ``podman run`` command line."""
    argv = container.create_command
    unit = Unit(version)
    start, globals_seen = _run_index(argv)
    for option in globals_seen:
        unit.notes.append('global option %s dropped (%s)' % (
            option, 'Quadlet does not use podman\'s restart path, which is all --syslog reported on'
            if option.startswith('--syslog') else 'set it in containers.conf; Quadlet runs plain podman'))
    user = None
    index = start
    positional = None
    while index < len(argv):
        arg = argv[index]
        if arg == '--':
            positional = index + 1
            break
        if not arg.startswith('-') or arg == '-':
            positional = index
            break
        name, inline = _split_option(argv, index)
        takes_value = (name in KEYED or name in SPECIAL_VALUE or name in DROPPED_VALUE
                       or name in PASSTHROUGH_VALUE or name in REFUSED)
        if takes_value and inline is None:
            if index + 1 >= len(argv):
                raise ConversionProblem('%s has no value in CreateCommand' % name)
            value = argv[index + 1]
            index += 2
        else:
            value = inline
            index += 1
        if name in REFUSED:
            raise ConversionProblem('%s %s: %s' % (name, value, REFUSED[name]))
        if name in KEYED:
            key, minimum = KEYED[name]
            if key == 'Environment' and '=' not in value:
                # "-e NAME" takes the value from the caller's environment; inspect has what it got.
                if env_values and value in env_values:
                    value = '%s=%s' % (value, env_values[value])
                else:
                    raise ConversionProblem('-e %s took its value from the environment of the shell that created '
                                            'the container, and inspect does not show it' % value)
            unit.add(key, value, minimum, option=name)
        elif name in KEYED_FLAGS:
            key, minimum = KEYED_FLAGS[name]
            unit.add(key, 'true', minimum, joined=name)
        elif name in ('--user', '-u'):
            user = value
        elif name == '--name' or name == '--restart':
            continue
        elif name in DROPPED_VALUE:
            unit.notes.append('%s %s dropped (%s)' % (name, value, DROPPED_VALUE[name]))
        elif name in DROPPED_FLAGS:
            unit.notes.append('%s dropped (%s)' % (name, DROPPED_FLAGS[name]))
        elif name in PASSTHROUGH_VALUE:
            unit.passthrough('%s=%s' % (name, value), 'no Quadlet key used for %s' % name)
        elif name in PASSTHROUGH_FLAGS:
            unit.passthrough(arg, 'no Quadlet key used for %s' % name)
        elif inline is not None and name.startswith('--'):
            unit.passthrough(arg, 'option %s is not known to the conversion; carried as written' % name)
        else:
            raise ConversionProblem('option %s in CreateCommand is not known to the conversion, and without '
                                    '"=" it cannot be told whether it takes a value; convert by hand' % arg)
    if positional is None or positional >= len(argv):
        raise ConversionProblem('CreateCommand names no image')
    _add_user(unit, user)
    return unit, argv[positional], argv[positional + 1:]


def _add_user(unit, user):
    if not user:
        return
    if ':' in user:
        name, group = user.split(':', 1)
        unit.add('User', name)
        unit.add('Group', group)
    else:
        unit.add('User', user)


def from_inspect(container, image_config, version):
    """Build the unit from the structured fields, for containers made through the API."""
    raw = container.raw
    config = raw.get('Config') or {}
    host = raw.get('HostConfig') or {}
    image_config = image_config or {}
    unit = Unit(version)
    unit.notes.append('no CreateCommand (created through the API): built from the inspect fields')
    image_env = set(image_config.get('Env') or [])
    for item in config.get('Env') or []:
        name = item.split('=', 1)[0]
        if item in image_env or name in PODMAN_ENV or item == DEFAULT_PATH:
            continue
        unit.add('Environment', item, option='--env')
    image_labels = image_config.get('Labels') or {}
    for name, value in sorted((config.get('Labels') or {}).items()):
        if image_labels.get(name) != value:
            unit.add('Label', '%s=%s' % (name, value), option='--label')
    for port, bindings in sorted((host.get('PortBindings') or {}).items()):
        for binding in bindings or []:
            host_part = binding.get('HostPort') or ''
            if binding.get('HostIp'):
                host_part = '%s:%s' % (binding['HostIp'], host_part)
            spec = '%s:%s' % (host_part, port) if host_part else port
            if spec.endswith('/tcp'):
                spec = spec[:-4]
            unit.add('PublishPort', spec, option='--publish')
    for mount in raw.get('Mounts') or []:
        source = mount.get('Name') if mount.get('Type') == 'volume' else mount.get('Source')
        if not source or not mount.get('Destination'):
            continue
        spec = '%s:%s' % (source, mount['Destination'])
        if mount.get('RW') is False:
            spec += ':ro'
        unit.add('Volume', spec, option='--volume')
    network = host.get('NetworkMode') or ''
    if network and network not in ('bridge', 'default', 'private'):
        unit.add('Network', network, option='--network')
    for cap in host.get('CapAdd') or []:
        unit.add('AddCapability', cap, option='--cap-add')
    for cap in host.get('CapDrop') or []:
        unit.add('DropCapability', cap, option='--cap-drop')
    for device in host.get('Devices') or []:
        spec = device.get('PathOnHost') or ''
        if device.get('PathInContainer') and device['PathInContainer'] != spec:
            spec += ':' + device['PathInContainer']
        if spec:
            unit.add('AddDevice', spec, (4, 5), option='--device')
    for uid in container.uid_map:
        unit.add('UIDMap', uid, (4, 8), option='--uidmap')
    for gid in container.gid_map:
        unit.add('GIDMap', gid, (4, 8), option='--gidmap')
    if host.get('Privileged'):
        unit.passthrough('--privileged', 'no Quadlet key used for --privileged')
    if host.get('ReadonlyRootfs'):
        unit.add('ReadOnly', 'true', joined='--read-only')
    for opt in host.get('SecurityOpt') or []:
        unit.passthrough('--security-opt=%s' % opt, 'no Quadlet key used for --security-opt')
    entrypoint = config.get('Entrypoint')
    entrypoint = [e for e in ([entrypoint] if isinstance(entrypoint, str) else list(entrypoint or [])) if e]
    image_entrypoint = [e for e in (image_config.get('Entrypoint') or []) if e]
    if entrypoint != image_entrypoint:
        unit.passthrough('--entrypoint=%s' % json.dumps(entrypoint), 'no Quadlet key used for --entrypoint')
    _add_user(unit, config.get('User') or '')
    command = list(config.get('Cmd') or [])
    if command == list(image_config.get('Cmd') or []):
        command = []
    return unit, container.image, command


def render(container, unit, image, command, restart_sec=1, unconfined=False):
    """The .container file text: deterministic, so a second run compares equal."""
    if unconfined:
        unit.passthrough('--security-opt=apparmor=unconfined',
                         'apparmor=unconfined was asked for: the container runs without AppArmor confinement')
    unit_section = ['[Unit]', 'Description=%s (podman container converted to Quadlet)' % escape(container.name)]
    service = ['[Service]']
    restart = RESTART_MAP.get(container.restart_policy)
    if restart:
        service.append('Restart=%s' % restart)
        if restart_sec:
            service.append('RestartSec=%s' % restart_sec)
        if container.restart_policy != 'on-failure':
            # podman retried forever; systemd's default start limit gives up after 5 starts in 10 s.
            unit_section.append('StartLimitIntervalSec=0')
        elif container.restart_retries:
            unit.notes.append('on-failure:%d: systemd has no total retry count; its start rate limit applies instead'
                              % container.restart_retries)
    else:
        unit.notes.append('restart policy %r: the unit does not restart the container' % container.policy_text)
    section = ['[Container]', 'ContainerName=%s' % container.name, 'Image=%s' % escape(image)]
    if command:
        section.append('Exec=%s' % ' '.join(quote_arg(a) for a in command))
    for key, value in unit.keys:
        section.append('%s=%s' % (key, quote_arg(value) if key in QUOTED_KEYS else escape(value)))
    if unit.podman_args:
        section.append('PodmanArgs=%s' % ' '.join(quote_arg(a) for a in unit.podman_args))
    header = ['# Converted from podman container %s by homelab.postmortem.podman_quadlet.' % container.name,
              "# systemd restarts it (Restart= below); podman's own restart policy is not used." if restart
              else '# The container had no restart policy, so neither does this unit.']
    return '\n'.join(header + unit_section + [''] + section + [''] + service
                     + ['', '[Install]', 'WantedBy=default.target', ''])


# Keys whose value Quadlet splits like a command line.
QUOTED_KEYS = ('Environment', 'Label')
_SAFE = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+%$')


def escape(value):
    """systemd expands %specifiers and $VARIABLES in the generated ExecStart; keep both literal."""
    return value.replace('%', '%%').replace('$', '$$')


def quote_arg(value):
    value = escape(value)
    if value and all(c in _SAFE for c in value):
        return value
    return '"%s"' % value.replace('\\', '\\\\').replace('"', '\\"')


def find_generator(which, candidates=('/usr/libexec/podman/quadlet', '/usr/lib/podman/quadlet',
                                      '/usr/lib/systemd/system-generators/podman-system-generator')):
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return which('quadlet')


def dry_run(generator, filename, text, timeout=30, runner=None):
    """Run the Quadlet generator on the unit alone; (ok, generated service text, messages)."""
    runner = runner or CommandRunner(timeout=timeout)
    workdir = tempfile.mkdtemp(prefix='postmortem-quadlet-')
    try:
        with open(os.path.join(workdir, filename), 'w') as handle:
            handle.write(text)
        try:
            returncode, out, err = runner.run([generator, '-dryrun'], timeout=timeout, env={'QUADLET_UNIT_DIRS': workdir})
        except HostInputError as exc:
            return False, '', 'the Quadlet generator: %s' % exc
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    messages = [line for line in err.splitlines() if line.strip() and 'Loading source unit file' not in line]
    service = filename.rsplit('.', 1)[0] + '.service'
    ok = returncode == 0 and ('---%s---' % service) in out and not any(
        'unsupported' in m.lower() or 'error' in m.lower() for m in messages)
    return ok, out, '\n'.join(messages)
