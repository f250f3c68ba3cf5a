# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The four things the podman detections report about a podman, without ``podman info``.

``podman info`` takes 0.25-0.55 s (it asks conmon, the OCI runtime and the package manager for
their versions); the four fields the detections use come from cheaper places, each decided the
way podman decides it (podman 4.3.1 and 5.0-5.6, whose code was read for this; file:line below):

- version: ``podman --version``. cobra prints it before podman sets up its runtime
  (vendor/github.com/spf13/cobra/command.go:858-869 in v4.3.1), and it is the same string as
  info's version.Version (cmd/podman/root.go:70 and libpod/define/version.go:47, both
  ``version.Version.String()``; 5.4.2: root.go:76, version.go:51).
- rootless: podman's user. 4.3.1: ``euid != 0`` unless _CONTAINERS_USERNS_CONFIGURED is set
  (pkg/rootless/rootless_linux.go:58-74); 5.x: ``unshare.IsRootless() && GetRootlessUID() > 0``
  (rootless_linux.go:73-79), which for a process whose uid and euid agree and without the
  _CONTAINERS_* variables is the same: its user is not root.
- AppArmor as podman sees it (info's apparmorEnabled): ``apparmor.IsEnabled()``
  (libpod/info_linux.go:43, 5.4.2 :49) = not rootless in unshare's sense, runc's isEnabled
  (/sys/kernel/security/apparmor exists and /sys/module/apparmor/parameters/enabled starts with
  Y, runc libcontainer/apparmor/apparmor_linux.go:18-26) and an apparmor_parser in /sbin or on
  podman's PATH (containers/common pkg/apparmor/internal/supported/supported.go:43-88). unshare
  counts root as rootless without CAP_SYS_ADMIN or inside a user namespace
  (containers/storage pkg/unshare/unshare_linux.go:391-428 in v4.3.1's vendor tree).
- event logger: containers.conf's [engine] events_logger, files read in podman's order, the
  last one that sets it wins; else podman's default (containers/common pkg/config/systemd.go:40-86,
  nosystemd.go:15-17): "file", unless PID 1 is systemd, the journal is readable and podman was
  built with the systemd tag ("journald"). The build tag cannot be seen from outside: that case
  asks podman info.

Whatever is not certain (a _CONTAINERS_* variable, a remote podman, another podman version, a
containers.conf this Python cannot read, the systemd default) raises Uncertain, and the caller
asks ``podman info``: a cheap answer is never a guess.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import errno
import os
import pwd
import re
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

CAP_SYS_ADMIN = 21
# Variables with which podman decides rootless mode other than by its user (rootless_linux.go:58-74,
# unshare_linux.go:55-61, 404-428).
ROOTLESS_VARIABLES = ('_CONTAINERS_USERNS_CONFIGURED', '_CONTAINERS_ROOTLESS_UID')
# Variables that make podman a client of another podman (cmd/podman/registry/remote.go:19-27 in v4.3.1).
REMOTE_VARIABLES = ('CONTAINER_HOST', 'CONTAINER_CONNECTION')
CONF = 'containers/containers.conf'
# Event loggers podman accepts, named as info names them (libpod/events/events_linux.go:11-29 in
# v4.3.1 to 5.2; 5.3 dropped "memory", and a podman that does not know a logger fails before
# anything is asked of it: its podman ps already failed).
EVENT_LOGGERS = ('journald', 'file', 'none', 'memory')
_VERSION_LINE = re.compile(r'^\S+ version (\S+)\s*$')


class Uncertain(Exception):
    """A cheap source cannot say what podman would; the reason is kept for the evidence."""


def parse_version_line(out):
    """'podman version 4.3.1' -> '4.3.1' (cobra's version template, command.go:586-596 in v4.3.1)."""
    lines = [line for line in (out or '').splitlines() if line.strip()]
    match = _VERSION_LINE.match(lines[0]) if len(lines) == 1 else None
    if match is None or hostio.version_tuple(match.group(1)) is None:
        raise Uncertain('podman --version printed %r, not "podman version X"' % (out or '')[:80])
    return match.group(1)


def _family(version):
    """The podman versions whose config loading was read: 4.3.x (containers/common v0.50.1) and
    5.0-5.6 (v0.58-v0.64: the same files; 5.7 adds containers.rootless.conf and was not)."""
    parsed = hostio.version_tuple(version) or ()
    if parsed[:2] == (4, 3):
        return (4, 3)
    if parsed[:1] == (5,) and parsed[1:2] <= (6,):
        return (5,)
    raise Uncertain('podman %s: how this version reads containers.conf was not read (4.3 and 5.0-5.6 were)' % version)


# Who a podman command runs as (uid, euid, CAP_SYS_ADMIN in effect, the whole ID space mapped)
# and the environment it gets.
Process = collections.namedtuple('Process', 'uid euid env home cap_sys_admin full_userns')


def own_process(ctx):
    """The module's own user, from /proc/self (a podman it starts has the same ids, namespace and
    environment; as root, at least its capabilities)."""
    status = hostio.read_optional_text(os.path.join(ctx.proc_root, 'self', 'status')) or ''
    ids = {}
    for line in status.splitlines():
        key, _sep, value = line.partition(':')
        ids[key] = value.split()
    try:
        uid, euid = int(ids['Uid'][0]), int(ids['Uid'][1])
        cap_eff = int(ids['CapEff'][0], 16)
    except (KeyError, IndexError, ValueError):
        raise Uncertain('%s/self/status has no Uid and CapEff lines' % ctx.proc_root)
    uid_map = hostio.read_optional_text(os.path.join(ctx.proc_root, 'self', 'uid_map'))
    if uid_map is None:
        raise Uncertain('%s/self/uid_map cannot be read' % ctx.proc_root)
    env = dict(ctx.runner.env)
    return Process(uid, euid, env, env.get('HOME'), bool(cap_eff >> CAP_SYS_ADMIN & 1),
                   # unshare_linux.go:391-399: the whole ID space mapped means the initial namespace.
                   '4294967295' in uid_map)


def user_process(ctx, user):
    """Another user's podman, started through ``runuser -u USER --``: that user's uid as uid and
    euid, its home as HOME; the rest of the environment is ours (runuser without --login)."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise Uncertain('no user %s in the password database' % user)
    env = dict(ctx.runner.env, HOME=entry.pw_dir, USER=user, LOGNAME=user)
    return Process(entry.pw_uid, entry.pw_uid, env, entry.pw_dir, None, None)


def rootless(process):
    """(rootless, source) as podman info's host.security.rootless says it."""
    present = [name for name in ROOTLESS_VARIABLES if name in process.env]
    if present:
        raise Uncertain('%s is set in podman\'s environment' % ', '.join(present))
    if process.uid != process.euid:
        raise Uncertain('uid %d and euid %d differ' % (process.uid, process.euid))
    return process.euid != 0, 'podman runs as uid %d (rootless when that is not 0)' % process.euid


def apparmor_enabled(ctx, process, is_rootless):
    """(enabled, source) as podman info's host.security.apparmorEnabled says it."""
    enabled_file = ctx.sys_path('module/apparmor/parameters/enabled')
    securityfs = ctx.sys_path('kernel/security/apparmor')
    try:
        flag = hostio.read_bytes(enabled_file, 4096)
    except hostio.ReadProblem as problem:
        if problem.kind != 'missing':
            raise Uncertain('%s %s' % (enabled_file, problem.reason))
        return False, 'no AppArmor for podman: %s absent' % enabled_file
    # runc reads the file whole: more than one byte, the first a Y.
    if not (len(flag) > 1 and flag[:1] == b'Y'):
        return False, 'no AppArmor for podman: %s = %s' % (enabled_file, flag.decode('ascii', 'replace').strip())
    if not os.path.exists(securityfs):
        return False, 'no AppArmor for podman: %s absent' % securityfs
    if is_rootless:
        return False, 'rootless: podman applies no AppArmor profile'
    if not process.full_userns:
        return False, 'root in a user namespace (/proc/self/uid_map): rootless to podman, no AppArmor'
    if not process.cap_sys_admin:
        raise Uncertain('root without CAP_SYS_ADMIN in this process: podman may still have it')
    parser = _apparmor_parser(ctx, process.env.get('PATH', ''))
    if parser is None:
        return False, 'AppArmor enabled, but no apparmor_parser in /sbin or on PATH (podman needs it)'
    return True, 'AppArmor enabled and %s present' % parser


def _apparmor_parser(ctx, path_variable):
    """Where podman finds apparmor_parser: /sbin first (any file there), then PATH as Go's
    exec.LookPath searches it: the first executable file; a relative one is an error since Go 1.19
    (so not found), before it it was used: such a PATH is not certain."""
    if os.path.exists(ctx.path('/sbin/apparmor_parser')):
        return '/sbin/apparmor_parser'
    for directory in path_variable.split(os.pathsep):
        candidate = os.path.join(directory or '.', 'apparmor_parser')
        try:
            mode = os.stat(ctx.path(candidate) if candidate.startswith('/') else candidate).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) or not mode & 0o111:
            continue
        if not candidate.startswith('/'):
            raise Uncertain('apparmor_parser is found through the relative PATH entry %r' % directory)
        return candidate
    return None


