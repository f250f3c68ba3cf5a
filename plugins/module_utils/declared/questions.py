# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of a declared check: one function per kind of question (spec.KINDS).

Each answers with a mapping of data, the same keys whatever happened, and ``error`` None; input it
cannot use (a timeout, a file too large or not text, a reply that is not JSON, a permission) raises
a HostInputError, which gather.py turns into the answer's ``error``. Nothing here writes: commands
run through the one runner (time, output, process group), files are read with hostio's bounded,
non-blocking reads, HTTP goes only to loopback (loopback_http), the process table and sockets come
from /proc. Standard library only, Python 3.8.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fnmatch
import os
import socket
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

MAX_STDERR = 4096
# Names a glob may look at in all its directories together, and paths it may hold between levels.
MAX_GLOB_SCANNED = 100000
MAX_GLOB_PENDING = 10000
MAX_PROC_NET_BYTES = 16 * 1024 * 1024
# /proc/net/tcp's st column: 0A is LISTEN; an unconnected UDP socket is 07 (TCP_CLOSE).
_LISTEN_STATE = {'tcp': '0A', 'udp': '07'}
_TYPES = ((stat.S_ISREG, 'file'), (stat.S_ISDIR, 'directory'), (stat.S_ISLNK, 'link'), (stat.S_ISFIFO, 'fifo'),
          (stat.S_ISSOCK, 'socket'), (stat.S_ISCHR, 'char_device'), (stat.S_ISBLK, 'block_device'))
# sd_booted(3): systemd runs as the init system exactly when this directory exists.
SYSTEMD_RUNTIME_DIR = '/run/systemd/system'


class Budget(HostInputError):
    """The check's time budget ran out in the middle of a question: the host could not tell."""

    finding_status = 'unknown'


def time_left(ctx, what):
    """Seconds left of the check's budget for ``what``; Budget when nothing is left."""
    seconds, why = ctx.runner.limit()
    if seconds <= 0:
        raise Budget('%s was not finished: %s is used up' % (what, why))
    return seconds


def parse_text(text, how, what):
    """Text handed to the judge as text, its lines, or parsed JSON (bounded)."""
    if how == 'lines':
        return text.splitlines()
    if how == 'json':
        return bounded_json.loads(text, what)
    return text


# -- command ---------------------------------------------------------------------------------------

def command(ctx, question, shared):
    argv = question['argv']
    answer = {'found': False, 'program': None, 'rc': None, 'stdout': None, 'stderr': None}
    program = argv[0] if argv[0].startswith('/') else ctx.which(argv[0])
    if not program or not os.path.isfile(program):
        return answer
    answer['found'] = True
    answer['program'] = program
    rc, out, err = shared.run(ctx, [program] + list(argv[1:]), question['timeout'], question['max_bytes'])
    answer['rc'] = rc
    answer['stderr'] = err[-MAX_STDERR:]
    answer['stdout'] = parse_text(out, question['parse'], 'the output of %s' % os.path.basename(program))
    return answer


# -- file and glob ---------------------------------------------------------------------------------

def _file_type(mode):
    for test, name in _TYPES:
        if test(mode):
            return name
    return 'other'


def stat_fields(info):
    return {'type': _file_type(info.st_mode), 'size': info.st_size, 'mtime': info.st_mtime,
            'mode': '%04o' % stat.S_IMODE(info.st_mode), 'uid': info.st_uid, 'gid': info.st_gid}


def _stat(host_path, shown):
    """(os.stat of the path following links, or None when nothing is there, link target or None)."""
    try:
        return os.stat(host_path), None
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            try:
                return None, os.readlink(host_path)  # a dangling link is there, pointing nowhere
            except OSError:
                return None, None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise hostio.ReadProblem(shown, 'permission denied (run the audit with become: true)', 'denied')
        if exc.errno == errno.ELOOP:
            raise hostio.ReadProblem(shown, 'is a loop of symbolic links', 'loop')
        raise hostio.ReadProblem(shown, 'cannot be read: %s' % (exc.strerror or exc), 'unreadable')


