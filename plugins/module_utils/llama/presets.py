# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The INI files llama.cpp reads (config.ini and router presets), as common/preset.cpp reads them.

parse_ini_from_file (l.170-249) gives the sections; load_from_ini (l.285-348) makes each a Preset, its
keys an option's environment variable or any of its names without the leading dashes (keys unknown to
llama-server are ignored in config.ini, refused in a router preset). set_in_ini and add_to_ini edit
one line of such a file, every other byte kept.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import options as table
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.args import OPTIONS, TRUTHY, ValueRefused


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
# editing an INI file the way llama.cpp reads it

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
