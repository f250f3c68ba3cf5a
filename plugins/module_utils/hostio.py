# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small host-side helpers shared by detections.

Standard library only: these run on whatever Python the target ships.
Everything that reads the host goes through an AuditContext so tests can point
it at a fixture tree and so an SD-card image can be audited through ``root``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re
import stat
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

MAX_CONFIG_BYTES = 1024 * 1024
MAX_PROC_BYTES = 256 * 1024


class ReadProblem(HostInputError):
    """A file could not be used; ``reason`` is one line for a person."""

    def __init__(self, path, reason, kind):
        super(ReadProblem, self).__init__('%s: %s' % (path, reason))
        self.path = path
        self.reason = reason
        self.kind = kind  # missing, denied, too_large, binary, unreadable


MAX_SYMLINKS = 40


def resolve_under(root, path):
    """The host path of ``path`` as the image under ``root`` sees it.

    Symbolic links are followed the way the image's own system would follow
    them: an absolute target is a path of the image, not of the auditing
    machine. A ``..`` that would climb out of ``root`` is an escape; it is
    reported (ReadProblem, kind ``escape``), never followed.
    """
    pending = [p for p in path.split('/') if p not in ('', '.')]
    resolved = []
    links = 0
    while pending:
        part = pending.pop(0)
        if part == '..':
            if not resolved:
                raise ReadProblem(path, 'leaves the image root %s through ".."; not followed' % root, 'escape')
            resolved.pop()
            continue
        candidate = os.path.join(root, *(resolved + [part]))
        if os.path.islink(candidate):
            links += 1
            if links > MAX_SYMLINKS:
                raise ReadProblem(path, 'has more than %d symbolic links in a row (a loop?)' % MAX_SYMLINKS, 'loop')
            target = os.readlink(candidate)
            if target.startswith('/'):
                resolved = []
            pending = [p for p in target.split('/') if p not in ('', '.')] + pending
            continue
        resolved.append(part)
    return os.path.join(root, *resolved) if resolved else root


def _open_problem(path, exc):
    if exc.errno == errno.ENOENT:
        return ReadProblem(path, 'does not exist', 'missing')
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ReadProblem(path, 'permission denied (run the audit with become: true)', 'denied')
    if exc.errno == errno.ESRCH:
        return ReadProblem(path, 'process exited while it was read', 'missing')
    if exc.errno == errno.ELOOP:
        return ReadProblem(path, 'is a loop of symbolic links', 'loop')
    return ReadProblem(path, 'cannot be read: %s' % (exc.strerror or exc,), 'unreadable')


def file_kind(mode):
    """What a file that is not a regular file is, in words ('a named pipe'), for reasons."""
    return _file_kind(mode)


def _file_kind(mode):
    for test, name in ((stat.S_ISDIR, 'a directory'), (stat.S_ISFIFO, 'a named pipe'), (stat.S_ISSOCK, 'a socket'),
                       (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device')):
        if test(mode):
            return name
    return 'not a regular file'


def read_bytes(path, limit=MAX_CONFIG_BYTES):
    """Read at most ``limit`` bytes of a regular file; a larger file is refused, not truncated.

    The file is opened without blocking and checked with fstat before anything
    is read: a named pipe (or device) where a config file should be would
    otherwise block the audit forever.
    """
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0)
    try:
        fd = os.open(path, flags)
    except (IOError, OSError) as exc:
        raise _open_problem(path, exc)
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            raise ReadProblem(path, 'cannot be read: Is a directory', 'unreadable')
        if not stat.S_ISREG(mode):
            raise ReadProblem(path, 'is %s, not a regular file; not read' % _file_kind(mode), 'special')
        if info.st_size > limit:
            # Refused unread: /proc/kcore is a "regular file" of 128 TiB of kernel memory.
            raise ReadProblem(path, 'is larger than %d bytes; refusing to parse it' % limit, 'too_large')
        chunks, total = [], 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(65536, limit + 1 - total))
            except (IOError, OSError) as exc:
                raise _open_problem(path, exc)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > limit:
        raise ReadProblem(path, 'is larger than %d bytes; refusing to parse it' % limit, 'too_large')
    return b''.join(chunks)


def read_text(path, limit=MAX_CONFIG_BYTES):
    """Read a config file as text; binary content is a ReadProblem, not garbage lines.

    A UTF-8 byte order mark is dropped: editors on other systems write one, and
    it would hide the first line's key.
    """
    data = read_bytes(path, limit)
    if b'\x00' in data:
        raise ReadProblem(path, 'contains NUL bytes; it is not a text file', 'binary')
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ReadProblem(path, 'is not UTF-8 text (byte %d)' % exc.start, 'binary')
    return text[1:] if text.startswith('\ufeff') else text


