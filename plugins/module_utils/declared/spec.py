# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a declared check may ask a host, declared once for both sides.

A declared check (docs/declared_checks.md) gathers a short list of named questions on the host, each
of one KIND with typed, bounded options; the controller judges the answers. The controller validates
a check file against this table before any host is contacted (with file, check and line); the host
normalizes the same wire form again with it, so a direct module call with a bad question gets a
worded error for that check alone. Standard library only: it runs on the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.homelab.postmortem.plugins.module_utils.loopback_http import is_loopback

# <namespace>.<name>: built-in ids have no dot, so a declared id can never shadow one.
ID_RE = re.compile(r'^[a-z][a-z0-9_]{0,62}(\.[a-z][a-z0-9_]{0,62}){1,3}$')
NAME_RE = re.compile(r'^[a-z][a-z0-9_]{0,62}$')
GROUP_RE = re.compile(r'^[a-z][a-z0-9_-]{0,62}$')
# The JMESPath context's own keys: a question may not take these names.
RESERVED_NAMES = ('now', 'host', 'item', 'evidence')
DECLARED_GROUP = 'declared'
MAX_QUESTIONS = 20
MAX_GROUPS = 10
DEFAULT_CHECK_TIMEOUT = 30
MAX_CHECK_TIMEOUT = 600
# What one check's answers may weigh in characters of text, whatever its questions' caps: more is
# refused (the check's error), never cut, since a cut answer could be judged ok.
MAX_ANSWER_CHARS = 2 * 1024 * 1024
MAX_TEXT = 4096

# Programs that would read their arguments as a script: a declared command runs one program, never a shell.
SHELLS = ('sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'csh', 'tcsh', 'fish', 'busybox')
# Kinds that ask the running system: an image audit (root) answers not_applicable for a check using one.
LIVE_ONLY = ('command', 'http', 'systemd', 'processes', 'listening')
CONTENT_PARSERS = ('none', 'text', 'lines', 'json', 'ini', 'keyvalue')
DEFAULT_PROPERTIES = ('Id', 'LoadState', 'ActiveState', 'SubState', 'Result', 'UnitFileState')
_UNIT_RE = re.compile(r'^[A-Za-z0-9:_.@\\-]{1,250}\.(service|socket|timer|mount|automount|path|target|swap|slice|scope|device)$')
_PROPERTY_RE = re.compile(r'^[A-Za-z][A-Za-z0-9]{0,63}$')
_ENV_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]{0,127}$')


class Option(object):
    """One option of a kind: ``kind`` of value (see _CONVERT), default, bounds or choices."""

    def __init__(self, kind, default=None, low=None, high=None, choices=None, required=False, doc=''):
        self.kind = kind
        self.default = default
        self.low = low
        self.high = high
        self.choices = choices
        self.required = required
        self.doc = doc


KINDS = {
    'command': {
        'argv': Option('argv', required=True, doc='the program and its arguments, a list (never a shell)'),
        'timeout': Option('int', 10, 1, 300, doc='seconds the command may take'),
        'max_bytes': Option('int', 64 * 1024, 1, 1024 * 1024, doc='bytes of output read at most; more is an error'),
        'parse': Option('choice', 'text', choices=('text', 'lines', 'json'), doc='how stdout is handed to the judge'),
    },
    'file': {
        'path': Option('path', required=True, doc='an absolute path (under root in an image audit)'),
        'content': Option('choice', 'none', choices=CONTENT_PARSERS, doc='read the content, parsed so; none: stat only'),
        'max_bytes': Option('int', 64 * 1024, 1, 4 * 1024 * 1024, doc='a larger file is an error, never cut'),
    },
    'glob': {
        'pattern': Option('path', required=True, doc='an absolute shell pattern (* ? [...]; no **)'),
        'max_matches': Option('int', 100, 1, 1000, doc='matches kept; more sets truncated'),
    },
    'http': {
        'url': Option('url', required=True, doc='http(s) on a loopback address of the host'),
        'timeout': Option('int', 5, 1, 60, doc='seconds for connect, headers and body together'),
        'max_bytes': Option('int', 256 * 1024, 1, 4 * 1024 * 1024, doc='a larger reply is an error'),
        'parse': Option('choice', 'json', choices=('json', 'text'), doc='how the body is handed to the judge'),
    },
    'systemd': {
        'unit': Option('unit', doc='one unit: its properties are the answer'),
        'units': Option('unit_list', doc='several units: the answer holds a list, in this order'),
        'properties': Option('property_list', list(DEFAULT_PROPERTIES), doc='the properties systemctl show reads'),
    },
    'processes': {
        'program': Option('program', required=True, doc='the program name (argv[0] without its directory)'),
        'environment': Option('env_list', [], doc='environment variables to read of each process'),
        'max': Option('int', 50, 1, 500, doc='processes kept; more sets truncated'),
    },
    'listening': {
        'protocol': Option('choice', 'tcp', choices=('tcp', 'udp'), doc='tcp: listening sockets; udp: bound ones'),
        'port': Option('port_list', [], doc='only these ports (a number or a list); empty: all'),
    },
}
COMMON = {
    'name': Option('name', required=True, doc='how the judge refers to the answer'),
    'kind': Option('choice', required=True, choices=tuple(sorted(KINDS)), doc='what is asked'),
    'allow_error': Option('bool', False, doc='hand a failed answer (its error) to the judge instead of failing the check'),
}


