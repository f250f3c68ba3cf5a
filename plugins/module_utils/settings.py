# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Typed per-detection settings.

Each detection's ``SETTINGS`` is an argument spec: for every key its ``type``
(str, version, int, float, bool, list), ``default``, ``description`` and,
where they apply, ``choices``, ``elements`` (lists), ``min``/``max`` (numbers)
and ``nullable`` (None allowed; implied by a None default). ``validate`` checks
every detection's settings before any detection runs, converts them, and fails
once with a message that names the detection, the key, the expected type and
the known keys. Detections read only validated values (``ctx.settings_for``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible.module_utils.parsing.convert_bool import BOOLEANS_FALSE, BOOLEANS_TRUE

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import SettingsError

MAX_TEXT = 4096
MAX_LIST = 1000
# ASCII digits only, bounded: a version setting is compared with versions read from hosts.
_VERSION_RE = re.compile(r'^[0-9]{1,9}(\.[0-9]{1,9}){0,5}([-+~][0-9A-Za-z.+~-]{0,40})?$')
_INT_RE = re.compile(r'^[-+]?[0-9]{1,18}$')
# Every number a setting holds is bounded: the contract test (tests/unit/helpers/settings_spec.py) requires min and max of
# every int and float spec, and whatever a spec says no magnitude above 2**53 passes (floats
# stop being exact there; a timeout of 10**10 s already breaks select() and socket timeouts,
# 1e400 is inf, a huge int cannot even be printed on Python 3.11).
MAX_MAGNITUDE = 2 ** 53


class _Invalid(Exception):
    pass


def describe_type(entry):
    text = entry['type']
    if entry['type'] == 'list':
        text = 'list of %s' % entry.get('elements', 'str')
    if entry.get('choices'):
        text += ' (one of %s)' % ', '.join(str(c) for c in entry['choices'])
    if entry.get('min') is not None or entry.get('max') is not None:
        text += ' (%s to %s)' % (entry.get('min', '-inf'), entry.get('max', 'inf'))
    if _nullable(entry):
        text += ' or null'
    return text


def _nullable(entry):
    return bool(entry.get('nullable')) or entry.get('default') is None


def _scalar(kind, value, entry):
    if isinstance(value, (dict, list, tuple, set)):
        raise _Invalid('got a %s' % type(value).__name__)
    if kind == 'bool':
        if isinstance(value, bool):
            return value
        lowered = value.lower() if isinstance(value, str) else value
        if lowered in BOOLEANS_TRUE:
            return True
        if lowered in BOOLEANS_FALSE:
            return False
        raise _Invalid('%s is not a boolean' % _shown(value))
    if isinstance(value, bool):
        raise _Invalid('got a boolean')
    if kind == 'int':
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and _INT_RE.match(value.strip()):
            value = int(value.strip())
        if not isinstance(value, int):
            raise _Invalid('%s is not a whole number' % _shown(value))
        if abs(value) > MAX_MAGNITUDE:
            raise _Invalid('a whole number of %d bits is too large (at most 2**53)' % value.bit_length())
        return _bounded(value, entry)
    if kind == 'float':
        if isinstance(value, str):
            try:
                value = float(value.strip()) if value.strip().isascii() else None
            except ValueError:
                value = None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value is None:
            raise _Invalid('%s is not a number' % _shown(value))
        if isinstance(value, int) and abs(value) > MAX_MAGNITUDE:
            raise _Invalid('a number of %d bits is too large (at most 2**53)' % value.bit_length())
        if math.isnan(value) or math.isinf(value):
            raise _Invalid('%s is not a finite number' % _shown(value))
        if abs(value) > MAX_MAGNITUDE:
            raise _Invalid('%s is too large (at most 2**53)' % _shown(value))
        return _bounded(float(value), entry)
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        raise _Invalid('got a %s' % type(value).__name__)
    if len(value) > MAX_TEXT:
        raise _Invalid('longer than %d characters' % MAX_TEXT)
    if kind == 'version':
        value = value.strip().lstrip('vV')
        if not _VERSION_RE.match(value):
            raise _Invalid('%r is not a version (ASCII digits and dots, like 6.18.60)' % (value[:40],))
    return value


def _shown(value):
    """A value for a message, at most about 40 characters (a setting may hold 5,000 digits)."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else 'a number of %d bits' % value.bit_length()
    return text if len(text) <= 40 else text[:37] + '...'


def _bounded(value, entry):
    if entry.get('min') is not None and value < entry['min']:
        raise _Invalid('%r is below the minimum %s' % (value, entry['min']))
    if entry.get('max') is not None and value > entry['max']:
        raise _Invalid('%r is above the maximum %s' % (value, entry['max']))
    return value


def convert(entry, value):
    """The value in its canonical type, or _Invalid with the reason."""
    if value is None:
        if _nullable(entry):
            return None
        raise _Invalid('null is not allowed')
    if entry['type'] == 'list':
        if isinstance(value, str):
            # One path or name, not a list of its characters.
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise _Invalid('got a %s' % type(value).__name__)
        if len(value) > MAX_LIST:
            raise _Invalid('more than %d entries' % MAX_LIST)
        return [_scalar(entry.get('elements', 'str'), item, entry) for item in value]
    result = _scalar(entry['type'], value, entry)
    if entry.get('choices') and result not in entry['choices']:
        raise _Invalid('%s is not one of %s' % (_shown(result), ', '.join(str(c) for c in entry['choices'])))
    return result


def known_keys(spec):
    return ', '.join('%s (%s)' % (key, describe_type(entry)) for key, entry in sorted(spec.items())) or 'none'


def validate(settings, detections_by_id):
    """{id: {key: converted value}} for the given settings; SettingsError on the first problem."""
    if settings is None:
        return {}
    if not isinstance(settings, dict):
        raise SettingsError('settings must be a dict keyed by detection id, got a %s' % type(settings).__name__)
    validated = {}
    for check_id, values in settings.items():
        detection = detections_by_id.get(check_id)
        if detection is None:
            raise SettingsError('settings for unknown check %r; known checks: %s'
                                % (check_id, ', '.join(detections_by_id)))
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise SettingsError('settings.%s must be a dict, got a %s' % (check_id, type(values).__name__))
        spec = detection.SETTINGS
        unknown = sorted(str(k) for k in values if k not in spec)
        if unknown:
            raise SettingsError('unknown setting(s) for %s: %s; known settings of %s: %s'
                                % (check_id, ', '.join(unknown), check_id, known_keys(spec)))
        converted = {}
        for key, value in values.items():
            try:
                converted[key] = convert(spec[key], value)
            except _Invalid as exc:
                raise SettingsError('settings.%s.%s: expected %s: %s; known settings of %s: %s'
                                    % (check_id, key, describe_type(spec[key]), exc, check_id, known_keys(spec)))
        validated[check_id] = converted
    return validated