def read_text_if_present(path):
    """read_text, or None when the file does not exist (a fix's file before it is first written)."""
    try:
        return read_text(path)
    except ReadProblem as problem:
        if problem.kind == 'missing':
            return None
        raise


def read_optional_text(path, limit=MAX_PROC_BYTES):
    """Small sysfs/procfs values: None when absent, stripped text otherwise."""
    try:
        return read_bytes(path, limit).decode('utf-8', 'replace').strip()
    except ReadProblem as problem:
        if problem.kind == 'missing':
            return None
        raise


def read_only_mount(path):
    """The mount point ``path`` would be written on when that mount is read-only, else None.

    ``path`` need not exist: its nearest existing directory decides. statvfs reports the mount's own
    flags (ST_RDONLY), so a read-only bind mount of a writable filesystem counts, and root is refused
    there like anyone else. None too when nothing can be asked (the write then says what failed).
    """
    # The directory the kernel will write in: a ".." after a symbolic link is taken after the link, as the
    # kernel takes it (abspath would drop it first). The file's own name is not resolved: a write replaces a link.
    directory = os.path.realpath(os.path.dirname(path) or '.')
    while not os.path.isdir(directory) and directory != os.path.dirname(directory):
        directory = os.path.dirname(directory)
    try:
        if not os.statvfs(directory).f_flag & os.ST_RDONLY:
            return None
    except (IOError, OSError):
        return None
    point, _type = mount_entry(directory)
    if point is None:
        point = directory
        while not os.path.ismount(point):
            point = os.path.dirname(point)
    return point


def _unescape_mount_field(field):
    return field.replace('\\040', ' ').replace('\\011', '\t').replace('\\012', '\n').replace('\\134', '\\')


def mount_entry(path):
    """(mount point, filesystem type) of the mount ``path`` is on, from /proc/self/mountinfo: the longest mount
    point that holds it, so a bind mount of the same filesystem counts (os.path.ismount cannot see one).
    (None, None) when mountinfo cannot be read."""
    try:
        with open('/proc/self/mountinfo', 'rb') as handle:
            lines = handle.read(4 * 1024 * 1024).decode('utf-8', 'replace').splitlines()
    except (IOError, OSError):
        return None, None
    target = os.path.realpath(path)
    best, best_type = None, None
    for line in lines:
        fields = line.split(' ')
        if ' - ' not in line or len(fields) < 5:
            continue
        point = _unescape_mount_field(fields[4])
        inside = target == point or target.startswith(point.rstrip('/') + '/')
        if inside and len(point) >= len(best or ''):
            best, best_type = point, line.split(' - ', 1)[1].split(' ')[0]
    return best, best_type


# ASCII digits only (\d would take fullwidth and Arabic-Indic digits), at most 9 per part and
# 8 parts, and the number may not run on: neither a part into more digits ("99...9", "1.2222...")
# nor the parts into a ninth (".9"). Such a text does not parse (None, unknown), so it can never
# be read as its first digits and land outside an affected range.
_VERSION_RE = re.compile(r'^([0-9]{1,9}(?:\.[0-9]{1,9}){0,7})(?![0-9]|\.[0-9])')
MAX_VERSION_TEXT = 256


def version_tuple(text):
    """'6.18.34+rpt-rpi-v8' -> (6, 18, 34). None when there is no leading version number, or the
    text is longer than MAX_VERSION_TEXT (no version string of any tool is)."""
    text = (text or '').strip()
    if len(text) > MAX_VERSION_TEXT:
        return None
    match = _VERSION_RE.match(text.lstrip('vV'))
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split('.'))


def version_in_range(version, first_affected, first_fixed=None):
    """Whether ``version`` is >= first_affected and < first_fixed (when given).

    Shorter tuples compare as padded with zeros, so 6.18 == 6.18.0.
    """
    def pad(value, width):
        return tuple(value) + (0,) * (width - len(value))

    parts = [version, first_affected] + ([first_fixed] if first_fixed else [])
    width = max(len(p) for p in parts)
    if pad(version, width) < pad(first_affected, width):
        return False
    if first_fixed and pad(version, width) >= pad(first_fixed, width):
        return False
    return True


class Process(object):
    """One process from /proc, read once. Unreadable parts are recorded, not raised."""

    def __init__(self, pid, argv, proc_dir):
        self.pid = pid
        self.argv = argv
        self.proc_dir = proc_dir
        self._environ = None
        self.environ_problem = None

    def environ(self):
        """The process environment, or None with ``environ_problem`` set."""
        if self._environ is None and self.environ_problem is None:
            try:
                raw = read_bytes(os.path.join(self.proc_dir, 'environ'), MAX_PROC_BYTES)
            except ReadProblem as problem:
                self.environ_problem = problem.reason
                return None
            env = {}
            for item in raw.split(b'\x00'):
                if b'=' in item:
                    key, value = item.split(b'=', 1)
                    env[key.decode('utf-8', 'replace')] = value.decode('utf-8', 'replace')
            self._environ = env
        return self._environ

    def cgroup_lines(self):
        try:
            return read_bytes(os.path.join(self.proc_dir, 'cgroup'), MAX_PROC_BYTES).decode('utf-8', 'replace').splitlines()
        except ReadProblem:
            return []


