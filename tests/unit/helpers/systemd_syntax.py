"""A unit file read as systemd reads it, for tests that must see exactly the settings systemd would.

An injected line is valid unit syntax (systemd-analyze verify accepts it), so a test of a template
compares the settings systemd would read with the ones the template means to write. This follows
systemd 252 (Debian 12, the oldest systemd the roles run on), read in Debian's source package
systemd-stable 252.39:

- src/basic/fileio.c:1263-1371 read_line_full, :1246-1259 categorize_eol: a line ends at \\n, \\r or
  \\0, and one of each in a row (\\r\\n, \\n\\r, \\r\\n\\0 ...) is one end;
- src/shared/conf-parser.c:328-420 config_parse: a line whose first non-blank character is # or ; is
  skipped, inside a continuation too; a line ending in an unescaped backslash continues on the next,
  the backslash becoming a space;
- src/shared/conf-parser.c:168-273 parse_line: the line is stripped of " \\t\\n\\r"; [name] opens a
  section (string_is_safe: no control characters, quotes or backslashes in it); key=value, both
  stripped; anything else is warned about and ignored.

The project's own reader (plugins/module_utils/systemd_unit.UnitFile) reads text the bounded reads
accepted (no NUL); tests/unit/plugins/module_utils/test_systemd_unit.py holds it to this one.
"""

WHITESPACE = b' \t\n\r'
COMMENTS = b'#;'
EOL = {0x00: 1, 0x0a: 2, 0x0d: 4}


def read_lines(data):
    """The lines of ``data`` (bytes) as read_line_full returns them, without their ends."""
    lines, index = [], 0
    while index < len(data):
        line, seen = bytearray(), 0
        while index < len(data):
            byte = data[index]
            eol = EOL.get(byte, 0)
            if seen & 1 or (not eol and seen) or (eol and seen & eol):
                break
            index += 1
            if eol:
                seen |= eol
            else:
                line.append(byte)
        lines.append(bytes(line))
    return lines


def _ends_escaped(text):
    escaped = False
    for byte in text:
        escaped = not escaped if byte == 0x5c else False
    return escaped


def _string_is_safe(text):
    return not any(byte < 0x20 or byte == 0x7f or byte in b'"\'\\' for byte in text)


class Unit(object):
    """``entries``: [(section, key, value)] in order; ``notes``: what systemd would warn about or refuse."""

    def __init__(self, data, sections):
        self.entries, self.notes = [], []
        section, continuation = None, None
        for number, line in enumerate(read_lines(data), 1):
            if line.lstrip(WHITESPACE)[:1] and line.lstrip(WHITESPACE)[:1] in COMMENTS:
                continue
            text = continuation + line if continuation is not None else line
            if _ends_escaped(text):
                continuation = text[:-1] + b' '
                continue
            continuation = None
            section = self._line(number, text, section, sections)
        if continuation is not None:
            self._line('end', continuation, section, sections)

    def _line(self, number, text, section, sections):
        text = text.strip(WHITESPACE)
        if not text:
            return section
        try:
            decoded = text.decode('utf-8')
        except UnicodeDecodeError:
            self.notes.append('line %s: invalid UTF-8, ignored' % number)
            return section
        if decoded.startswith('['):
            name = decoded[1:-1]
            if not decoded.endswith(']') or not _string_is_safe(name.encode('utf-8')):
                self.notes.append('line %s: invalid section header %r: the unit fails to load' % (number, decoded))
                return section
            if name not in sections and not name.startswith('X-'):
                self.notes.append('line %s: unknown section %r, ignored' % (number, name))
                return None
            return name
        if section is None:
            self.notes.append('line %s: %r outside of a section, ignored' % (number, decoded))
            return section
        if '=' not in decoded or decoded.startswith('='):
            self.notes.append('line %s: %r is no key=value, ignored' % (number, decoded))
            return section
        key, value = decoded.split('=', 1)
        self.entries.append((section, key.strip(' \t\n\r'), value.strip(' \t\n\r')))
        return section

    def layout(self):
        """[(section, key)] in order: what the file sets, without the values."""
        return [(section, key) for section, key, _value in self.entries]

    def values(self, section, key):
        return [value for entry_section, entry_key, value in self.entries if (entry_section, entry_key) == (section, key)]

    def value(self, section, key):
        found = self.values(section, key)
        assert len(found) == 1, '%s= in [%s] is set %d times' % (key, section, len(found))
        return found[0]


def resolve_specifiers(value, specifiers=None):
    """A value with its % specifiers resolved (src/shared/specifier.c specifier_printf: %% is %, an
    unknown specifier fails). ``specifiers``: {letter: value}."""
    specifiers = specifiers or {}
    out, index = [], 0
    while index < len(value):
        char = value[index]
        if char != '%':
            out.append(char)
            index += 1
            continue
        letter = value[index + 1:index + 2]
        if letter == '%':
            out.append('%')
        elif letter in specifiers:
            out.append(specifiers[letter])
        else:
            raise ValueError('unknown specifier %%%s in %r' % (letter, value))
        index += 2
    return ''.join(out)
