# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""JMESPath for declared checks, bounded: compiled and checked before any host is contacted,
evaluated on the controller over what a host answered, which is untrusted data.

JMESPath has no time or size limit of its own, and a short expression can make a lot of work:
``[@,@,@,@][]`` four times over multiplies a list by 256, ``==`` between two structures built that
way compares every path, ``to_string``/``join`` build strings of any size. So every evaluation gets
a Limits: a number of steps (each node visited, and the size of what a function or a flatten walks,
charged before it is walked), a deadline checked at every step, and the size of each result (values
counted along every path, so a structure that shares itself is counted as it would be written).
Equality is our own, iterative and charged per value compared; ``contains``, ``join`` and
``to_string`` likewise. Any failure is a JudgeFailure with one line for the finding, never the
value that caused it (a message that prints a 100 MB value would be the next problem).

The functions JMESPath lacks that these checks need (docs/declared_checks.md, "Functions"): ages
and time stamps, time spans, versions, splitting text, a mapping's entries.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import datetime
import difflib
import json
import math
import re
import time

from ansible_collections.homelab.postmortem.plugins.module_utils.hostio import version_tuple

try:
    import jmespath
    from jmespath import exceptions as jmespath_errors
    from jmespath import functions as jmespath_functions
    from jmespath import visitor as jmespath_visitor
except ImportError:
    # A controller without it: declared_checks.load says so before any host is contacted, and only a run
    # with check files needs it. Nothing below is used then.
    jmespath = None
    _FUNCTIONS_BASE = _INTERPRETER_BASE = object

    def signature(*_arguments):
        return lambda function: function
else:
    _FUNCTIONS_BASE = jmespath_functions.Functions
    _INTERPRETER_BASE = jmespath_visitor.TreeInterpreter
    signature = jmespath_functions.signature

MAX_EXPRESSION = 2000
# Per check and host: every expression of one check's judge shares these.
MAX_STEPS = 1000000
MAX_SECONDS = 2.0
# One expression's result, counted along every path: values, and characters of text.
MAX_RESULT_VALUES = 100000
MAX_RESULT_CHARS = 1024 * 1024
MAX_STRING = 1024 * 1024


class JudgeFailure(Exception):
    """An expression could not be evaluated on this host's answers; the message is one line."""


class Limits(object):
    """What one check's judge may spend on one host: steps and a deadline."""

    def __init__(self, steps=MAX_STEPS, seconds=MAX_SECONDS):
        self.steps = steps
        self.max_steps = steps
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def charge(self, count):
        self.steps -= count
        if self.steps < 0:
            raise JudgeFailure('stopped after %d evaluation steps (the judge\'s bound per check and host)' % self.max_steps)
        if time.monotonic() > self.deadline:
            raise JudgeFailure('stopped after %s s of evaluation (the judge\'s bound per check and host)' % self.seconds)


def _size(value):
    """The steps walking ``value`` once costs: a value per element; text is walked in C, 64 characters a step."""
    if isinstance(value, str):
        return 1 + len(value) // 64
    return len(value) if isinstance(value, (list, dict)) else 1


def equal(left, right, limits):
    """JMESPath's equality (1 is not true), iterative and charged per value compared."""
    pending = [(left, right)]
    while pending:
        x, y = pending.pop()
        limits.charge(1)
        if x is y:
            continue
        if isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, dict):
            if not isinstance(y, dict) or len(x) != len(y):
                return False
            limits.charge(len(x))
            if any(key not in y for key in x):
                return False
            pending.extend((x[key], y[key]) for key in x)
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            pending.extend(zip(x, y))
        elif isinstance(y, (dict, list)) or x != y:
            return False
    return True


