# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a vLLM process's weight cache socket is, as that process sees it (weight_cache.py compares them).

protocol.py ``get_socket_dir``/``get_socket_path`` and ipc_loader.py ``_resolve_socket_path``: the
engine's ``--model-loader-extra-config`` ``socket_path``, else ``socket_dir``, else
``tempfile.gettempdir()``/vllm_weight_cache_<uid>; the daemon's ``--weight-cache-socket-dir`` or the
same default. Paths are read through /proc/PID/root, so a container's or a unit's private /tmp is
the one its process sees.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

SOCKET_PREFIX = 'vllm_weight_cache_'


def _tempdir_candidates(environ, cwd):
    """tempfile.gettempdir()'s candidates in order (CPython tempfile._candidate_tempdir_list)."""
    found = []
    for name in ('TMPDIR', 'TEMP', 'TMP'):
        value = (environ or {}).get(name)
        if value:
            found.append(value)
    found += ['/tmp', '/var/tmp', '/usr/tmp']
    if cwd:
        found.append(cwd)
    return [os.path.normpath(os.path.join(cwd or '/', p)) for p in found]


def _in_root(ctx, pid, path):
    """``path`` as process ``pid`` sees it (its root and mount namespace, /proc/PID/root)."""
    return os.path.join(ctx.proc_root, str(pid), 'root') + path


def _cwd(ctx, pid):
    try:
        return os.readlink(os.path.join(ctx.proc_root, str(pid), 'cwd'))
    except OSError:
        return None


def default_socket_dir(ctx, side):
    """(directory, how it was found) of get_socket_dir(None) for this process: gettempdir()/vllm_weight_cache_<uid>.

    gettempdir() takes the first candidate directory the process can write to; a candidate that
    does not exist in the process's view is skipped (its writability is not tested here)."""
    environ = side.entry.process.environ() or {}
    candidates = _tempdir_candidates(environ, _cwd(ctx, side.entry.pid))
    chosen = candidates[0]
    for candidate in candidates:
        try:
            if os.path.isdir(_in_root(ctx, side.entry.pid, candidate)):
                chosen = candidate
                break
        except OSError:
            continue
    return os.path.join(chosen, '%s%s' % (SOCKET_PREFIX, side.uid)), 'gettempdir() %s (TMPDIR %s)' % (
        chosen, environ.get('TMPDIR') or 'unset')


def socket_dir(ctx, side):
    """(directory, explicit socket file name or None, how it was chosen) of this process."""
    if side.role == 'daemon':
        explicit = side.value('--weight-cache-socket-dir')
        if explicit:
            return explicit, None, '--weight-cache-socket-dir'
        directory, how = default_socket_dir(ctx, side)
        return directory, None, how
    path = side.extra.get('socket_path')
    if isinstance(path, str) and path:
        return os.path.dirname(path), os.path.basename(path), 'socket_path in --model-loader-extra-config'
    explicit = side.extra.get('socket_dir')
    if isinstance(explicit, str) and explicit:
        return explicit, None, 'socket_dir in --model-loader-extra-config'
    directory, how = default_socket_dir(ctx, side)
    return directory, None, how


def stat(ctx, pid, path):
    try:
        info = os.stat(_in_root(ctx, pid, path))
    except OSError as exc:
        return None, exc
    return (info.st_dev, info.st_ino), None


def mount_ns(ctx, pid):
    try:
        return os.readlink(os.path.join(ctx.proc_root, str(pid), 'ns', 'mnt'))
    except OSError:
        return None


def private_tmp(ctx, engine, daemon, path):
    """Why ``path`` is another directory for the two processes by their systemd units, or None.

    A unit with PrivateTmp=yes gets /tmp and /var/tmp of its own (systemd.exec(5)), shared only with
    a unit it joins (JoinsNamespaceOf=, both with PrivateTmp=); asked only when the processes' own
    views cannot be read."""
    if not (path == '/tmp' or path.startswith(('/tmp/', '/var/tmp/')) or path == '/var/tmp'):
        return None
    units = [hostio.systemd_unit_from_cgroup(side.entry.process.cgroup_lines()) for side in (engine, daemon)]
    if not units[0][0] or not units[1][0] or units[0] == units[1]:
        return None
    systemctl = ctx.which('systemctl')
    if not systemctl:
        return None
    shown = []
    for unit, scope in units:
        try:
            shown.append(hostio.systemd_show(ctx.run_command, systemctl, unit, ['PrivateTmp', 'JoinsNamespaceOf'], scope))
        except hostio.ReadProblem:
            return None
    private = [props.get('PrivateTmp') == 'yes' for props in shown]
    if not any(private):
        return None
    # systemd.unit(5) JoinsNamespaceOf=: honoured only when both units have PrivateTmp=, either side naming the other.
    joined = all(private) and (units[1][0] in shown[0].get('JoinsNamespaceOf', '').split()
                               or units[0][0] in shown[1].get('JoinsNamespaceOf', '').split())
    if joined:
        return None
    unit = units[0][0] if private[0] else units[1][0]
    return '%s has PrivateTmp=yes (not joined with the other\'s), so %s is its own' % (unit, path)
