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

import csv
import json
import os
import re
import shutil
import tempfile

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options
from ansible_collections.homelab.postmortem.plugins.module_utils.podman.quadlet_keys import (
    GLOBAL_ARGS_MIN, KEY_MINIMUMS, KEYS, NOTIFY_HEALTHY_MIN, PODMAN_ARGS_MIN, QUADLET_OWNS, REFUSED, SECURITY_KEYS)
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner


# Environment podman sets on every container; not part of the user's intent.
PODMAN_ENV = ('container', 'HOSTNAME', 'HOME', 'TERM')
DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
RESTART_MAP = {'always': 'always', 'unless-stopped': 'always', 'on-failure': 'on-failure'}
_PORT_RANGE = re.compile(r'^\d+(-\d+)?(/udp|/tcp)?$')


class ConversionProblem(HostInputError):
    pass


class Unit(object):
    """A [Container] section under construction, with the notes on what was carried how."""

    def __init__(self, version):
        self.version = version
        self.keys = []          # (key, rendered value)
        self.podman_args = []   # rendered lines for PodmanArgs=
        self.global_args = []   # rendered lines for GlobalArgs=
        self.notes = []

    def knows(self, minimum):
        return self.version is None or self.version >= minimum

    def add(self, key, value, how, tokens, minimum=None):
        """Key=value when this Quadlet has the key and the value survives its parser; else PodmanArgs."""
        minimum = minimum or KEY_MINIMUMS.get(key, (4, 4))
        if not self.knows(minimum):
            return self.passthrough(tokens, 'Quadlet in podman %s has no %s= (needs %s)'
                                    % (_dotted(self.version), key, _dotted(minimum)))
        rendered, why = render_value(value, how)
        if rendered is None:
            return self.passthrough(tokens, '%s= cannot hold %r: %s' % (key, value, why))
        self.keys.append((key, rendered))
        return None

    def passthrough(self, tokens, why):
        """``tokens``: one option as a list of words, or an options.Option (written in its long form)."""
        words = tokens.canonical_tokens() if isinstance(tokens, options.Option) else [one_token(tokens)]
        if not self.knows(PODMAN_ARGS_MIN):
            raise ConversionProblem('%s cannot be carried: %s, and Quadlet in podman %s has no PodmanArgs= either'
                                    % (' '.join(words), why, _dotted(self.version)))
        self.podman_args.append(' '.join(quote_arg(w) for w in words))
        self.notes.append('PodmanArgs=%s (%s)' % (' '.join(words), why))

    def global_option(self, option):
        words = option.canonical_tokens()
        if not self.knows(GLOBAL_ARGS_MIN):
            raise ConversionProblem('global option %s cannot be carried: Quadlet in podman %s has no GlobalArgs= '
                                    '(needs %s)' % (' '.join(words), _dotted(self.version), _dotted(GLOBAL_ARGS_MIN)))
        self.global_args.append(' '.join(quote_arg(w) for w in words))


def one_token(tokens):
    """``--opt value`` as ``--opt=value``: the same to podman, and an empty value survives the split."""
    return tokens[0] + '=' + tokens[1] if len(tokens) == 2 else tokens[0]


def _dotted(version):
    return '.'.join(str(v) for v in version) if version else '?'


def _control(value):
    return any(ord(c) < 32 or ord(c) == 127 for c in value)


def render_value(value, how):
    """(text for the unit, None) or (None, why the key cannot hold ``value``)."""
    if how in ('args', 'keyval'):
        return quote_arg(value, always=False), None
    if how == 'bool':
        return value, None
    if value == '':
        return None, 'an empty value is ignored (or clears the key)'
    if _control(value):
        return None, 'the key is not unescaped, so a control character cannot be written'
    if value != value.strip():
        return None, 'leading or trailing blanks are stripped'
    if value.endswith('\\'):
        return None, 'a trailing backslash continues the line'
    if how == 'single' and (value.startswith('"') or value.endswith('"')):
        return None, 'surrounding double quotes are stripped'
    if how == 'words':
        if any(c in value for c in '"\'\\'):
            return None, 'the key is split into words, and quotes or backslashes in one cannot be kept'
        return (escape(value) if not any(c.isspace() for c in value) else '"%s"' % escape(value)), None
    return escape(value), None