def measure(value, what, max_values=MAX_RESULT_VALUES, max_chars=MAX_RESULT_CHARS, finite=False):
    """Raise JudgeFailure when ``value``, written out, holds more than ``max_values`` values or
    ``max_chars`` characters of text (every path counted: shared parts count each time); with ``finite``,
    also when it holds a number that is not finite (NaN or an infinity: no gatherer of ours sends one, and
    NaN makes every comparison false, so a lying host's NaN would read as ok, #49)."""
    pending, values, chars = [value], 0, 0
    while pending:
        item = pending.pop()
        values += 1
        if values > max_values:
            raise JudgeFailure('%s gave a result of more than %d values' % (what, max_values))
        if finite and isinstance(item, float) and not math.isfinite(item):
            raise JudgeFailure('%s hold a number that is not finite (%r): a host never measures one' % (what, item))
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            chars += sum(len(k) for k in item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        if chars > max_chars:
            raise JudgeFailure('%s gave a result of more than %d characters' % (what, max_chars))


# -- time, spans, versions -----------------------------------------------------------------------

_SYSTEMD_STAMP = re.compile(r'^(?:[A-Z][a-z]{2} )?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?: (UTC|GMT|Z))?$')
_ISO_STAMP = re.compile(r'^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?'
                        r'(Z|[+-]\d{2}:?\d{2})?$')
_SPAN_UNITS = (('usec', 1e-6), ('us', 1e-6), ('msec', 1e-3), ('ms', 1e-3), ('seconds', 1), ('second', 1), ('sec', 1),
               ('s', 1), ('minutes', 60), ('minute', 60), ('min', 60), ('m', 60), ('hours', 3600), ('hour', 3600),
               ('hr', 3600), ('h', 3600), ('days', 86400), ('day', 86400), ('d', 86400), ('weeks', 604800),
               ('week', 604800), ('w', 604800), ('months', 2629800), ('month', 2629800), ('M', 2629800),
               ('years', 31557600), ('year', 31557600), ('y', 31557600))
_SPAN_PART = re.compile(r'(\d+(?:\.\d+)?)\s*(%s)?' % '|'.join(re.escape(u) for u, _s in _SPAN_UNITS))
_SPAN_SECONDS = dict(_SPAN_UNITS)


def epoch(value):
    """Seconds since 1970 (UTC) of a time stamp: a number; '@1733022000' (systemd --timestamp=unix);
    'Mon 2026-12-01 03:00:00 UTC' (systemctl show, which the host runs with TZ=UTC); ISO 8601 with Z,
    an offset or none (UTC). None for '', 'n/a', 0 and anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) if value > 0 else None
    text = value.strip()
    if len(text) > 64 or not text or text in ('n/a', '0'):
        return None
    if text.startswith('@'):
        try:
            number = float(text[1:])
        except ValueError:
            return None
        return number if number > 0 else None
    match = _SYSTEMD_STAMP.match(text)
    try:
        if match:
            parts = [int(p) for p in match.groups()[:6]]
            return float(calendar.timegm(datetime.datetime(*parts).timetuple()))
        match = _ISO_STAMP.match(text)
        if not match:
            return None
        year, month, day, hour, minute, second, fraction, zone = match.groups()
        moment = datetime.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
        seconds = calendar.timegm(moment.timetuple()) + (float('0.' + fraction) if fraction else 0.0)
    except (ValueError, OverflowError):
        return None
    if zone and zone != 'Z':
        sign = -1 if zone[0] == '-' else 1
        digits = zone[1:].replace(':', '')
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return float(seconds)


def span_seconds(value):
    """Seconds of a time span: a number, or systemd's words ('1d 2h', '90min', '26h', '500ms',
    '1w'); None for 'infinity' and anything that is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = value.strip()
    if not text or len(text) > 100:
        return None
    total, position = 0.0, 0
    for match in _SPAN_PART.finditer(text):
        if text[position:match.start()].strip():
            return None
        total += float(match.group(1)) * _SPAN_SECONDS[match.group(2) or 's']
        position = match.end()
    return total if position and not text[position:].strip() else None


