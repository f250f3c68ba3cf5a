# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed since the last audit: per host and check, and hosts that came or went.

Words of their own, so they never read like the remediation report's "fixed" and "new":

- ``opened``: the finding entered affected/at_risk from any other status;
- ``reopened``: it did, and it had been closed by an earlier audit (a regression);
- ``closed``: it left affected/at_risk for a measured status (ok, not_applicable);
- ``unmeasured``: it was open and this run could not tell (unknown, error, host not audited):
  not closed, because nothing showed it fixed;
- ``unchanged``: open before and now, or neither (a flap between ok and unknown is no change).

The baseline is the last *audit* run: the history file beside the report keeps it (one letter
per check and host), so a remediation run's report or a run that audited no host written into the
same directory never becomes the next audit's baseline. ``postmortem_previous`` names any
postmortem.json instead (then it is used whatever it is: it was asked for). The history also keeps,
bounded, when each finding was last closed, which is how a reopened finding is told from a new one.
Everything read is hostile until proven otherwise: a truncated, huge, foreign or newer file, or a
link to /dev/zero, gives a note, never a failed run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUSES
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import SCHEMA_VERSION
HISTORY_FILE = 'postmortem-history.json'
HISTORY_SCHEMA = 1
OPEN = ('affected', 'at_risk')
MEASURED_CLOSED = ('ok', 'not_applicable')
CHANGES = ('opened', 'reopened', 'closed', 'unmeasured', 'unchanged')
# A 10,000-host postmortem.json with heavy evidence is about 50 MB; anything far beyond is not ours.
MAX_PREVIOUS_BYTES = 512 * 1024 * 1024
MAX_HISTORY_BYTES = 64 * 1024 * 1024
# Closed markers kept for telling reopened from opened: the newest ones, at most this many.
MAX_CLOSED = 100000
MAX_HOSTS = 50000
_LETTER = {'not_applicable': 'n', 'ok': 'o', 'unknown': 'u', 'error': 'e', 'at_risk': 'r', 'affected': 'a',
           'unreachable': 'U', 'failed': 'F'}
_STATUS = dict((v, k) for k, v in _LETTER.items())


class Baseline(object):
    """An earlier audit: when, and each host's status per check (host state for unaudited hosts)."""

    def __init__(self, generated_at, statuses, source):
        self.generated_at = generated_at
        self.statuses = statuses          # {host: {check: status}} or {host: 'unreachable'|'failed'}
        self.source = source