def list_processes(proc_root, wanted):
    """Processes whose argv[0] basename satisfies ``wanted(name)``.

    Returns (processes, problems). A process that exits while it is read is
    skipped silently: that is a race, not a finding.
    """
    processes, problems = [], []
    try:
        entries = os.listdir(proc_root)
    except OSError as exc:
        return [], ['%s cannot be listed: %s' % (proc_root, exc.strerror or exc)]
    for entry in entries:
        if not entry.isdigit():
            continue
        proc_dir = os.path.join(proc_root, entry)
        try:
            raw = read_bytes(os.path.join(proc_dir, 'cmdline'), MAX_PROC_BYTES)
        except ReadProblem as problem:
            if problem.kind != 'missing':
                problems.append('pid %s: cmdline %s' % (entry, problem.reason))
            continue
        argv = [part.decode('utf-8', 'replace') for part in raw.split(b'\x00')]
        while argv and argv[-1] == '':
            argv.pop()
        if not argv:
            continue  # kernel thread or zombie
        if wanted(os.path.basename(argv[0])):
            processes.append(Process(int(entry), argv, proc_dir))
    processes.sort(key=lambda p: p.pid)
    return processes, problems


def systemd_unit_from_cgroup(lines):
    """The systemd service that owns a process, from /proc/PID/cgroup.

    Returns (unit, scope) where scope is 'system' or 'user:<uid>', or
    (None, None) when no .service owns the process (a shell, a container...).
    On a cgroup v1 "hybrid" host the unified ``0::`` line is present but may
    not carry systemd's placement (seen inside podman containers), so the
    ``name=systemd`` hierarchy is read first and ``0::`` second.
    """
    paths = {}
    for line in lines:
        parts = line.split(':', 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, cgpath = parts
        if controllers == 'name=systemd':
            paths['legacy'] = cgpath.strip()
        elif hierarchy == '0' and controllers == '':
            paths['unified'] = cgpath.strip()
    for key in ('legacy', 'unified'):
        found = _unit_in_path(paths.get(key))
        if found[0]:
            return found
    return None, None


def _unit_in_path(path):
    components = [c for c in (path or '').split('/') if c]
    unit = None
    for component in reversed(components):
        if component.endswith('.service'):
            unit = component
            break
    if unit is None:
        return None, None
    for component in components:
        match = re.match(r'^user@(\d+)\.service$', component)
        if match and component != unit:
            return unit, 'user:%s' % match.group(1)
    return unit, 'system'


# Restart= values under which systemd restarts a service killed by a signal
# (a SIGSEGV, as in the sleep race). See systemd.service(5), table 2.
RESTARTS_ON_CRASH = frozenset(['always', 'on-failure', 'on-abnormal', 'on-abort'])


def read_journal(run_command, journalctl, unit, lines, scope='system'):
    """(the last ``lines`` journal lines of ``unit``, None) or (None, why they could not be read).

    A user-scope unit (scope 'user:NAME', as systemd_unit_from_cgroup says) is read with
    --user-unit from the system journal, which root can read.
    """
    if not unit:
        return None, 'not read (no unit)'
    if not journalctl:
        return None, 'not read: journalctl is not installed'
    which = '--user-unit' if scope and scope.startswith('user') else '--unit'
    rc, out, err = run_command([journalctl, which, unit, '--output', 'cat', '--no-pager', '--lines', str(lines)])
    if rc != 0 or 'No journal files' in err:
        return None, 'not read: %s' % ((err or out).strip().splitlines() or ['journalctl rc %d' % rc])[0][:200]
    return out.splitlines(), None


def systemd_show(run_command, systemctl, unit, properties, scope='system'):
    """``systemctl show`` as a dict, or raise ReadProblem with the reason."""
    cmd = [systemctl]
    if scope and scope.startswith('user:'):
        cmd += ['--user', '--machine=%s@' % scope.split(':', 1)[1]]
    cmd += ['show', unit, '--no-pager']
    for prop in properties:
        cmd += ['-p', prop]
    rc, out, err = run_command(cmd)
    if rc != 0:
        reason = (err or out or '').strip().splitlines()
        raise ReadProblem(unit, 'systemctl show failed (rc %s): %s' % (rc, reason[0] if reason else 'no output'), 'unreadable')
    values = {}
    for line in out.splitlines():
        if '=' in line:
            key, value = line.split('=', 1)
            values[key] = value
    return values
