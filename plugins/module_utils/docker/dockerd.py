# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A running dockerd's exec root, resolved from its command line and config file as dockerd does.

This is the fallback. The daemon's own answer is a running container's
``NetworkSettings.SandboxKey``, ``<exec-root>/netns/<sandbox id>``; the Engine API
has no other: ``/info`` reports the data root (``DockerRootDir``) and no exec root
(api/types/types.go:190 at v20.10.24; api/types/system/info.go:51 at docker-v29.0.0
and docker-v29.7.2).

dockerd's rules (moby/moby; the same in v20.10.24 and docker-v29.0.0 to v29.7.2):

- ``--exec-root``; its default is ``/var/run/docker``, or ``$XDG_RUNTIME_DIR/docker``
  when dockerd runs under RootlessKit, which it knows by ``ROOTLESSKIT_STATE_DIR``
  being set (v20.10.24 cmd/dockerd/config.go:44, config_common_unix.go:38-47,
  docker.go:68, rootless/rootless.go:19-25; docker-v29.x daemon/command/config.go:29,
  daemon/config/config_linux.go:173-191 (29.0.0) / 176-193 (29.7.2),
  daemon/command/docker.go:82, daemon/internal/rootless/rootless.go:7).
- The config file: ``--config-file``, default ``/etc/docker/daemon.json``; under
  RootlessKit ``$XDG_CONFIG_HOME/docker/daemon.json``, else
  ``$HOME/.config/docker/daemon.json`` (v20.10.24 cmd/dockerd/docker.go:43-47,
  daemon_unix.go:27-47; docker-v29.x daemon/command/daemon_unix.go:22-42,
  options.go:94, docker.go:63). A missing default file is ignored, a missing
  ``--config-file`` stops the daemon (v20.10.24 cmd/dockerd/daemon.go:417-430;
  docker-v29.0.0 daemon/command/daemon.go:604-617, docker-v29.7.2 l.670-683).
- The file's top-level ``"exec-root"`` (daemon/config/config.go:157 at v20.10.24,
  l.199 at 29.0.0, l.214 at 29.7.2) wins over the flag's default: the flags are
  merged with ``mergo.Merge(fileConfig, flagsConfig)``, which fills only what the
  file left empty (config.go:373 at v20.10.24, l.467 at 29.0.0, l.497 at 29.7.2).
  The flag and the key together stop the daemon ("the following directives are
  specified both as a flag and in the configuration file", config.go:534 at
  v20.10.24, l.675 at 29.0.0, l.706 at 29.7.2), and so does a key that names no
  flag (config.go:505 / 625 / 656); both were read once, at start.
- The sockets it serves: ``-H``/``--host``, else ``"hosts"`` in the file (the two
  together are the same error), else ``/var/run/docker.sock``, or
  ``$XDG_RUNTIME_DIR/docker.sock`` under RootlessKit (docker-v29.7.2
  daemon/command/daemon.go:685-707, 795-805). ``fd://`` is systemd's socket
  activation; its socket is taken to be the default one (docker.socket's
  ``ListenStream``).

Files are read as dockerd sees them, through ``/proc/<pid>/root`` (its mount
namespace) and, for a relative path, ``/proc/<pid>/cwd``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api

DEFAULT_EXEC_ROOT = '/var/run/docker'
DEFAULT_CONFIG_FILE = '/etc/docker/daemon.json'
# dockerd's one-letter flags that take a value (-b -G -g -H -l -p -s); -D -h -r -v take none
# (v20.10.24 cmd/dockerd/config*.go, options.go; docker-v29.7.2 daemon/command/config*.go, options.go).
_SHORT_WITH_VALUE = frozenset('bGgHlps')
_LONG_WANTED = {'host': 'hosts', 'exec-root': 'exec_root', 'config-file': 'config_file'}