def _text(value, what, limit=MAX_TEXT):
    if not isinstance(value, str):
        raise ValueError('%s must be text, got %s' % (what, _type(value)))
    if not value or len(value) > limit or '\x00' in value:
        raise ValueError('%s must be 1 to %d characters without NUL' % (what, limit))
    return value


def _type(value):
    return {'NoneType': 'null', 'str': 'text', 'dict': 'a mapping', 'list': 'a list',
            'bool': 'a boolean', 'int': 'a number', 'float': 'a number'}.get(type(value).__name__, type(value).__name__)


def _int(value, option):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('must be a whole number, got %s' % _type(value))
    if not option.low <= value <= option.high:
        raise ValueError('must be %d to %d, got %d' % (option.low, option.high, value))
    return value


def _list(value, what, limit):
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise ValueError('must be %s or a list of them, got %s' % (what, _type(value)))
    if len(value) > limit:
        raise ValueError('has %d entries, at most %d' % (len(value), limit))
    return value


def _argv(value, _option):
    if not isinstance(value, list) or not value:
        raise ValueError('must be a non-empty list of arguments (argv, never a shell command line), got %s'
                         % ('an empty list' if value == [] else _type(value)))
    if len(value) > 64:
        raise ValueError('has %d arguments, at most 64' % len(value))
    argv = []
    for position, word in enumerate(value):
        if isinstance(word, (int, float)) and not isinstance(word, bool):
            word = str(word)
        argv.append(_text(word, 'argument %d' % position))
    program = argv[0].rsplit('/', 1)[-1]
    if program in SHELLS:
        raise ValueError('runs %s, a shell: a declared command runs one program with its arguments, never a shell' % program)
    if '/' in argv[0] and not argv[0].startswith('/'):
        raise ValueError('program %s must be a name looked up in PATH or an absolute path' % argv[0])
    return argv


def _path(value, _option):
    value = _text(value, 'it')
    if not value.startswith('/'):
        raise ValueError('must be an absolute path, got %r' % value[:80])
    if '**' in value:
        raise ValueError('** is not supported: name each directory level (*/)')
    return value


def _url(value, _option):
    value = _text(value, 'it', 2048)
    try:
        parts = urlsplit(value)
        if parts.port == 0:
            raise ValueError('port 0')
    except ValueError as exc:
        raise ValueError('is not a URL: %s' % exc)
    if parts.scheme not in ('http', 'https'):
        raise ValueError('must be an http or https URL, got %r' % value[:80])
    if not is_loopback(parts.hostname):
        raise ValueError('must name a loopback address (127.0.0.1, ::1, localhost): declared checks ask only the '
                         'host itself, got %s' % (parts.hostname or 'no host'))
    return value


def _unit(value, _option):
    value = _text(value, 'a unit', 256)
    if not _UNIT_RE.match(value):
        raise ValueError('%r is not a systemd unit name with its type (backup.service, backup.timer)' % value[:80])
    return value


def _unit_list(value, option):
    units = _list(value, 'a unit', 50)
    if not units:
        raise ValueError('must name at least one unit')
    return [_unit(unit, option) for unit in units]


