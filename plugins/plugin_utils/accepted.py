# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accepted findings (``postmortem_accept``): host/check pairs someone has decided to live with.

The file is YAML, a list of entries (or a mapping with the list under ``accepted``)::

    - host: pi-livingroom          # an inventory name, or a shell pattern: pi-*
      check: pi_ir_tx              # a detection id, or a declared check's (site.backup_fresh)
      reason: the IR blaster is unplugged until the new kernel ships
      expires: 2027-03-01          # optional; from this day on the finding counts again

An accepted finding keeps its status and evidence; it is shown as accepted, does not fail the
gate, and remediate.yml leaves it alone unless ``postmortem_remediate_accepted`` is true. An
expired entry counts again and says since when. An entry that matches no host/check pair of the
run is reported, so a typo or a retired host does not silently accept nothing. The file is
checked whole: every problem of every entry is named in one run, with the entry's number and check
(a date that names no day, 2027-02-30, is said to be one, not a YAML error for the whole file).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import fnmatch
import re

import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.declared import spec

MAX_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 10000
# Every problem is found in one run; this many are named, then counted.
SHOWN_PROBLEMS = 50
KEYS = ('host', 'check', 'reason', 'expires')
_DATE_SHAPE = re.compile(r'\A\d{4}-\d{1,2}-\d{1,2}\Z')


class AcceptProblem(ValueError):
    """The accept file cannot be used; ``problems`` lists every problem found, each naming its entry."""

    def __init__(self, source, problems):
        self.problems = list(problems)
        shown = self.problems[:SHOWN_PROBLEMS]
        more = len(self.problems) - len(shown)
        super(AcceptProblem, self).__init__('%s: %s%s' % (source, '; '.join(shown), (
            '; and %d more problem(s)' % more) if more else ''))


class NotADate(object):
    """A YAML date that names no day (2027-02-30): kept as text, so its entry can be named."""

    def __init__(self, text, reason):
        self.text, self.reason = text, reason


class _Loader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """YAML's safe loader, except that a date which is not one is NotADate instead of the whole file failing."""


def _timestamp(loader, node):
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError as exc:
        return NotADate(loader.construct_scalar(node), str(exc))


_Loader.add_constructor(u'tag:yaml.org,2002:timestamp', _timestamp)


def yaml_load(text):
    return yaml.load(text, Loader=_Loader)  # nosec B506: a SafeLoader subclass


def _date(value):
    """(the date, None) or (None, why it is not one)."""
    if isinstance(value, NotADate):
        return None, 'expires %s is not a date: %s' % (value.text, value.reason)
    if isinstance(value, datetime.datetime):
        return value.date(), None
    if isinstance(value, datetime.date):
        return value, None
    try:
        return datetime.datetime.strptime(str(value).strip(), '%Y-%m-%d').date(), None
    except ValueError as exc:
        if _DATE_SHAPE.match(str(value).strip()):  # shaped like one, but no such day
            return None, 'expires %s is not a date: %s' % (str(value).strip(), exc)
        return None, 'expires must be a date (YYYY-MM-DD), got %r' % (value,)


def _known_check(check_id, known):
    """Whether an accept entry's check is one this run knows: ``known`` (the registry's ids and the run's
    declared checks), or, where the declared checks are not loaded (None), any built-in id and any id in
    the declared checks' namespace form."""
    if known is not None:
        return check_id in known
    return check_id in registry.BY_ID or bool(spec.ID_RE.match(check_id))


def _entry_problems(entry, known=None):
    """(the entry checked, or None; [its problems])."""
    if not isinstance(entry, dict):
        return None, ['expected a mapping with host, check and reason, got %s' % type(entry).__name__]
    problems = []
    unknown = sorted(str(k) for k in entry if k not in KEYS)
    if unknown:
        problems.append('unknown key(s) %s; the keys are host, check, reason, expires' % ', '.join(unknown))
    for key in ('host', 'check', 'reason'):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            problems.append('%s must be a non-empty string' % key)
    if isinstance(entry.get('check'), str) and entry['check'].strip() and not _known_check(entry['check'], known):
        problems.append('unknown check %r; known checks: %s' % (
            entry['check'], ', '.join(sorted(known) if known is not None else registry.BY_ID)))
    expires = None
    if entry.get('expires') is not None:
        expires, problem = _date(entry['expires'])
        if problem:
            problems.append(problem)
    if problems:
        return None, problems
    return {'host': entry['host'].strip(), 'check': entry['check'], 'reason': entry['reason'].strip(),
            'expires': expires.isoformat() if expires else None}, []


