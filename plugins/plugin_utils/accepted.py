# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accepted findings (``postmortem_accept``): host/check pairs someone has decided to live with.

The file is YAML, a list of entries (or a mapping with the list under ``accepted``)::

    - host: pi-livingroom          # an inventory name, or a shell pattern: pi-*
      check: pi_ir_tx              # a detection id
      reason: the IR blaster is unplugged until the new kernel ships
      expires: 2027-03-01          # optional; from this day on the finding counts again

An accepted finding keeps its status and evidence; it is shown as accepted, does not fail the
gate, and remediate.yml leaves it alone unless ``postmortem_remediate_accepted`` is true. An
expired entry counts again and says since when. An entry that matches no host/check pair of the
run is reported, so a typo or a retired host does not silently accept nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import fnmatch

from ansible_collections.homelab.postmortem.plugins.module_utils import registry

MAX_BYTES = 4 * 1024 * 1024
MAX_ENTRIES = 10000


class AcceptProblem(ValueError):
    pass


def _date(value, where):
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.datetime.strptime(str(value).strip(), '%Y-%m-%d').date()
    except ValueError:
        raise AcceptProblem('%s: expires must be a date (YYYY-MM-DD), got %r' % (where, value))


def parse(data, source):
    """The entries of an accept file, checked; raises AcceptProblem naming the file and entry."""
    if isinstance(data, dict) and 'accepted' not in data:
        raise AcceptProblem('%s: expected a list of entries (host, check, reason, expires), or one under "accepted"' % source)
    entries = data.get('accepted') if isinstance(data, dict) else data
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise AcceptProblem('%s: expected a list of entries (host, check, reason, expires)' % source)
    if len(entries) > MAX_ENTRIES:
        raise AcceptProblem('%s: %d entries, more than %d' % (source, len(entries), MAX_ENTRIES))
    parsed = []
    for number, entry in enumerate(entries, 1):
        where = '%s entry %d' % (source, number)
        if not isinstance(entry, dict):
            raise AcceptProblem('%s: expected a mapping with host, check and reason' % where)
        unknown = sorted(set(entry) - set(('host', 'check', 'reason', 'expires')))
        if unknown:
            raise AcceptProblem('%s: unknown key(s) %s; the keys are host, check, reason, expires' % (where, ', '.join(map(str, unknown))))
        for key in ('host', 'check', 'reason'):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise AcceptProblem('%s: %s must be a non-empty string' % (where, key))
        if entry['check'] not in registry.BY_ID:
            raise AcceptProblem('%s: unknown check %r; known checks: %s' % (where, entry['check'], ', '.join(registry.BY_ID)))
        expires = _date(entry['expires'], where) if entry.get('expires') is not None else None
        parsed.append({'number': number, 'host': entry['host'].strip(), 'check': entry['check'],
                       'reason': entry['reason'].strip(), 'expires': expires.isoformat() if expires else None})
    return parsed


def load(path, read_bytes, yaml_load):
    """Entries from ``path``; ``read_bytes(path, limit)`` and ``yaml_load(text)`` are the caller's
    (bounded reads, Ansible's own YAML loader on the controller)."""
    try:
        text = read_bytes(path, MAX_BYTES).decode('utf-8')
    except (ValueError, UnicodeDecodeError) as exc:
        raise AcceptProblem('postmortem_accept %s cannot be read: %s' % (path, exc))
    try:
        data = yaml_load(text)
    except Exception as exc:  # pylint: disable=broad-except
        # Whatever the YAML loader raises, the file is unusable; say why in one line.
        raise AcceptProblem('postmortem_accept %s is not YAML: %s' % (path, ' '.join(str(exc).split())[:200]))
    return parse(data, 'postmortem_accept %s' % path)


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
    used = set()
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
    unmatched = [dict((k, e[k]) for k in ('number', 'host', 'check', 'reason', 'expires'))
                 for e in entries if e['number'] not in used]
    return dict(counts, unmatched=unmatched)


def is_accepted(entry, check):
    """Whether the report's host ``entry`` has ``check`` accepted."""
    return check in (entry.get('accepted') or {})