def parse_argv(argv):
    """dockerd's ``-H``/``--host`` (all), ``--exec-root`` and ``--config-file`` (the last of each),
    read as pflag reads them: ``--flag value``, ``--flag=value``, ``-H value``, ``-Hvalue``,
    ``-H=value``, one-letter flags run together (``-DH value``), nothing after ``--``."""
    found = {'hosts': [], 'exec_root': None, 'config_file': None}
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == '--':
            break
        if arg.startswith('--'):
            name, equals, value = arg[2:].partition('=')
            if name in _LONG_WANTED:
                if not equals:
                    if not args:
                        break
                    value = args.pop(0)  # a string flag takes the next word, whatever it starts with
                _record(found, _LONG_WANTED[name], value)
            elif not equals and args and not args[0].startswith('-'):
                # dockerd takes no arguments (cli.NoArgs): a word after a flag is that flag's value.
                args.pop(0)
        elif arg.startswith('-') and len(arg) > 1:
            letters = arg[1:]
            for position, letter in enumerate(letters):
                if letter not in _SHORT_WITH_VALUE:
                    continue
                rest = letters[position + 1:]
                if len(rest) > 1 and rest.startswith('='):
                    value = rest[1:]
                elif rest:
                    value = rest
                elif args:
                    value = args.pop(0)
                else:
                    break
                if letter == 'H':
                    _record(found, 'hosts', value)
                break
    return found


def _record(found, key, value):
    if key == 'hosts':
        if value.strip():  # dockerd drops empty hosts (docker-v29.7.2 daemon/command/daemon.go:686-688)
            found['hosts'].append(value)
    elif value:
        found[key] = value


def as_dockerd_sees(process, path):
    """``path`` of the process's file system: through its root, or its working directory when relative."""
    if path.startswith('/'):
        return os.path.join(process.proc_dir, 'root', path.lstrip('/'))
    return os.path.join(process.proc_dir, 'cwd', path)


def _config_file(flags, env, rootless):
    """(path, why) of the config file dockerd read at start; path None when it read none."""
    if flags['config_file']:
        return flags['config_file'], '--config-file'
    if not rootless:
        return DEFAULT_CONFIG_FILE, 'the default config file'
    home = env.get('XDG_CONFIG_HOME') or (os.path.join(env['HOME'], '.config') if env.get('HOME') else None)
    if not home:
        return None, 'rootless dockerd without XDG_CONFIG_HOME or HOME has no default config file'
    return os.path.join(home, 'docker', 'daemon.json'), 'the rootless default config file'


def read_config(process, path, explicit):
    """(object or None, problem or None) of dockerd's config file; a missing default file is no problem."""
    try:
        text = hostio.read_text(as_dockerd_sees(process, path))
    except hostio.ReadProblem as problem:
        if problem.kind == 'missing' and not explicit:
            return None, None
        if problem.kind == 'missing':
            return None, ('%s, named by --config-file, is gone; dockerd read it at start, so what it said is '
                          'not known' % path)
        return None, '%s: %s' % (path, problem.reason)
    try:
        data = bounded_json.loads(text, path)
    except bounded_json.JsonInputError as exc:
        # Read with the one bounded loader: a file of 500,000 "[" would otherwise raise RecursionError.
        return None, '%s is %s now; dockerd would not start with it, so it changed after the start' % (path, exc.detail)
    if not isinstance(data, dict):
        return None, '%s is not a JSON object now; dockerd would not start with it' % path
    return data, None


def _served_sockets(flags, config, env, rootless):
    in_file = (config or {}).get('hosts')
    hosts = flags['hosts'] or [h for h in (in_file if isinstance(in_file, list) else []) if isinstance(h, str) and h.strip()]
    if not hosts:
        if rootless and env.get('XDG_RUNTIME_DIR'):
            return [os.path.join(env['XDG_RUNTIME_DIR'], 'docker.sock')]
        return [docker_api.DEFAULT_SOCKET]
    served = []
    for host in hosts:
        if host.startswith('fd://'):
            served.append(docker_api.DEFAULT_SOCKET)
        elif host.startswith(('unix://', '/')):
            served.append(docker_api.socket_path(host))
    return served