def file(ctx, question, _shared):
    path = question['path']
    answer = {'path': path, 'exists': False, 'type': None, 'size': None, 'mtime': None, 'mode': None,
              'uid': None, 'gid': None, 'link_target': None, 'content': None}
    host_path = ctx.path(path)
    info, dangling = _stat(host_path, path)
    if info is None:
        answer['link_target'] = dangling
        return answer
    answer['exists'] = True
    answer.update(stat_fields(info))
    if os.path.islink(host_path):
        answer['link_target'] = os.readlink(host_path)
    how = question['content']
    if how == 'none':
        return answer
    if answer['type'] != 'file':
        # Never opened: a FIFO would block, a device could be endless.
        raise hostio.ReadProblem(path, 'is a %s, not a regular file; its content was not read'
                                 % answer['type'].replace('_', ' '), 'special')
    limit = question['max_bytes']
    if how == 'json':
        answer['content'] = bounded_json.loads(hostio.read_bytes(host_path, limit), path)
        return answer
    text = hostio.read_text(host_path, limit)
    if how in ('text', 'lines'):
        answer['content'] = parse_text(text, how, path)
    elif how == 'ini':
        answer['content'] = parse_ini(text)
    else:
        answer['content'] = parse_keyvalue(text)
    return answer


def parse_ini(text):
    """{section: {key: value}}; keys before any section are under "". A repeated key keeps its last
    value (as most readers do); comments start with # or ;. Key case is kept."""
    sections = {'': {}}
    current = sections['']
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        key, sep, value = line.partition('=')
        if not sep:
            key, sep, value = line.partition(':')
        if sep:
            current[key.strip()] = value.strip()
        else:
            current[line] = None
    if not sections['']:
        del sections['']
    return sections


def parse_keyvalue(text):
    """{KEY: value} of KEY=VALUE lines (os-release, /etc/default files, env files): an ``export``
    prefix, comments and matching quotes around a value are dropped."""
    values = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith('#'):
            continue
        if line.startswith('export '):
            line = line[len('export '):].lstrip()
        key, sep, value = line.partition('=')
        if not sep or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
            value = value[1:-1]
        values[key.strip()] = value
    return values


def glob(ctx, question, _shared):
    """Paths matching the pattern, level by level: a bounded number of names looked at, the budget
    checked at every directory, hidden names only when the pattern's part starts with a dot."""
    pattern = question['pattern']
    parts = [p for p in pattern.split('/') if p]
    pending, scanned = [''], 0
    for part in parts:
        found = []
        magic = any(c in part for c in '*?[')
        for relative in pending:
            if not magic:
                found.append(relative + '/' + part)
                continue
            time_left(ctx, 'glob %s' % pattern)
            try:
                names = os.listdir(ctx.path(relative or '/'))
            except (OSError, HostInputError):
                continue  # not a directory, gone, unreadable: nothing matches below it
            scanned += len(names)
            if scanned > MAX_GLOB_SCANNED:
                raise HostInputError('glob %s looked at more than %d names; narrow the pattern' % (pattern, MAX_GLOB_SCANNED))
            for name in sorted(names):
                if (not name.startswith('.') or part.startswith('.')) and fnmatch.fnmatchcase(name, part):
                    found.append(relative + '/' + name)
        if len(found) > MAX_GLOB_PENDING:
            raise HostInputError('glob %s matches more than %d paths at /%s; narrow the pattern'
                                 % (pattern, MAX_GLOB_PENDING, part))
        pending = found
    matches = []
    for path in pending:
        try:
            info, dangling = _stat(ctx.path(path), path)
        except HostInputError:
            continue
        if info is None and dangling is None:
            continue
        if len(matches) == question['max_matches']:
            return {'pattern': pattern, 'matches': matches, 'count': len(matches), 'truncated': True}
        entry = {'path': path, 'type': 'link', 'size': None, 'mtime': None, 'mode': None, 'uid': None, 'gid': None}
        if info is not None:
            entry.update(stat_fields(info))
        matches.append(entry)
    return {'pattern': pattern, 'matches': matches, 'count': len(matches), 'truncated': False}


# -- http --------------------------------------------------------------------------------------------

