# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fields of parsed JSON a tool or a daemon printed (podman inspect, the Docker Engine API), read
with their kind checked where they are read: a field of the wrong kind names itself ("field
State.Pid is a string, not an integer") instead of failing later as a TypeError. Each caller puts
its source in front of the message and raises its own error type."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

KINDS = {'object': dict, 'list': list, 'string': str, 'boolean': bool}


class FieldError(Exception):
    """The message is the field's part alone: "field X is ..., not a Y"."""


def describe(value):
    """A value's JSON kind in words, for messages that name a field of the wrong type."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number (%s)' % (repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + '...')
    if isinstance(value, str):
        return 'a string'
    return 'a list' if isinstance(value, list) else 'an object' if isinstance(value, dict) else 'a %s' % type(value).__name__


def typed(data, key, kind, required=False, label=None):
    """``data[key]`` when it is of ``kind`` (object, list, string, boolean, integer); None when it
    is absent or null and not ``required``; else FieldError."""
    value = data.get(key) if isinstance(data, dict) else None
    name = label or key
    if value is None:
        if required:
            present = isinstance(data, dict) and key in data
            raise FieldError('field %s is %s' % (name, 'null' if present else 'missing'))
        return None
    if kind == 'integer':
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, KINDS[kind])
    if not ok:
        article = 'an' if kind[0] in 'aeiou' else 'a'
        raise FieldError('field %s is %s, not %s %s' % (name, describe(value), article, kind))
    return value