def parse(data, source, known=None):
    """The entries of an accept file, checked whole; raises AcceptProblem naming the file and, for
    each problem of each entry, the entry's number and check."""
    if isinstance(data, dict) and 'accepted' not in data:
        raise AcceptProblem(source, ['expected a list of entries (host, check, reason, expires), or one under "accepted"'])
    entries = data.get('accepted') if isinstance(data, dict) else data
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise AcceptProblem(source, ['expected a list of entries (host, check, reason, expires)'])
    if len(entries) > MAX_ENTRIES:
        raise AcceptProblem(source, ['%d entries, more than %d' % (len(entries), MAX_ENTRIES)])
    parsed, problems = [], []
    for number, entry in enumerate(entries, 1):
        checked, found = _entry_problems(entry, known)
        if found:
            check = entry.get('check') if isinstance(entry, dict) else None
            where = 'entry %d%s' % (number, (' (%s)' % check) if isinstance(check, str) and check.strip() else '')
            problems.extend('%s: %s' % (where, problem) for problem in found)
            continue
        checked['number'] = number
        parsed.append(checked)
    if problems:
        raise AcceptProblem(source, problems)
    return parsed


def load(path, read_bytes, known=None):
    """Entries from ``path``; ``read_bytes(path, limit)`` is the caller's bounded read; ``known``: the
    run's check ids (see _known_check)."""
    source = 'postmortem_accept %s' % path
    try:
        text = read_bytes(path, MAX_BYTES).decode('utf-8')
    except (ValueError, UnicodeDecodeError) as exc:
        raise AcceptProblem(source, ['cannot be read: %s' % exc])
    try:
        data = yaml_load(text)
    except Exception as exc:  # pylint: disable=broad-except
        # Whatever the YAML loader raises, the file is unusable; say why in one line.
        raise AcceptProblem(source, ['is not YAML: %s' % ' '.join(str(exc).split())[:200]])
    return parse(data, source, known)


def match(entries, host, check, today):
    """(the entry that accepts host/check today, or None; the expired entry that would have, or None)."""
    expired = None
    for entry in entries:
        if entry['check'] == check and fnmatch.fnmatchcase(host, entry['host']):
            if entry['expires'] and entry['expires'] <= today.isoformat():
                expired = expired or entry
                continue
            return entry, None
    return None, expired


def apply(report, entries, today):
    """Mark the report's findings accepted (or expired) and record entries that matched nothing."""
    used, expired_entries = set(), {}
    counts = {'accepted': 0, 'expired': 0}
    for host in report['hosts']:
        for cid in host['findings']:
            entry, expired = match(entries, host['name'], cid, today)
            # Beside the findings, not inside them: their JSON text is already made (report.build).
            if entry is not None:
                used.add(entry['number'])
                host.setdefault('accepted', {})[cid] = {'reason': entry['reason'], 'expires': entry['expires'],
                                                        'entry': entry['number']}
                counts['accepted'] += 1
            elif expired is not None:
                used.add(expired['number'])
                host.setdefault('acceptance_expired', {})[cid] = {'reason': expired['reason'], 'expired': expired['expires'],
                                                                  'entry': expired['number']}
                counts['expired'] += 1
                named = expired_entries.setdefault(expired['number'], dict(
                    (k, expired[k]) for k in ('number', 'host', 'check', 'expires')))
                named['findings'] = named.get('findings', 0) + 1
    unmatched = [dict((k, e[k]) for k in ('number', 'host', 'check', 'reason', 'expires'))
                 for e in entries if e['number'] not in used]
    return dict(counts, unmatched=unmatched, expired_entries=[expired_entries[n] for n in sorted(expired_entries)])