def http(ctx, question, _shared):
    url = question['url']
    answer = {'url': url, 'reachable': False, 'reason': None, 'status': None, 'body': None}
    timeout = min(question['timeout'], time_left(ctx, 'GET %s' % url))
    if not loopback_http.accepts_connections(url, timeout):
        # Asked with a bare connect first: a host where nothing listens loads no HTTP or TLS code.
        answer['reason'] = '%s: nothing accepts connections there' % url
        return answer
    try:
        status, raw = loopback_http.request(url, timeout=timeout, max_bytes=question['max_bytes'])
    except loopback_http.ProbeFailure as exc:
        if not exc.unreachable:
            raise
        answer['reason'] = exc.reason
        return answer
    answer['reachable'] = True
    answer['status'] = status
    text = raw.decode('utf-8', 'replace')
    if question['parse'] == 'json':
        try:
            answer['body'] = bounded_json.loads(text, url)
        except bounded_json.JsonInputError:
            if 200 <= status < 300:
                raise
            # An error page that is not JSON: the status says what happened.
    else:
        answer['body'] = text
    return answer


# -- systemd -----------------------------------------------------------------------------------------

def systemd(ctx, question, shared):
    units = [question['unit']] if question.get('unit') else question['units']
    shown = shared.systemd_show(ctx, units, question['properties'])
    answer = {'available': shown['available'], 'reason': shown['reason']}
    rows = []
    for unit in units:
        values = shown['units'].get(unit) or {}
        row = dict((name, values.get(name)) for name in question['properties'])
        row['unit'] = unit
        rows.append(row)
    if question.get('unit'):
        answer.update(rows[0])
    else:
        answer['units'] = rows
    return answer


def _systemd_blocks(out, units):
    """{unit: {property: value}} from ``systemctl show u1 u2 ...``: one block per unit, in the order
    asked, separated by an empty line (each block starts with the Id we always ask for)."""
    blocks, current = [], None
    for line in out.splitlines():
        if not line.strip():
            current = None
            continue
        if current is None:
            current = {}
            blocks.append(current)
        key, sep, value = line.partition('=')
        if sep:
            current[key] = value
    if len(blocks) != len(units):
        raise HostInputError('systemctl show answered %d block(s) for %d unit(s); not read' % (len(blocks), len(units)))
    return dict(zip(units, blocks))


class Shared(object):
    """What several questions of one run ask once: the process table, one systemctl show for every
    unit any selected check names, the socket tables, each command."""

    def __init__(self, systemd_units=(), systemd_properties=()):
        self._units = list(systemd_units)
        self._properties = list(systemd_properties)
        self._systemd = None
        self._sockets = {}
        self._commands = {}

    def run(self, ctx, cmd, timeout, max_bytes):
        """(rc, stdout, stderr) of a command that finished; the same command (and output cap) is run
        once per run whatever the number of checks asking it (two checks reading podman ps pay one).
        A command that did not finish is not kept: the next check asks again, in its own budget."""
        key = (tuple(cmd), max_bytes)
        if key not in self._commands:
            self._commands[key] = ctx.runner.run_contained(cmd, timeout=timeout, max_output=max_bytes)
        return self._commands[key]

    def systemd_show(self, ctx, units, properties):
        if self._systemd is not None and all(u in self._systemd['units'] for u in units) \
                and all(p in self._properties for p in properties):
            return self._systemd
        if not os.path.isdir(SYSTEMD_RUNTIME_DIR):
            self._systemd = {'available': False, 'reason': 'systemd is not running on this host (no %s)'
                             % SYSTEMD_RUNTIME_DIR, 'units': dict((u, {}) for u in self._units + units)}
            return self._systemd
        systemctl = ctx.which('systemctl')
        if not systemctl:
            return {'available': False, 'reason': 'systemctl is not installed', 'units': {}}
        wanted_units = self._units + [u for u in units if u not in self._units]
        wanted_properties = ['Id'] + [p for p in self._properties + list(properties) if p != 'Id']
        cmd = [systemctl, 'show', '--no-pager']
        for name in sorted(set(wanted_properties)):
            cmd += ['-p', name]
        # Time stamps as UTC ("Mon 2026-12-01 03:00:00 UTC"), whatever the host's zone: the judge's
        # epoch() reads them without guessing what CET or EST meant.
        rc, out, err = ctx.runner.run(cmd + ['--'] + wanted_units, env={'TZ': 'UTC'})
        if rc != 0:
            reason = (err or out).strip().splitlines()
            raise HostInputError('systemctl show failed (rc %s): %s' % (rc, reason[0][:300] if reason else 'no output'))
        self._units = wanted_units
        self._properties = wanted_properties
        self._systemd = {'available': True, 'reason': None, 'units': _systemd_blocks(out, wanted_units)}
        return self._systemd

    def sockets(self, ctx, protocol):
        if protocol not in self._sockets:
            self._sockets[protocol] = read_sockets(ctx.proc_root, protocol)
        return self._sockets[protocol]