def duration_text(seconds):
    """'3d 2h', '26h 5min', '90s': a number of seconds for a person."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return None
    sign = '-' if seconds < 0 else ''
    left = int(abs(seconds))
    parts = []
    for unit, size in (('d', 86400), ('h', 3600), ('min', 60), ('s', 1)):
        if left >= size or (unit == 's' and not parts):
            parts.append('%d%s' % (left // size, unit))
            left %= size
        if len(parts) == 2:
            break
    return sign + ' '.join(parts)


def compare_versions(left, right):
    """-1, 0 or 1 (shorter versions padded with zeros: 6.18 == 6.18.0); None when either is not one."""
    parsed = []
    for value in (left, right):
        if isinstance(value, bool) or value is None:
            return None
        version = version_tuple(str(value))
        if version is None:
            return None
        parsed.append(version)
    width = max(len(parsed[0]), len(parsed[1]))
    a, b = (tuple(v) + (0,) * (width - len(v)) for v in parsed)
    return (a > b) - (a < b)


# -- the functions ---------------------------------------------------------------------------------

class Functions(_FUNCTIONS_BASE):
    """JMESPath's functions, charged and bounded, and the ones declared checks add. ``now``: the
    host's clock when it answered (ages are measured on the host's own clock, as its time stamps)."""

    def __init__(self, limits, now):
        self.limits = limits
        self.now = now

    def call_function(self, function_name, resolved_args):
        # What a function walks (sort, join, keys, reverse ...) is charged before it is walked.
        self.limits.charge(1 + sum(_size(arg) for arg in resolved_args))
        return super(Functions, self).call_function(function_name, resolved_args)

    @signature({'types': ['array', 'string']}, {'types': []})
    def _func_contains(self, subject, search):
        if isinstance(subject, str):
            return isinstance(search, str) and search in subject
        return any(equal(item, search, self.limits) for item in subject)

    @signature({'types': ['string']}, {'types': ['array-string']})
    def _func_join(self, separator, array):
        if sum(len(s) for s in array) + len(separator) * len(array) > MAX_STRING:
            raise JudgeFailure('join() would build a text of more than %d characters' % MAX_STRING)
        return separator.join(array)

    @signature({'types': []})
    def _func_to_string(self, arg):
        if isinstance(arg, str):
            return arg
        measure(arg, 'to_string()', max_chars=MAX_STRING)
        return json.dumps(arg, separators=(',', ':'))

    @signature()
    def _func_now(self):
        return self.now

    @signature({'types': ['string', 'number', 'null']})
    def _func_epoch(self, value):
        return epoch(value)

    @signature({'types': ['string', 'number', 'null']})
    def _func_age(self, value):
        moment = epoch(value)
        return None if moment is None or self.now is None else self.now - moment

    @signature({'types': ['string', 'number', 'null']}, {'types': ['string', 'number', 'null']})
    def _func_elapsed(self, start, end):
        first, last = epoch(start), epoch(end)
        return None if first is None or last is None else last - first

    @signature({'types': ['string', 'number', 'null']})
    def _func_seconds(self, value):
        return span_seconds(value)

    @signature({'types': ['number', 'null']})
    def _func_duration(self, value):
        return duration_text(value)

    @signature({'types': ['string', 'number', 'null']}, {'types': ['string', 'number', 'null']})
    def _func_version_compare(self, left, right):
        return compare_versions(left, right)

    @signature({'types': ['string']}, {'types': ['string']})
    def _func_split(self, text, separator):
        if not separator:
            raise JudgeFailure('split() needs a separator that is not empty')
        return text.split(separator)

    @signature({'types': ['string']})
    def _func_words(self, text):
        return text.split()

    @signature({'types': ['object']})
    def _func_items(self, value):
        return [{'key': key, 'value': item} for key, item in value.items()]


FUNCTIONS = dict((name, spec['signature']) for name, spec in getattr(Functions, 'FUNCTION_TABLE', {}).items())


class Interpreter(_INTERPRETER_BASE):
    """jmespath's tree interpreter with every step charged to ``limits``."""

    def __init__(self, limits, now):
        super(Interpreter, self).__init__(jmespath_visitor.Options(custom_functions=Functions(limits, now)))
        self.limits = limits

    def visit(self, node, *args, **kwargs):
        self.limits.charge(1)
        return super(Interpreter, self).visit(node, *args, **kwargs)

    def visit_comparator(self, node, value):
        if node['value'] not in ('eq', 'ne'):
            return super(Interpreter, self).visit_comparator(node, value)
        same = equal(self.visit(node['children'][0], value), self.visit(node['children'][1], value), self.limits)
        return same if node['value'] == 'eq' else not same

    def visit_flatten(self, node, value):
        base = self.visit(node['children'][0], value)
        if not isinstance(base, list):
            return None
        self.limits.charge(sum(len(e) if isinstance(e, list) else 1 for e in base))
        merged = []
        for element in base:
            if isinstance(element, list):
                merged.extend(element)
            else:
                merged.append(element)
        return merged

    def visit_slice(self, node, value):
        self.limits.charge(_size(value))
        return super(Interpreter, self).visit_slice(node, value)


# -- compiling --------------------------------------------------------------------------------------

class Compiled(object):
    """A checked expression: its text and its tree."""

    def __init__(self, text, tree):
        self.text = text
        self.tree = tree


def _one_line(text, limit=200):
    return ' '.join(str(text).split())[:limit]