def read_bounded(path, limit):
    """The bytes of a regular file, at most ``limit``; raises ValueError with the reason otherwise.
    Opened without blocking (a FIFO must not hang the report) and checked before it is read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise ValueError('it does not exist')
        raise ValueError('it cannot be opened: %s' % (exc.strerror or exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError('it is not a regular file')
        if info.st_size > limit:
            raise ValueError('it is %d bytes, more than the %d this reads' % (info.st_size, limit))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1024 * 1024)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise ValueError('it grew beyond %d bytes while it was read' % limit)
            chunks.append(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def _parse(data, what):
    try:
        return json.loads(data.decode('utf-8'))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ValueError('%s is not JSON (%s)' % (what, str(exc)[:120]))


def baseline_from_report(path, audits_only=False):
    """(Baseline or None, a note) from a postmortem.json; with ``audits_only``, a remediation run's
    report or one that audited no host is no baseline (found in the report directory, not asked for)."""
    try:
        data = _parse(read_bounded(path, MAX_PREVIOUS_BYTES), path)
    except ValueError as exc:
        return None, 'no comparison: the previous report %s cannot be used: %s' % (path, exc)
    if not isinstance(data, dict) or not str(data.get('generator', '')).startswith('homelab.postmortem') \
            or not isinstance(data.get('hosts'), list):
        return None, 'no comparison: %s is not a homelab.postmortem report' % path
    version = data.get('schema_version', 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        return None, 'no comparison: %s has report schema %r, newer than this collection reads (%d)' % (
            path, version, SCHEMA_VERSION)
    if audits_only:
        remediation = data.get('kind') == 'remediation' or any(
            isinstance(e, dict) and ('before' in e or 'remediation' in e) for e in data['hosts'])
        if remediation or data.get('nothing_audited') or not data['hosts']:
            return None, 'no comparison: %s is a %s, not an audit' % (
                path, 'remediation run' if remediation else 'run that audited no host')
    statuses = {}
    for entry in data['hosts']:
        if not isinstance(entry, dict) or not isinstance(entry.get('name'), str):
            return None, 'no comparison: %s has a host entry that is not one' % path
        if entry.get('state') != 'audited':
            statuses[entry['name']] = entry.get('state') if entry.get('state') in ('unreachable', 'failed') else 'failed'
            continue
        findings = entry.get('findings') if isinstance(entry.get('findings'), dict) else {}
        statuses[entry['name']] = dict((str(cid), f.get('status')) for cid, f in findings.items()
                                       if isinstance(f, dict) and f.get('status') in STATUSES)
    note = 'compared with %s (%s)' % (path, data.get('generated_at'))
    if version < SCHEMA_VERSION:
        note += ', a report of an older collection version (schema %d)' % version
    return Baseline(data.get('generated_at'), statuses, path), note


def read_history(dest):
    """(history dict, note or None) from the report directory; an empty history when there is none."""
    path = os.path.join(dest, HISTORY_FILE)
    empty = {'schema_version': HISTORY_SCHEMA, 'last_audit': None, 'closed': {}}
    try:
        data = _parse(read_bounded(path, MAX_HISTORY_BYTES), path)
    except ValueError as exc:
        if 'does not exist' in str(exc):
            return empty, None
        return empty, 'the drift history %s was unusable and starts again: %s' % (path, exc)
    if not isinstance(data, dict) or data.get('schema_version') != HISTORY_SCHEMA:
        return empty, 'the drift history %s has another format and starts again' % path
    closed = data.get('closed') if isinstance(data.get('closed'), dict) else {}
    data['closed'] = dict((k, v) for k, v in closed.items() if isinstance(k, str) and isinstance(v, str))
    return data, None


def baseline_from_history(history, dest):
    last = history.get('last_audit')
    if not isinstance(last, dict) or not isinstance(last.get('hosts'), dict) or not isinstance(last.get('checks'), list):
        return None
    checks = [str(c) for c in last['checks']]
    statuses = {}
    for host, letters in last['hosts'].items():
        if not isinstance(letters, str):
            continue
        if letters in ('U', 'F'):
            statuses[host] = _STATUS[letters]
            continue
        statuses[host] = dict((cid, _STATUS[letter]) for cid, letter in zip(checks, letters) if letter in _STATUS)
    return Baseline(last.get('generated_at'), statuses, os.path.join(dest, HISTORY_FILE))


def _key(host, check):
    return '%s\t%s' % (host, check)


def compare(report, baseline, history):
    """Per host and check, what changed since ``baseline`` (None: nothing to compare with). Records each
    host's changes as ``entry['drift'] = {check: change}`` and returns the run's drift record."""
    closed = history.get('closed') or {}
    counts = dict((c, 0) for c in CHANGES)
    now_hosts, newly_unaudited = set(), []
    for entry in report['hosts']:
        now_hosts.add(entry['name'])
        before = baseline.statuses.get(entry['name']) if baseline is not None else None
        if entry['state'] != 'audited':
            if not isinstance(before, str):
                newly_unaudited.append(entry['name'])
            if isinstance(before, dict):
                for cid, was in before.items():
                    if was in OPEN:
                        counts['unmeasured'] += 1
            continue
        for cid, finding in entry['findings'].items():
            now = finding.get('status')
            was = before.get(cid) if isinstance(before, dict) else None
            if now in OPEN and was not in OPEN:
                change = 'reopened' if _key(entry['name'], cid) in closed else 'opened'
            elif was in OPEN and now in MEASURED_CLOSED:
                change = 'closed'
            elif was in OPEN and now not in OPEN:
                change = 'unmeasured'
            else:
                change = 'unchanged'
            counts[change] += 1
            if change != 'unchanged':
                # Beside the findings, not inside them: their JSON text is already made (report.build).
                entry.setdefault('drift', {})[cid] = change
    before_hosts = set(baseline.statuses) if baseline is not None else set()
    return {
        'since': baseline.generated_at if baseline is not None else None,
        'baseline': baseline.source if baseline is not None else None,
        'counts': counts,
        'hosts_appeared': sorted(now_hosts - before_hosts) if baseline is not None else [],
        'hosts_vanished': sorted(before_hosts - now_hosts),
        'hosts_newly_unaudited': newly_unaudited,
    }


def next_history(report, history, baseline):
    """The history after this audit: the baseline updated with what this run measured (hosts and
    checks it did not audit keep their earlier status, so a run with --limit or fewer checks does not
    make the next full run report them as new), closed markers added for what this run closed,
    bounded to the newest MAX_CLOSED markers and MAX_HOSTS hosts."""
    closed = dict(history.get('closed') or {})
    stamp = report.get('generated_at')
    for entry in report['hosts']:
        for cid, change in (entry.get('drift') or {}).items():
            if change == 'closed':
                closed[_key(entry['name'], cid)] = stamp
            elif change in ('opened', 'reopened'):
                closed.pop(_key(entry['name'], cid), None)
    if len(closed) > MAX_CLOSED:
        closed = dict(sorted(closed.items(), key=lambda item: item[1], reverse=True)[:MAX_CLOSED])
    statuses = dict(baseline.statuses) if baseline is not None else {}
    last = history.get('last_audit') if isinstance(history.get('last_audit'), dict) else {}
    seen = dict(last.get('seen') or {}) if isinstance(last.get('seen'), dict) else {}
    for entry in report['hosts']:
        seen[entry['name']] = stamp
        if entry['state'] != 'audited':
            statuses[entry['name']] = entry['state']
            continue
        merged = dict(statuses[entry['name']]) if isinstance(statuses.get(entry['name']), dict) else {}
        merged.update((cid, f.get('status')) for cid, f in entry['findings'].items())
        statuses[entry['name']] = merged
    if len(statuses) > MAX_HOSTS:
        keep = sorted(statuses, key=lambda h: str(seen.get(h, '')), reverse=True)[:MAX_HOSTS]
        statuses = dict((h, statuses[h]) for h in keep)
    checks = [c['id'] for c in report['checks']]
    for value in statuses.values():
        if isinstance(value, dict):
            checks += [c for c in value if c not in checks]
    hosts = {}
    for host, value in statuses.items():
        if isinstance(value, dict):
            hosts[host] = ''.join(_LETTER.get(value.get(c), '-') for c in checks)
        else:
            hosts[host] = _LETTER.get(value, 'F')
    return {'schema_version': HISTORY_SCHEMA, 'closed': closed,
            'last_audit': {'generated_at': stamp, 'checks': checks, 'hosts': hosts,
                           'seen': dict((h, seen.get(h)) for h in hosts)}}
