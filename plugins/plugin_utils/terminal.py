# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text for the operator's terminal: whatever a host wrote stays visible text, never a command to it.

A host's summary, a check id or a history file's time stamp may hold escape sequences (clear the
screen, set the window title, move the cursor), a newline that starts a forged line, or Unicode's
direction overrides that show text in another order than it is. Every line the collection prints
goes through visible(): such characters are shown as Python shows them (``\\x1b``, ``\\n``,
``\\u202e``). The report files keep the original text; their formats escape it themselves.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# C0 controls (tab and newline included: a printed line is one line), DEL, C1 controls (0x9b is a
# CSI on terminals that honour 8-bit controls), and the format characters that reorder or hide text:
# bidirectional embeddings, overrides and isolates, marks, zero-width joiners and the byte order mark;
# lone surrogates (undecodable bytes Python kept) could not even be written to the terminal.
_INVISIBLE = re.compile(u'[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ud800-\udfff\ufeff]')


def _escape(match):
    char = match.group(0)
    code = ord(char)
    if char == '\n':
        return '\\n'
    if char == '\r':
        return '\\r'
    if char == '\t':
        return '\\t'
    return ('\\x%02x' % code) if code < 0x100 else ('\\u%04x' % code)


def visible(text):
    """``text`` with every control or direction character replaced by its visible escape."""
    if not isinstance(text, str):
        text = str(text)
    return _INVISIBLE.sub(_escape, text)


def visible_lines(lines):
    """Each line made visible on its own, so that no line can contain another."""
    return [visible(line) for line in lines]