def from_create_command(container, version, specs, env_values=None, version_text=None):
    """Build the unit from the recorded ``podman run`` command line.

    ``specs`` is (global OptionSpec, run OptionSpec) of the podman on the host, from its --help.
    Returns (unit, image or None, rootfs or None, command).
    """
    try:
        command = options.parse_command(container.create_command, specs[0], specs[1],
                                        version_text or _dotted(version))
    except options.OptionError as exc:
        raise ConversionProblem('%s (convert by hand)' % exc)
    unit = Unit(version)
    for option in command.global_options:
        if (option.name == '--module' and option.value is not None and unit.knows(KEY_MINIMUMS['ContainersConfModule'])
                and render_value(option.value, 'multi')[0] is not None):
            unit.add('ContainersConfModule', option.value, 'multi', option)
        else:
            unit.global_option(option)
    rootfs = command.flag('--rootfs')
    user = None
    for option in command.options:
        _convert_option(unit, option, env_values, container)
        if option.name == '--user':
            user = option
    if user is not None:
        _add_user(unit, user.value, user)
    if not command.positional:
        raise ConversionProblem('CreateCommand names no %s' % ('root filesystem' if rootfs else 'image'))
    if rootfs and not unit.knows(KEY_MINIMUMS['Rootfs']):
        raise ConversionProblem('--rootfs: Quadlet in podman %s has no Rootfs= (needs 4.5)' % _dotted(version))
    head = command.positional[0]
    return unit, (None if rootfs else head), (head if rootfs else None), command.positional[1:]


def _convert_option(unit, option, env_values, container):
    name, value = option.name, option.value
    if name in REFUSED:
        raise ConversionProblem('%s %s: %s' % (name, value, REFUSED[name]))
    if name in QUADLET_OWNS or name in ('--user', '--rootfs'):
        if name in QUADLET_OWNS and name not in ('--name', '--restart'):
            unit.notes.append('%s dropped (%s)' % (' '.join(option.tokens), QUADLET_OWNS[name]))
        return
    if name == '--sdnotify':
        _notify(unit, option)
        return
    if name == '--cgroups' and value == 'split':
        unit.notes.append('%s dropped (Quadlet runs every container with --cgroups=split)' % ' '.join(option.tokens))
        return
    if name == '--security-opt' and value is not None:
        _security_opt(unit, option)
        return
    if name not in KEYS or value is None:
        unit.passthrough(option, 'no Quadlet key for %s' % name if name not in KEYS else
                         '%s without a value' % name)
        return
    key, minimum, how = KEYS[name]
    if how == 'bool':
        unit.add(key, value, how, option, minimum)
        return
    why = _unsafe_value(name, value, env_values, container)
    if why:
        unit.passthrough(option, why)
        return
    if name == '--env' and '=' not in value:
        value = '%s=%s' % (value, env_values[value])
    if name == '--volume':
        value = absolute_volume(value, container)
    unit.add(key, value, how, option, minimum)


def _unsafe_value(name, value, env_values, container):
    """Why Quadlet would read this value differently from podman, or None."""
    if name == '--env' and '=' not in value:
        if env_values and value in env_values:
            return None
        raise ConversionProblem('-e %s took its value from the environment of the shell that created the container, '
                                'and inspect does not show it' % value)
    if name == '--network' and value.split(':', 1)[0].endswith(('.network', '.container')):
        return 'Network= would read %s as a Quadlet unit' % value
    if name == '--volume':
        source = value.split(':', 1)[0] if ':' in value else ''
        if source.endswith(('.volume', '.image')):
            return 'Volume= would read %s as a Quadlet unit' % source
        if source.startswith('.') and absolute_volume(value, container) == value:
            raise ConversionProblem('-v %s: the source is relative to the directory podman ran in, and inspect does '
                                    'not show where that was' % value)
    if name == '--expose' and not _PORT_RANGE.match(value):
        return 'ExposeHostPort= takes a port or range with /tcp or /udp only'
    if name == '--env-file' and not value.startswith('/'):
        raise ConversionProblem('--env-file %s: a relative path was read from the directory podman ran in, which is '
                                'not known here' % value)
    if name == '--mount':
        return _unsafe_mount(value)
    if name == '--device' and value.startswith('-'):
        return 'AddDevice= reads a leading "-" as "skip when missing"'
    return None


def _unsafe_mount(value):
    """Quadlet re-reads a bind/volume/glob/image mount's source (resolveContainerMountParams)."""
    try:
        fields = next(csv.reader([value]))
    except (csv.Error, StopIteration):
        return 'Mount= would not parse %r as podman does' % value
    pairs = [field.partition('=') for field in fields]
    kind = [v for k, _s, v in pairs if k == 'type']
    sources = [v for k, _s, v in pairs if k in ('source', 'src')]
    if kind and kind[-1] in ('volume', 'bind', 'glob', 'image'):
        if not sources:
            return 'Quadlet 5.4.2 needs a source= in a %s mount (it fails without one)' % kind[-1]
        if sources[-1].startswith('.') or sources[-1].endswith(('.volume', '.image')):
            return 'Mount= would read the source %s as a path next to the unit or as a Quadlet unit' % sources[-1]
    return None


