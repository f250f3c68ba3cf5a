# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read and minimally rewrite systemd unit files and Quadlet .container files.

Only the lines that must change are rewritten; comments, order, other keys
and line endings stay. Continuation lines (a trailing backslash) form one
logical line; an empty ``ExecStart=`` resets the list, as in systemd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


EXEC_PREFIX_CHARS = '-@:+!|'


class Entry(object):
    """One logical ``Key=value`` line: where it is and what it says."""

    def __init__(self, section, key, value, first, last):
        self.section = section
        self.key = key
        self.value = value
        self.first = first  # index of the first physical line
        self.last = last    # index of the last physical line (continuations)


# systemd ends a line at LF, CR or CR LF (and NUL, which the bounded reads refuse): read_line_full,
# src/basic/fileio.c (252.39 l.1246-1259). str.splitlines() also splits at VT, FF, FS, GS, RS, NEL and
# U+2028/U+2029, which systemd keeps inside a value.
_LINE = re.compile(r'[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$')


# What systemd strips around keys, values and sections (WHITESPACE, src/basic/string-util.h); Python's
# strip() would also take FF, VT and Unicode spaces.
WHITESPACE = ' \t\n\r'


def physical_lines(text):
    """The file's lines as systemd splits them, each with its line ending."""
    return _LINE.findall(text)


def _ends_escaped(text):
    """Whether ``text`` ends in a backslash that is not itself escaped."""
    trailing = len(text) - len(text.rstrip('\\'))
    return trailing % 2 == 1


class UnitFile(object):
    def __init__(self, text):
        self.text = text
        self.lines = physical_lines(text)
        self.entries = []
        self.section_ends = {}  # section -> index of its last non-blank physical line
        section, index = None, 0
        while index < len(self.lines):
            raw = self.lines[index].rstrip('\r\n')
            stripped = raw.strip(WHITESPACE)
            if stripped.startswith('[') and stripped.endswith(']'):
                section = stripped[1:-1]
                self.section_ends[section] = index
                index += 1
                continue
            if not stripped or stripped[0] in '#;':
                index += 1
                continue
            first = index
            logical = raw
            # An unescaped trailing backslash continues the line (a space in its place); comment lines
            # inside a continuation are skipped (config_parse, src/shared/conf-parser.c, 252.39 l.328-420).
            while _ends_escaped(logical):
                logical = logical[:-1] + ' '
                following = None
                while following is None and index + 1 < len(self.lines):
                    index += 1
                    line = self.lines[index].rstrip('\r\n')
                    if line.lstrip(WHITESPACE)[:1] not in ('#', ';'):
                        following = line
                if following is None:
                    break
                logical += following
            logical = logical.strip(WHITESPACE)
            if '=' in logical:
                key, value = logical.split('=', 1)
                self.entries.append(Entry(section, key.strip(WHITESPACE), value.strip(WHITESPACE), first, index))
            if section is not None:
                self.section_ends[section] = index
            index += 1

    def get(self, section, key):
        values = [e for e in self.entries if e.section == section and e.key == key]
        return values[-1] if values else None


def line_ending(text):
    return '\r\n' if '\r\n' in text else '\n'


_ESCAPES = {'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\', '"': '"',
            "'": "'", 's': ' '}


def split_words(text):
    """The words of a command line as systemd splits ExecStart= (and Quadlet its Exec=, PodmanArgs=):
    whitespace separates, single and double quotes group, C escapes (\\n, \\t, \\xNN, \\uNNNN, octal)
    apply in and out of quotes. ValueError on an unbalanced quote or a broken escape, which systemd refuses."""
    words, word, quote, index, started = [], [], None, 0, False
    while index < len(text):
        char = text[index]
        if char == '\\':
            if index + 1 >= len(text):
                raise ValueError('a trailing backslash escapes nothing')
            consumed, value = _unescape(text, index + 1)
            word.append(value)
            index += 1 + consumed
            started = True
            continue
        if quote:
            if char == quote:
                quote = None
            else:
                word.append(char)
        elif char in '"\'':
            quote, started = char, True
        elif char.isspace():
            if started:
                words.append(''.join(word))
            word, started = [], False
        else:
            word.append(char)
            started = True
        index += 1
    if quote:
        raise ValueError('unbalanced %s quote' % quote)
    if started:
        words.append(''.join(word))
    return words


def _unescape(text, index):
    """(characters consumed, the character) for the escape starting at text[index]; an escape C does
    not know stands for the character itself, as a POSIX shell reads it."""
    char = text[index]
    try:
        if char in _ESCAPES:
            return 1, _ESCAPES[char]
        if char == 'x':
            return 3, chr(int(text[index + 1:index + 3], 16))
        if char in 'uU':
            width = 4 if char == 'u' else 8
            return 1 + width, chr(int(text[index + 1:index + 1 + width], 16))
        if char in '01234567':
            return 3, chr(int(text[index:index + 3], 8))
    except ValueError:
        raise ValueError('invalid escape \\%s' % char)
    return 1, char


def split_command(value):
    """(prefix, argv) of an ExecStart value, split as systemd splits it."""
    prefix = ''
    while value and value[0] in EXEC_PREFIX_CHARS:
        prefix += value[0]
        value = value[1:]
    return prefix, split_words(value)


def join_command(prefix, argv):
    return prefix + ' '.join(quote(arg) for arg in argv)


def quote(arg):
    """Quote one argument for a unit file; systemd specifiers and $VARIABLEs stay readable."""
    if arg and all(c.isalnum() or c in '-_./:=,%$@+{}' for c in arg):
        return arg
    if "'" not in arg:
        return "'%s'" % arg
    return '"%s"' % arg.replace('\\', '\\\\').replace('"', '\\"')


def replace_entry(lines, entry, new_line, ending):
    """Replace the physical lines of ``entry`` by one line (keeps the list length meaningful)."""
    return lines[:entry.first] + [new_line + ending] + lines[entry.last + 1:]


def set_key(text, section, key, value):
    """Set ``key=value`` in ``section``: replace the last such line, or add it at the end of the section."""
    unit = UnitFile(text)
    ending = line_ending(text)
    existing = unit.get(section, key)
    if existing is not None:
        if existing.value == value:
            return text
        return ''.join(replace_entry(unit.lines, existing, '%s=%s' % (key, value), ending))
    lines = list(unit.lines)
    if section in unit.section_ends:
        at = unit.section_ends[section] + 1
        if lines[at - 1] and not lines[at - 1].endswith(('\n', '\r')):
            lines[at - 1] += ending
        lines.insert(at, '%s=%s%s' % (key, value, ending))
    else:
        if lines and not lines[-1].endswith(('\n', '\r')):
            lines[-1] += ending
        lines += ['%s[%s]%s' % (ending if lines else '', section, ending), '%s=%s%s' % (key, value, ending)]
    return ''.join(lines)