# -- processes and sockets ---------------------------------------------------------------------------

def processes(ctx, question, _shared):
    # One read of the process table per run, whatever the number of questions (ctx.processes caches it).
    table, problems = ctx.processes('declared:all', lambda _name: True)
    found = []
    for process in table:
        if os.path.basename(process.argv[0]) != question['program']:
            continue
        entry = {'pid': process.pid, 'argv': process.argv, 'environment': None, 'environment_problem': None,
                 'unit': hostio.systemd_unit_from_cgroup(process.cgroup_lines())[0]}
        if question['environment']:
            environ = process.environ()
            if environ is None:
                entry['environment_problem'] = process.environ_problem
            else:
                entry['environment'] = dict((name, environ.get(name)) for name in question['environment'])
        found.append(entry)
    kept = found[:question['max']]
    return {'processes': kept, 'count': len(found), 'truncated': len(found) > len(kept), 'problems': problems[:10]}


def _address(hex_address):
    """/proc/net's address: IPv4 as one little-endian 32-bit word, IPv6 as four, written as inet_ntop does."""
    data = bytes.fromhex(hex_address)
    if len(data) == 4:
        return socket.inet_ntop(socket.AF_INET, data[::-1])
    return socket.inet_ntop(socket.AF_INET6, b''.join(data[i:i + 4][::-1] for i in range(0, 16, 4)))


def read_sockets(proc_root, protocol):
    """[{protocol, address, port}] of listening TCP (or bound UDP) sockets in /proc/net."""
    sockets = []
    for family in ('', '6'):
        name = protocol + family
        try:
            text = hostio.read_bytes(os.path.join(proc_root, 'net', name), MAX_PROC_NET_BYTES).decode('ascii', 'replace')
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing':
                continue  # no IPv6 in this kernel
            raise
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4 or ':' not in fields[1]:
                continue
            local, _rem, state = fields[1], fields[2], fields[3]
            if state != _LISTEN_STATE[protocol]:
                continue
            hex_address, hex_port = local.split(':', 1)
            try:
                sockets.append({'protocol': name, 'address': _address(hex_address), 'port': int(hex_port, 16)})
            except (ValueError, OSError):
                continue
    return sockets


def listening(ctx, question, shared):
    sockets = shared.sockets(ctx, question['protocol'])
    if question['port']:
        sockets = [s for s in sockets if s['port'] in question['port']]
    return {'sockets': sockets, 'ports': sorted(set(s['port'] for s in sockets)), 'count': len(sockets)}


ASK = {'command': command, 'file': file, 'glob': glob, 'http': http, 'systemd': systemd,
       'processes': processes, 'listening': listening}
# The keys each kind answers with, for an answer whose question failed (allow_error): the judge
# sees the same shape, every value null, and the reason in ``error``.
EMPTY = {
    'command': ('found', 'program', 'rc', 'stdout', 'stderr'),
    'file': ('path', 'exists', 'type', 'size', 'mtime', 'mode', 'uid', 'gid', 'link_target', 'content'),
    'glob': ('pattern', 'matches', 'count', 'truncated'),
    'http': ('url', 'reachable', 'reason', 'status', 'body'),
    'systemd': ('available', 'reason'),
    'processes': ('processes', 'count', 'truncated', 'problems'),
    'listening': ('sockets', 'ports', 'count'),
}


def ask(ctx, question, shared):
    """The answer to one question, with ``error`` (None, or the reason) and ``error_status``."""
    try:
        answer = ASK[question['kind']](ctx, question, shared)
        answer['error'] = None
    except HostInputError as exc:
        answer = dict((key, None) for key in EMPTY[question['kind']])
        answer['error'] = str(exc)
        answer['error_status'] = exc.finding_status
    return answer