def absolute_volume(value, container):
    """A ./relative bind source made absolute from what inspect recorded, when it can be matched."""
    parts = value.split(':')
    if len(parts) < 2 or not parts[0].startswith('.'):
        return value
    for mount in container.raw.get('Mounts') or []:
        if mount.get('Type') == 'bind' and mount.get('Destination') == parts[1] and mount.get('Source', '').startswith('/'):
            return ':'.join([mount['Source']] + parts[1:])
    return value


def _notify(unit, option):
    value = option.value
    if value == 'conmon':
        unit.notes.append('%s dropped (Quadlet sets --sdnotify=conmon)' % ' '.join(option.tokens))
    elif value == 'container':
        unit.add('Notify', 'true', 'bool', option)
    elif value == 'healthy' and unit.knows(NOTIFY_HEALTHY_MIN):
        unit.add('Notify', 'healthy', 'single', option)
    elif value == 'healthy':
        raise ConversionProblem('--sdnotify=healthy: Quadlet in podman %s has no Notify=healthy (needs 5.0)'
                                % _dotted(unit.version))
    else:
        raise ConversionProblem('--sdnotify=%s: the Quadlet service is Type=notify, and with %s nothing would tell '
                                'systemd the container started' % (value, value))


def _security_opt(unit, option):
    value = option.value
    for prefix, key, minimum, how in SECURITY_KEYS:
        if how is None and value == prefix:
            unit.add(key, 'true', 'bool', option, minimum)
            return
        if how and value.startswith(prefix) and len(value) > len(prefix):
            unit.add(key, value[len(prefix):], how, option, minimum)
            return
    unit.passthrough(option, 'no Quadlet key for --security-opt %s' % value.split('=', 1)[0])


def _add_user(unit, user, tokens):
    """--user NAME[:GROUP] as User= and Group=, or PodmanArgs when either cannot be written."""
    if not user:
        return
    name, _sep, group = user.partition(':')
    parts = [('User', name)] + ([('Group', group)] if group else [])
    if all(render_value(value, 'single')[0] is not None for _key, value in parts):
        for key, value in parts:
            unit.add(key, value, 'single', tokens)
    else:
        unit.passthrough(tokens, 'User=/Group= cannot hold %r' % user)


def _inspect_env_labels(unit, config, image_config):
    """Environment and labels the container has beyond its image's (and podman's own)."""
    image_env = set(image_config.get('Env') or [])
    for item in config.get('Env') or []:
        name = item.split('=', 1)[0]
        if item in image_env or name in PODMAN_ENV or item == DEFAULT_PATH:
            continue
        unit.add('Environment', item, 'keyval', ['--env', item])
    image_labels = image_config.get('Labels') or {}
    for name, value in sorted((config.get('Labels') or {}).items()):
        if image_labels.get(name) != value:
            unit.add('Label', '%s=%s' % (name, value), 'keyval', ['--label', '%s=%s' % (name, value)])


def _inspect_ports_mounts(unit, raw, host):
    """Published ports, volumes and bind mounts, and the network."""
    for port, bindings in sorted((host.get('PortBindings') or {}).items()):
        for binding in bindings or []:
            host_part = binding.get('HostPort') or ''
            if binding.get('HostIp'):
                host_part = '%s:%s' % (binding['HostIp'], host_part)
            spec = '%s:%s' % (host_part, port) if host_part else port
            if spec.endswith('/tcp'):
                spec = spec[:-4]
            unit.add('PublishPort', spec, 'multi', ['--publish', spec])
    for mount in raw.get('Mounts') or []:
        source = mount.get('Name') if mount.get('Type') == 'volume' else mount.get('Source')
        if not source or not mount.get('Destination'):
            continue
        spec = '%s:%s' % (source, mount['Destination'])
        if mount.get('RW') is False:
            spec += ':ro'
        unit.add('Volume', spec, 'multi', ['--volume', spec])
    network = host.get('NetworkMode') or ''
    if network and network not in ('bridge', 'default', 'private'):
        unit.add('Network', network, 'multi', ['--network', network])


