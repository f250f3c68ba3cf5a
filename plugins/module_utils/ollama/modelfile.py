# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Modelfile read the way Ollama's own parser reads it (ollama/ollama parser/parser.go @ v0.33.0-rc2).

/api/show's ``modelfile`` is Model.String(): each command written by Command.String(), its value through
parser.quote - bare, in "..." or in \"\"\"...\"\"\" (l.408-423, l.644-654). Reading it back is ParseFile
(l.454-582) with parseRuneForState (l.584-642) and unquote (l.656-674): a value runs to the end of its
line once it unquotes, so a quoted value may span lines; leading and trailing spaces around it are
trimmed before unquoting; runes strconv.IsPrint refuses are dropped. Which quoting a value was written
with says nothing: unquote reads all three. The cases of upstream's parser_test.go (TestParseFileQuoted,
TestParseFileTrimSpace, ...) are this reader's tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import unicodedata

# isValidCommand (l.704-711).
COMMANDS = ('from', 'license', 'template', 'system', 'adapter', 'draft', 'renderer', 'parser', 'parameter',
            'message', 'requires')
ROLES = ('system', 'user', 'assistant')

_NIL, _NAME, _VALUE, _PARAMETER, _MESSAGE, _COMMENT = range(6)


class ModelfileError(ValueError):
    """ParseFile would fail on this text: the reason, as upstream words it."""


def _alpha(r):
    return 'a' <= r <= 'z' or 'A' <= r <= 'Z'


def _space(r):
    return r in (' ', '\t')


def _newline(r):
    return r in ('\r', '\n')


def _printable(r):
    """strconv.IsPrint: letters, marks, numbers, punctuation, symbols, and the ASCII space."""
    return r == ' ' or unicodedata.category(r)[0] in 'LMNPS'


def unquote(text):
    """parser.unquote (l.656-674): (value, ok) for \"\"\"...\"\"\", "..." or bare text."""
    if text[:3] == '"""':
        if len(text) >= 6 and text[-3:] == '"""':
            return text[3:-3], True
        return '', False
    if text[:1] == '"':
        if len(text) >= 2 and text[-1] == '"':
            return text[1:-1], True
        return '', False
    return text, True


def _next_state(r, state):
    """parseRuneForState (l.584-642): (next state, rune kept or '', error or None)."""
    if state == _NIL:
        if r == '#':
            return _COMMENT, '', None
        if _space(r) or _newline(r):
            return _NIL, '', None
        return _NAME, r, None
    if state == _NAME:
        if _alpha(r):
            return _NAME, r, None
        if _space(r):
            return _VALUE, '', None
        return _NIL, '', 'invalid command'
    if state == _VALUE:
        if _newline(r) or _space(r):
            return _NIL, r, None
        return _VALUE, r, None
    if state == _PARAMETER:
        if _alpha(r) or '0' <= r <= '9' or r == '_':
            return _PARAMETER, r, None
        if _space(r):
            return _VALUE, '', None
        return _NIL, '', 'unexpected EOF'
    if state == _MESSAGE:
        if _alpha(r):
            return _MESSAGE, r, None
        if _space(r):
            return _VALUE, '', None
        return _NIL, '', 'unexpected EOF'
    if _newline(r):
        return _NIL, '', None
    return _COMMENT, '', None


def parse(text):
    """[(command name, value)] in order, as ParseFile gives them ("model" for FROM, the parameter's own name
    for PARAMETER, "role: text" for MESSAGE). Raises ModelfileError where ParseFile returns an error."""
    commands = []
    name, role, state, line = None, '', _NIL, 1
    buffer = []
    if text.startswith(u'\ufeff'):
        text = text[1:]   # unicode.BOMOverride
    for r in text:
        if _newline(r):
            line += 1
        following, kept, error = _next_state(r, state)
        if error == 'unexpected EOF':
            raise ModelfileError('unexpected EOF: %s' % ''.join(buffer))
        if error:
            raise ModelfileError('(line %d): %s' % (line, error))
        if following != state:
            word = ''.join(buffer)
            if state == _NAME:
                if word.lower() not in COMMANDS:
                    raise ModelfileError('(line %d): invalid command %r' % (line, word))
                lowered = word.lower()
                if lowered == 'from':
                    name = 'model'
                elif lowered == 'parameter':
                    following = _PARAMETER
                elif lowered == 'message':
                    following = _MESSAGE
                    name = lowered
                else:
                    name = lowered
            elif state == _PARAMETER:
                name = word
            elif state == _MESSAGE:
                if word not in ROLES:
                    raise ModelfileError('(line %d): message role must be one of "system", "user", or "assistant"'
                                         % line)
                role = word
            elif state == _VALUE:
                value, ok = unquote(word.strip())
                if not ok or _space(kept):
                    buffer.append(kept)
                    continue
                if role:
                    value, role = role + ': ' + value, ''
                commands.append((name, value))
            buffer = []
            state = following
        if kept and _printable(kept):
            buffer.append(kept)
    if state == _VALUE:
        value, ok = unquote(''.join(buffer).strip())
        if not ok:
            raise ModelfileError('unexpected EOF: %s' % ''.join(buffer))
        commands.append((name, role + ': ' + value if role else value))
    elif state not in (_NIL, _COMMENT):
        raise ModelfileError('unexpected EOF: %s' % ''.join(buffer))
    if not any(command == 'model' for command, _value in commands):
        raise ModelfileError('no FROM line')
    return commands


def last(commands, name):
    """The value of the last ``name`` command, or None."""
    found = None
    for command, value in commands:
        if command == name:
            found = value
    return found
