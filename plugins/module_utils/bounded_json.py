# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JSON from a host, parsed within a size and a nesting bound.

``json.loads`` recurses once per nesting level: a reply ``[[[[...]]]]`` a few
thousand deep raises RecursionError (a "bug in homelab.postmortem" finding), and
a value a few hundred deep that does parse breaks whatever walks it later (the
evidence encoder, Ansible's templating on the controller). A number of a million
digits takes seconds to convert on Pythons without int's digit limit (< 3.11).
``loads`` checks all of that first, in one place, and raises JsonInputError, a
HostInputError whose message says what was wrong and where it came from.

How to call it (every component that parses something a host, a tool or a
service hands us)::

    from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json

    data = bounded_json.loads(raw_bytes_or_text, 'Ollama /api/show of gemma4')
    # a safetensors header (already read with its own length bound):
    header = bounded_json.loads(header_bytes, 'safetensors header of %s' % path, max_depth=8)
    # an adapter_config.json read with hostio.read_text:
    config = bounded_json.loads(hostio.read_text(path), path, max_depth=16)

``what`` names the source in the message ("<what> is nested deeper than 64
levels"). Bytes are decoded as UTF-8 with invalid bytes replaced (U+FFFD), so a
stray byte in a name still parses, as for podman's output. The result is plain
json: NaN and Infinity are accepted as json.loads accepts them (finding.json_safe
turns them into text before they leave the host). Callers that need their own
error type catch JsonInputError and raise theirs with ``str(exc)``. Checking the
type of each field read stays the caller's job.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import json
import re

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# Our deepest legitimate input (Docker inspect, Ollama /api/show, PEFT configs) nests under 10
# levels; 64 leaves room and keeps json.loads and everything walking the result far from
# Python's recursion limit (1000) and ansible-core's templating (it fails near 200 levels).
DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
# Longer integers are refused: 40 digits hold any count, size or id a tool prints.
MAX_INT_DIGITS = 40

# A string, closed or not (an unclosed one runs to the end: the text is not JSON anyway, and
# matching it without its closing quote keeps the scan linear instead of retrying at every quote).
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r'[^\[\]{}]+')
_STEP = {'[': 1, '{': 1, ']': -1, '}': -1}


class JsonInputError(HostInputError):
    """JSON from the host that is too large, nested too deep, or not JSON.

    The message is "<what> is <detail>"; ``kind`` is ``size``, ``depth``, ``number`` or
    ``syntax`` and ``detail`` the phrase alone, for callers that word their own message."""

    def __init__(self, what, kind, detail):
        super(JsonInputError, self).__init__('%s is %s' % (what, detail))
        self.kind = kind
        self.detail = detail


class _LongNumber(Exception):
    pass


def nesting_depth(text):
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped), without
    recursing: two regular-expression passes and a running sum, linear in the text."""
    brackets = _NOT_BRACKETS.sub('', _STRINGS.sub('', text))
    return max(itertools.accumulate(_STEP[c] for c in brackets)) if brackets else 0


def _bounded_int(digits):
    if len(digits.lstrip('-')) > MAX_INT_DIGITS:
        raise _LongNumber(len(digits.lstrip('-')))
    return int(digits)


def loads(data, what, max_depth=DEFAULT_MAX_DEPTH, max_bytes=DEFAULT_MAX_BYTES):
    """The decoded JSON value of ``data`` (bytes or text) from ``what``; JsonInputError when it is
    larger than ``max_bytes``, nested deeper than ``max_depth`` levels, or not JSON."""
    if len(data) > max_bytes:
        raise JsonInputError(what, 'size', 'larger than %d bytes' % max_bytes)
    text = data.decode('utf-8', 'replace') if isinstance(data, bytes) else data
    # Fewer opening brackets than the bound cannot nest deeper than it: most replies skip the scan.
    depth = nesting_depth(text) if text.count('[') + text.count('{') > max_depth else 0
    if depth > max_depth:
        raise JsonInputError(what, 'depth', 'nested deeper than %d levels (%d)' % (max_depth, depth))
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _LongNumber as exc:
        raise JsonInputError(what, 'number', 'JSON with a number of %s digits (at most %d)' % (exc, MAX_INT_DIGITS))
    except (ValueError, RecursionError) as exc:
        # RecursionError only when the caller is already deep in its own stack: still input we cannot use.
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise JsonInputError(what, 'syntax', 'not JSON (%s; starts with %r)' % (first, text[:80].replace('\n', ' ')))