def config_files(ctx, process, family):
    """The containers.conf files podman reads, in its order (later ones win)."""
    env = process.env
    chosen = env.get('CONTAINERS_CONF')
    if chosen:
        # v4.3.1 vendor/github.com/containers/common/pkg/config/config.go:735-741; 5.4.2 new.go:155-160.
        files = [chosen]
    else:
        files = ['/usr/share/' + CONF, '/etc/' + CONF] + _drop_ins(ctx, '/etc/' + CONF + '.d')
        # 4.3.1: the user's file only when rootless (config_linux.go:36-45); 5.x: for root too
        # (new.go:176-184, config_unix.go:19-29). XDG_CONFIG_HOME first, else HOME/.config.
        if family != (4, 3) or process.uid > 0:
            home = process.home
            if env.get('XDG_CONFIG_HOME'):
                user_file = os.path.join(env['XDG_CONFIG_HOME'], CONF)
            elif home:
                user_file = os.path.join(home, '.config', CONF)
            else:
                raise Uncertain('no HOME for the user configuration')
            files += [user_file] + _drop_ins(ctx, user_file + '.d')
    override = env.get('CONTAINERS_CONF_OVERRIDE')
    if override and family != (4, 3):
        # 5.4.2 new.go:102-108: "_OVERRIDE must always win"; v0.50.1 has no such variable.
        files.append(override)
    return files