def _property_list(value, _option):
    properties = _list(value, 'a property name', 50)
    for name in properties:
        if not isinstance(name, str) or not _PROPERTY_RE.match(name):
            raise ValueError('%r is not a systemd property name (ActiveState, ExecMainStatus)' % (name,))
    return properties or list(DEFAULT_PROPERTIES)


def _program(value, _option):
    value = _text(value, 'it', 255)
    if '/' in value:
        raise ValueError('is matched against the program name without its directory: %r has a /' % value[:80])
    return value


def _env_list(value, _option):
    names = _list(value, 'an environment variable name', 50)
    for name in names:
        if not isinstance(name, str) or not _ENV_RE.match(name):
            raise ValueError('%r is not an environment variable name' % (name,))
    return names


def _port_list(value, _option):
    ports = _list(value, 'a port number', 100)
    for port in ports:
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError('%r is not a port number (1 to 65535)' % (port,))
    return ports


def _choice(value, option):
    if value not in option.choices:
        raise ValueError('must be one of %s, got %r' % (', '.join(option.choices), value))
    return value


def _bool(value, _option):
    if not isinstance(value, bool):
        raise ValueError('must be true or false, got %s' % _type(value))
    return value


def _name(value, _option):
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise ValueError('must be a lower-case name (letters, digits, _; a letter first), got %r' % (value,))
    if value in RESERVED_NAMES:
        raise ValueError('%s is the judge\'s own (%s): choose another name' % (value, ', '.join(RESERVED_NAMES)))
    return value


_CONVERT = {
    'int': _int, 'argv': _argv, 'path': _path, 'url': _url, 'unit': _unit, 'unit_list': _unit_list,
    'property_list': _property_list, 'program': _program, 'env_list': _env_list, 'port_list': _port_list,
    'choice': _choice, 'bool': _bool, 'name': _name,
}


def options_of(kind):
    """Every option a question of ``kind`` takes: the common ones and the kind's."""
    merged = dict(COMMON)
    # A kind that is not text ([file], {a: 1} from a malformed file) has no options of its own (and is no dict key).
    merged.update((KINDS.get(kind) if isinstance(kind, str) else None) or {})
    return merged


def normalize_question(question):
    """(the question with every option typed and its defaults filled, [(option, problem)]).

    Unknown options are problems (the caller words a "did you mean"); the question is usable only
    when there are none."""
    if not isinstance(question, dict):
        return None, [(None, 'a question must be a mapping (name, kind and its options), got %s' % _type(question))]
    problems = []
    kind = question.get('kind')
    if not isinstance(kind, str) or kind not in KINDS:
        problems.append(('kind', 'must be one of %s, got %r' % (', '.join(sorted(KINDS)), kind)
                         if kind is not None else 'is missing (one of %s)' % ', '.join(sorted(KINDS))))
    options = options_of(kind)
    normalized = {}
    for key in question:
        if key not in options and isinstance(kind, str) and kind in KINDS:
            problems.append((key, 'unknown option'))
    for key, option in sorted(options.items()):
        if key not in question or question[key] is None:
            if option.required:
                if key != 'kind':
                    problems.append((key, 'is missing (%s)' % option.doc))
            elif option.default is not None:
                normalized[key] = list(option.default) if isinstance(option.default, list) else option.default
            continue
        try:
            normalized[key] = _CONVERT[option.kind](question[key], option)
        except ValueError as exc:
            problems.append((key, str(exc)))
    if kind == 'systemd' and ('unit' in question) == ('units' in question):
        problems.append(('unit', 'give one of unit (one unit) or units (a list)'))
    return (normalized if not problems else None), problems


class DeclaredCheck(object):
    """A declared check as the host's selection sees it (registry.select): an id and its groups;
    ``gather``: the normalized questions; ``problem``: why it cannot be asked (its error)."""

    PROBES = ()
    SETTINGS = {}

    def __init__(self, check_id, title, groups, gather, timeout, digest, problem=None):
        self.ID = check_id
        self.TITLE = title
        self.GROUPS = tuple(groups)
        self.GROUP = DECLARED_GROUP
        self.gather = gather
        self.timeout = timeout
        self.digest = digest
        self.problem = problem