def _inspect_privileges(unit, host, container):
    """Capabilities, devices, ID maps, privileged, read-only root and security options."""
    for cap in host.get('CapAdd') or []:
        unit.add('AddCapability', cap, 'words', ['--cap-add', cap])
    for cap in host.get('CapDrop') or []:
        unit.add('DropCapability', cap, 'words', ['--cap-drop', cap])
    for device in host.get('Devices') or []:
        spec = device.get('PathOnHost') or ''
        if device.get('PathInContainer') and device['PathInContainer'] != spec:
            spec += ':' + device['PathInContainer']
        if spec:
            unit.add('AddDevice', spec, 'words', ['--device', spec])
    for uid in container.uid_map:
        unit.add('UIDMap', uid, 'words', ['--uidmap', uid])
    for gid in container.gid_map:
        unit.add('GIDMap', gid, 'words', ['--gidmap', gid])
    if host.get('Privileged'):
        unit.passthrough(['--privileged'], 'no Quadlet key for --privileged')
    if host.get('ReadonlyRootfs'):
        unit.add('ReadOnly', 'true', 'bool', ['--read-only'])
    for opt in host.get('SecurityOpt') or []:
        _security_opt(unit, options.Option('--security-opt', opt, ['--security-opt=%s' % opt]))


def from_inspect(container, image_config, version):
    """Build the unit from the structured fields, for containers made through the API."""
    raw = container.raw
    config = raw.get('Config') or {}
    host = raw.get('HostConfig') or {}
    image_config = image_config or {}
    unit = Unit(version)
    unit.notes.append('no CreateCommand (created through the API): built from the inspect fields')
    _inspect_env_labels(unit, config, image_config)
    _inspect_ports_mounts(unit, raw, host)
    _inspect_privileges(unit, host, container)
    entrypoint = config.get('Entrypoint')
    entrypoint = [e for e in ([entrypoint] if isinstance(entrypoint, str) else list(entrypoint or [])) if e]
    image_entrypoint = [e for e in (image_config.get('Entrypoint') or []) if e]
    if entrypoint != image_entrypoint:
        unit.passthrough(['--entrypoint=%s' % json.dumps(entrypoint)], 'the entrypoint as podman stores it (a JSON list)')
    user = config.get('User') or ''
    _add_user(unit, user, ['--user', user])
    command = list(config.get('Cmd') or [])
    if command == list(image_config.get('Cmd') or []):
        command = []
    return unit, container.image, None, command


def render(container, unit, image, command, restart_sec=1, unconfined=False, rootfs=None):
    """The .container file text: deterministic, so a second run compares equal."""
    if unconfined:
        unit.passthrough(['--security-opt=apparmor=unconfined'],
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
    section = ['[Container]', 'ContainerName=%s' % _must_render(container.name, 'ContainerName')]
    if rootfs is not None:
        section.append('Rootfs=%s' % _must_render(rootfs, 'Rootfs'))
    else:
        section.append('Image=%s' % _must_render(image, 'Image'))
    if command:
        if '' in command:
            raise ConversionProblem('the command has an empty argument, which Exec= cannot hold (systemd drops it)')
        section.append('Exec=%s' % ' '.join(quote_arg(a) for a in command))
    section.extend('%s=%s' % (key, value) for key, value in unit.keys)
    section.extend('GlobalArgs=%s' % line for line in unit.global_args)
    section.extend('PodmanArgs=%s' % line for line in unit.podman_args)
    header = ['# Converted from podman container %s by homelab.postmortem.podman_quadlet.' % container.name,
              "# systemd restarts it (Restart= below); podman's own restart policy is not used." if restart
              else '# The container had no restart policy, so neither does this unit.']
    return '\n'.join(header + unit_section + [''] + section + [''] + service
                     + ['', '[Install]', 'WantedBy=default.target', ''])


_SAFE = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+%$')
_C_ESCAPES = {'\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t', '\r': '\\r', '\a': '\\a', '\b': '\\b',
              '\f': '\\f', '\v': '\\v'}


def escape(value):
    """systemd expands %specifiers and $VARIABLES in the generated ExecStart; keep both literal."""
    return value.replace('%', '%%').replace('$', '$$')


def quote_arg(value, always=False):
    """One word for a key Quadlet splits like a command line (Exec=, PodmanArgs=, Environment=, ...).

    Double-quoted with C escapes for anything but plain characters: the generator unquotes and
    unescapes it, then escapes it again for ExecStart (pkg/systemd/parser/split.go).
    """
    value = escape(value)
    if value and not always and all(c in _SAFE for c in value):
        return value
    out = []
    for char in value:
        if char in _C_ESCAPES:
            out.append(_C_ESCAPES[char])
        elif ord(char) < 32 or ord(char) == 127:
            out.append('\\x%02x' % ord(char))
        else:
            out.append(char)
    return '"%s"' % ''.join(out)


def _must_render(value, key):
    rendered, why = render_value(value or '', 'single')
    if rendered is None:
        raise ConversionProblem('%s=%r cannot be written: %s' % (key, value, why))
    return rendered


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
