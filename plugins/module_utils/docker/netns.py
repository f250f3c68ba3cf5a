# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Docker daemon's network sandboxes and a container's interfaces, read without changing anything.

Sandbox files are never opened (stat and lstat only); a container's interfaces are read inside its
own network namespace (``nsenter --target PID --net ip -o link show``: reading /sys/class/net through
nsenter would read the host's sysfs, which follows the mount namespace).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

_LINK_RE = re.compile(r'^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$')


def _path_problem(path, exc):
    if exc.errno == errno.ELOOP:
        return '%s is a loop of symbolic links' % path
    if exc.errno == errno.ENOENT:
        return '%s does not exist' % path
    if exc.errno in (errno.EACCES, errno.EPERM):
        return '%s cannot be read: permission denied' % path
    return '%s cannot be read: %s' % (path, exc.strerror or exc)


def _kind(mode):
    return 'a symbolic link' if stat.S_ISLNK(mode) else hostio.file_kind(mode)


def sandbox_files(netns_dir, network_id):
    """(sandbox files of a network, None) or (None, why they cannot be looked for).

    A sandbox is ``<epoch>-<id>`` cut to 12 characters, any epoch (1-, 2-, 10-...). Nothing is
    opened: the directory is checked with stat (a named pipe or a link loop where it should be
    is a reason, never an empty directory, so never "the sandbox is gone") and each candidate
    with lstat, which must be a regular file (a sandbox is a file dockerd created, then
    bind-mounted its namespace on: os.Create at osl/namespace_linux.go:347 in the vendored
    libnetwork at v20.10.24 and daemon/libnetwork/osl/namespace_linux.go:215 at docker-v29.0.0,
    os.OpenFile with O_CREATE at l.227 of v29.7.2).
    """
    try:
        # Followed: the directory is reached through links (/var/run -> /run).
        mode = os.stat(netns_dir).st_mode
    except OSError as exc:
        return None, _path_problem(netns_dir, exc)
    except ValueError as exc:  # a NUL byte in a path a setting gave
        return None, '%s cannot be used: %s' % (netns_dir, exc)
    if not stat.S_ISDIR(mode):
        return None, '%s is %s, not a directory' % (netns_dir, _kind(mode))
    try:
        names = os.listdir(netns_dir)
    except OSError as exc:
        return None, _path_problem(netns_dir, exc)
    found = []
    for name in names:
        epoch, _sep, rest = name.partition('-')
        if not (epoch.isdigit() and epoch.isascii() and rest and len(name) <= 12 and network_id.startswith(rest)
                and (len(name) == 12 or rest == network_id)):
            continue
        path = os.path.join(netns_dir, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                continue  # removed since the listing
            return None, _path_problem(path, exc)
        if not stat.S_ISREG(mode):
            return None, 'the sandbox %s is %s, not a namespace file' % (path, _kind(mode))
        found.append(path)
    return sorted(found), None


def read_links(ctx, pid):
    """{mac: (name, flags, state)} of the interfaces inside process ``pid``'s network namespace."""
    nsenter, ip = ctx.which('nsenter'), ctx.which('ip')
    if not nsenter or not ip:
        raise HostInputError('nsenter or ip is not installed; interfaces inside containers cannot be read',
                             finding_status='unknown')
    rc, out, err = ctx.run_command([nsenter, '--target', str(pid), '--net', ip, '-o', 'link', 'show'])
    if rc != 0:
        return None, (err or out).strip()[:200] or 'nsenter failed (rc %d)' % rc
    links = {}
    for line in out.splitlines():
        match = _LINK_RE.match(line.strip())
        mac = re.search(r'link/ether\s+([0-9a-f:]{17})', line)
        if match and mac:
            state = re.search(r'\bstate\s+(\S+)', match.group('rest'))
            links[mac.group(1).lower()] = (match.group('name'), match.group('flags').split(','),
                                           state.group(1) if state else None)
    return links, None


def ping(ctx, pid, address):
    """(answered, [last line of ping's output]) for one ping from inside process ``pid``'s network namespace."""
    nsenter = ctx.which('nsenter')
    ping = ctx.which('ping')
    cmd = [nsenter, '--target', str(pid), '--net'] + ([ping] if ping else [ctx.which('busybox') or 'busybox', 'ping'])
    rc, out, err = ctx.run_command(cmd + ['-c', '1', '-W', '2', address])
    return rc == 0, (out + err).strip().splitlines()[-1:] or ['']


def sandbox_dir(key, assumed):
    """(netns dir, confirmed, where it comes from) for one container's sandboxes.

    The daemon names every sandbox under one base path, <exec-root>/netns: the container's
    (NetworkSettings.SandboxKey = sb.Key(): daemon/container_operations.go:1178 at v20.10.24, l.1151 at
    docker-v29.0.0, l.1182 at v29.7.2) and the overlay network's (drivers/overlay/ov_network.go:752 of the
    vendored libnetwork at v20.10.24, l.593 at 29.0.0, l.580 at 29.7.2); both are osl.GenerateKey, which is
    basePath() + "/" + id (osl/namespace_linux.go:192 at v20.10.24, l.101 at 29.0.0, l.102 at 29.7.2), and
    basePath() is filepath.Join(<exec-root>, "netns") (osl/namespace_linux.go:68-69 at v20.10.24,
    daemon/libnetwork/osl/namespace_linux.go:42-51 at 29.0.0, l.43-52 at 29.7.2). So the directory of a
    sandbox key that has that form and is there, a regular file as dockerd creates it, is where the
    network's sandbox must be. A key of any other form or kind confirms nothing.
    """
    why = None
    if not key:
        why = 'the daemon reports no sandbox key for it'
    elif not key.startswith('/') or os.path.normpath(key) != key or os.path.basename(os.path.dirname(key)) != 'netns':
        why = 'its sandbox key %r is not of the form <exec-root>/netns/<id> dockerd gives' % key[:200]
    else:
        try:
            mode = os.lstat(key).st_mode
            if stat.S_ISREG(mode):
                return os.path.dirname(key), True, 'the directory of its sandbox key %s' % key
            why = 'its sandbox key %s is %s, not a namespace file' % (key, _kind(mode))
        except OSError as exc:
            why = ('its sandbox key %s is not there as seen from here' % key if exc.errno == errno.ENOENT
                   else 'its sandbox key: %s' % _path_problem(key, exc))
        except ValueError as exc:
            why = 'its sandbox key cannot be used: %s' % exc
    return assumed['netns_dir'], False, '%s; the exec root is assumed (%s)' % (why, assumed['from'])