def _absolute(process, path, notes):
    if path.startswith('/'):
        return os.path.normpath(path)
    try:
        cwd = os.readlink(os.path.join(process.proc_dir, 'cwd'))
    except OSError:
        notes.append('exec root %r is relative and the working directory of dockerd pid %d cannot be read'
                     % (path, process.pid))
        return path
    notes.append('exec root %r is relative to the working directory %s of dockerd pid %d' % (path, cwd, process.pid))
    return os.path.normpath(os.path.join(cwd, path))


def exec_root_of(process):
    """{exec_root, from, config_file, serves, notes} for one dockerd process."""
    flags = parse_argv(process.argv)
    env = process.environ()
    notes = []
    if env is None:
        notes.append('the environment of dockerd pid %d cannot be read (%s); taken as not rootless'
                     % (process.pid, process.environ_problem))
        env = {}
    rootless = bool(env.get('ROOTLESSKIT_STATE_DIR'))
    config_path, config_why = _config_file(flags, env, rootless)
    config, problem = (None, None) if config_path is None else read_config(process, config_path, bool(flags['config_file']))
    if config_path is None:
        notes.append(config_why)
    if problem:
        notes.append(problem)
    in_file = (config or {}).get('exec-root')
    pid = process.pid
    if flags['exec_root']:
        exec_root, source = flags['exec_root'], '--exec-root on the command line of dockerd pid %d' % pid
        if in_file:
            notes.append('"exec-root" is also in %s now; dockerd does not start with both, so the file changed after '
                         'it started and the flag is what it uses' % config_path)
    elif isinstance(in_file, str) and in_file:
        exec_root, source = in_file, '"exec-root" in %s (%s of dockerd pid %d)' % (config_path, config_why, pid)
    else:
        if in_file not in (None, ''):
            notes.append('"exec-root" in %s is %r, not a string; dockerd does not start with that' % (config_path, in_file))
        if rootless:
            runtime_dir = env.get('XDG_RUNTIME_DIR')
            if runtime_dir:
                exec_root = os.path.join(runtime_dir, 'docker')
                source = "rootless dockerd's default ($XDG_RUNTIME_DIR/docker) for pid %d" % pid
            else:
                # Upstream stops at start without it (config_linux.go:180-183 at 29.0.0): nothing to follow.
                exec_root = DEFAULT_EXEC_ROOT
                source = ("dockerd's default for pid %d, which runs under RootlessKit without XDG_RUNTIME_DIR "
                          "(rootless dockerd does not start without it)" % pid)
        else:
            exec_root, source = DEFAULT_EXEC_ROOT, "dockerd's default for pid %d (no --exec-root, none in %s)" % (
                pid, config_path)
    return {'exec_root': _absolute(process, exec_root, notes), 'from': source, 'config_file': config_path,
            'rootless': rootless, 'serves': _served_sockets(flags, config, env, rootless), 'notes': notes}


def exec_root_for_socket(ctx, socket):
    """The exec root of the dockerd serving ``socket``, as dockerd resolved it at start."""
    processes, _problems = ctx.processes('dockerd', lambda name: name == 'dockerd')
    wanted = os.path.realpath(socket)  # /var/run is /run on most systems: compare where the paths lead
    for process in processes:
        found = exec_root_of(process)
        if wanted in [os.path.realpath(s) for s in found['serves']]:
            found['dockerd_pid'] = process.pid
            return found
    return {'exec_root': DEFAULT_EXEC_ROOT, 'from': "dockerd's default (no dockerd process serving %s was found)" % socket,
            'config_file': None, 'rootless': None, 'serves': [], 'notes': [], 'dockerd_pid': None}