def _drop_ins(ctx, directory):
    """*.conf directly in ``directory``, sorted by path (addConfigs, config.go:696-727)."""
    try:
        names = os.listdir(ctx.path(directory))
    except OSError as exc:
        # podman's WalkDir skips a missing directory, and a file in its place is no *.conf.
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return []
        raise Uncertain('%s cannot be listed: %s' % (directory, exc.strerror or exc))
    return sorted(os.path.join(directory, name) for name in names
                  if name.endswith('.conf') and not os.path.isdir(ctx.path(os.path.join(directory, name))))


def _engine_value(data, key, path):
    """The value of [engine] ``key`` in a parsed file, None when unset. podman's TOML decoder
    matches names case-insensitively (BurntSushi/toml), so Engine or EVENTS_LOGGER count too; two
    spellings in one file are ambiguous."""
    tables = [v for k, v in data.items() if k.lower() == 'engine']
    if len(tables) > 1:
        raise Uncertain('%s has more than one [engine] table' % path)
    if not tables:
        return None
    if not isinstance(tables[0], dict):
        raise Uncertain('%s: engine is not a table' % path)
    values = [v for k, v in tables[0].items() if k.lower() == key]
    if len(values) > 1:
        raise Uncertain('%s sets %s more than once' % (path, key))
    return values[0] if values else None


def _load_toml(ctx, path):
    try:
        import tomllib  # Python 3.11+; older Pythons ask podman info.
    except ImportError:
        raise Uncertain('this Python has no TOML reader (tomllib, 3.11+) for %s' % path)
    try:
        text = hostio.read_text(ctx.path(path))
    except hostio.ReadProblem as problem:
        if problem.kind == 'missing':
            return None
        raise Uncertain(str(problem))
    try:
        return tomllib.loads(text)
    except ValueError as exc:
        raise Uncertain('%s is not TOML this Python reads: %s' % (path, exc))


def event_logger(ctx, process, version):
    """(event logger, source) as podman info's host.eventLogger says it."""
    family = _family(version)
    found, where = None, None
    for path in config_files(ctx, process, family):
        data = _load_toml(ctx, path)
        if data is None:
            continue
        if _engine_value(data, 'remote', path):
            raise Uncertain('%s sets remote: podman talks to another podman' % path)
        value = _engine_value(data, 'events_logger', path)
        if value is not None:
            if not isinstance(value, str) or value.lower() not in EVENT_LOGGERS:
                raise Uncertain('%s: events_logger = %r' % (path, value))
            found, where = value.lower(), path
    if found:
        return found, 'events_logger in %s' % where
    pid1 = hostio.read_optional_text(os.path.join(ctx.proc_root, '1', 'comm'))
    if pid1 is None:
        raise Uncertain('%s/1/comm cannot be read' % ctx.proc_root)
    if pid1 != 'systemd':
        return 'file', 'podman\'s default: PID 1 is %s, not systemd' % pid1
    for root in ('/run/log/journal', '/var/log/journal'):
        try:
            entries = os.listdir(ctx.path(root))
        except OSError:
            continue
        if any(os.path.isdir(ctx.path(os.path.join(root, name))) for name in entries):
            raise Uncertain('no events_logger in containers.conf, PID 1 is systemd and %s has a journal: the default '
                            'depends on whether podman was built with systemd' % root)
    return 'file', 'podman\'s default: PID 1 is systemd, but no journal in /run/log/journal or /var/log/journal'


def cheap(ctx, cli, version_out):
    """The four facts and their sources from ``podman --version``'s output and files; Uncertain
    when any of them is not certain."""
    if any(name in ctx.runner.env for name in REMOTE_VARIABLES):
        raise Uncertain('%s is set: podman talks to another podman' % ' or '.join(REMOTE_VARIABLES))
    if 'remote' in os.path.basename(cli.binary or ''):
        raise Uncertain('%s is a remote client' % cli.binary)
    version = parse_version_line(version_out)
    process = own_process(ctx) if cli.user is None else user_process(ctx, cli.user)
    is_rootless, rootless_source = rootless(process)
    apparmor, apparmor_source = apparmor_enabled(ctx, process, is_rootless)
    logger, logger_source = event_logger(ctx, process, version)
    return {
        'version': version, 'rootless': is_rootless, 'apparmor_enabled': apparmor, 'event_logger': logger,
        'sources': {'version': 'podman --version', 'rootless': rootless_source, 'apparmor_enabled': apparmor_source,
                    'event_logger': logger_source},
    }