def _walk(node, rooted, found):
    """Collect (function name, argument count) and the fields read from the context the expression
    starts on (``rooted``): {'functions': [...], 'roots': [...]}."""
    kind = node.get('type')
    children = [c for c in node.get('children', []) if isinstance(c, dict)]
    if kind == 'function_expression':
        found['functions'].append((node['value'], len(children)))
    if kind == 'field' and rooted:
        found['roots'].append(node['value'])
    if kind in ('subexpression', 'index_expression', 'projection') and children and children[0].get('type') == 'not_expression':
        found['negated'] = True
    if kind in ('subexpression', 'index_expression', 'pipe', 'projection', 'value_projection', 'filter_projection',
                'flatten'):
        for position, child in enumerate(children):
            _walk(child, rooted and position == 0, found)
    elif kind == 'expref':
        for child in children:
            _walk(child, False, found)
    else:
        for child in children:
            _walk(child, rooted, found)


def compile_expression(text, names):
    """(Compiled, None) or (None, why): the expression parses, is at most MAX_EXPRESSION characters,
    calls only functions that exist with their number of arguments, and every name it reads from the
    context is one of ``names`` (the check's questions and the judge's own: now, host, item; None: any)."""
    if not isinstance(text, str) or not text.strip():
        return None, 'must be a JMESPath expression (text), got %s' % ('nothing' if text in (None, '') else type(text).__name__)
    if len(text) > MAX_EXPRESSION:
        return None, 'is %d characters long, at most %d' % (len(text), MAX_EXPRESSION)
    try:
        parsed = jmespath.compile(text)
    except jmespath_errors.JMESPathError as exc:
        where = getattr(exc, 'lex_position', None)
        return None, 'is not a JMESPath expression: %s%s' % (
            _one_line(getattr(exc, 'msg', None) or str(exc).splitlines()[0]),
            (' at column %d' % where) if isinstance(where, int) else '')
    except (RecursionError, ValueError, TypeError) as exc:
        return None, 'is not a JMESPath expression: %s' % _one_line(exc)
    found = {'functions': [], 'roots': []}
    try:
        _walk(parsed.parsed, True, found)
    except RecursionError:
        return None, 'nests too deeply'
    if found.get('negated'):
        # JMESPath binds ! tighter than . and []: !a.b is (!a).b, always null. Upstream's parser, not ours.
        return None, 'negates before it reads a field: JMESPath reads !a.b as (!a).b (always null); write !(a.b)'
    for name, count in found['functions']:
        if name not in FUNCTIONS:
            close = difflib.get_close_matches(name, sorted(FUNCTIONS), n=1, cutoff=0.6)
            return None, 'calls %s(), which is not a function%s' % (name, (' (did you mean %s()?)' % close[0]) if close else '')
        wanted = FUNCTIONS[name]
        variadic = bool(wanted) and wanted[-1].get('variadic')
        if (count < len(wanted)) if variadic else (count != len(wanted)):
            return None, 'calls %s() with %d argument(s); it takes %s%d' % (
                name, count, 'at least ' if variadic else '', len(wanted))
    for root in found['roots'] if names is not None else ():
        if root in ('null', 'true', 'false') and root not in names:
            return None, 'reads a field named %s: JMESPath writes the value as `%s`, in backquotes' % (root, root)
        if root not in names:
            close = difflib.get_close_matches(root, sorted(names), n=1, cutoff=0.6)
            return None, 'reads %s, which is not a question of this check%s; it can read %s' % (
                root, (' (did you mean %s?)' % close[0]) if close else '', ', '.join(sorted(names)))
    return Compiled(text, parsed.parsed), None


def evaluate(compiled, data, limits, now, what):
    """The value of ``compiled`` on ``data``, bounded; JudgeFailure naming ``what`` otherwise."""
    try:
        result = Interpreter(limits, now).visit(compiled.tree, data)
    except JudgeFailure as exc:
        raise JudgeFailure('%s: %s' % (what, exc))
    except jmespath_errors.JMESPathTypeError as exc:
        # Its own message prints the value, which can be anything a host sent: named by type only.
        raise JudgeFailure('%s: %s() was given %s, it takes %s' % (
            what, exc.function_name, exc.actual_type, ' or '.join(str(t) for t in exc.expected_types)))
    except jmespath_errors.JMESPathError as exc:
        raise JudgeFailure('%s: %s' % (what, _one_line(type(exc).__name__)))
    except RecursionError:
        raise JudgeFailure('%s: the data is nested too deeply to evaluate' % what)
    except (ValueError, TypeError, ArithmeticError, MemoryError) as exc:
        raise JudgeFailure('%s: %s' % (what, type(exc).__name__))
    measure(result, what)
    return result
