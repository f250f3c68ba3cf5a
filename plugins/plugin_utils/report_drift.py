# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What changed since the last audit: per host and check, and hosts that came or went.

Words of their own, so they never read like the remediation report's "fixed" and "new". Only a
*measurement* (ok, not_applicable, at_risk, affected) moves a finding; a run that could not measure
(the host unreachable or failed, the check unknown or error) never does:

- ``opened``: measured affected/at_risk, and the last measurement was below (or there was none);
- ``reopened``: the same, for a finding an earlier measurement had closed (a regression);
- ``closed``: measured ok/not_applicable, and the last measurement was affected/at_risk;
- ``unmeasured``: the last measurement was affected/at_risk and this run could not measure it;
- ``unchanged``: everything else (a flaky night, then the same status again, is no change).

The history beside the report (postmortem-history.json) keeps, per host and check, the last
*measured* status (one letter) and when it was measured; an unmeasured run records "unmeasured
since" beside it and never replaces it. It also keeps, bounded, when each finding was last closed,
which is how a reopened finding is told from a new one. A host that no run has listed for
RETIRE_AFTER_DAYS is dropped from it (and the report says so); the metrics only ever hold the
hosts of the last run. Histories of schema 1 (0.2.0) are read and upgraded.

``postmortem_previous`` names any postmortem.json to compare with instead (then it is used whatever
it is: it was asked for); the history is still kept. Everything read is hostile until proven
otherwise: a truncated, huge, foreign or newer file, or a link to /dev/zero, gives a note, never a
failed run. Every step is linear in hosts x checks, and only check ids the run knows are kept.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import errno
import json
import os
import stat

from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import OPEN, SCHEMA_VERSION
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_time import parse_stamp

HISTORY_FILE = 'postmortem-history.json'
HISTORY_SCHEMA = 2
MEASURED_CLOSED = ('ok', 'not_applicable')
MEASURED = MEASURED_CLOSED + OPEN
CHANGES = ('opened', 'reopened', 'closed', 'unmeasured', 'unchanged')
# A 10,000-host postmortem.json with heavy evidence is about 50 MB; anything far beyond is not ours.
MAX_PREVIOUS_BYTES = 512 * 1024 * 1024
MAX_HISTORY_BYTES = 64 * 1024 * 1024
# Closed markers kept for telling reopened from opened: the newest ones, at most this many.
MAX_CLOSED = 100000
MAX_HOSTS = 50000
# A host no run has listed for this long has left the inventory: its history goes.
RETIRE_AFTER_DAYS = 30
# Only measured statuses are kept: '-' is "never measured".
_LETTER = {'not_applicable': 'n', 'ok': 'o', 'at_risk': 'r', 'affected': 'a'}
_STATUS = dict((v, k) for k, v in _LETTER.items())
# Schema 1 kept the latest status, measured or not, and a host's state in place of its letters.
_V1_LETTER = dict(_STATUS, u='unknown', e='error')


def _stamp(value):
    return value if parse_stamp(value) is not None else None


class State(object):
    """What is known of earlier runs, per host and check: the last measured status and when, since
    when a host or check has gone unmeasured, which hosts the last run listed, closed markers."""

    def __init__(self, source=None):
        self.source = source
        self.generated_at = None         # the last run recorded
        self.statuses = {}               # {host: {check: last measured status}}
        self.measured_at = {}            # {host: the last run that audited it}
        self.check_measured_at = {}      # {host: {check: when}}: only where older than measured_at[host]
        self.host_unmeasured = {}        # {host: {'since': stamp, 'state': 'unreachable'|'failed'}}
        self.check_unmeasured = {}       # {host: {check: since}}: audited, but the check not measured since
        self.seen = {}                   # {host: the last run that listed it}
        self.closed = {}                 # {'host\tcheck': when it was last closed}

    def in_last_run(self):
        return set(h for h, when in self.seen.items() if when == self.generated_at) if self.generated_at else set(self.seen)

    def retired(self, now_hosts, stamp):
        """Hosts no run has listed for RETIRE_AFTER_DAYS (counted from ``stamp``), this run's aside."""
        now = parse_stamp(stamp)
        if now is None:
            return []
        limit = now - datetime.timedelta(days=RETIRE_AFTER_DAYS)
        return sorted(h for h, when in self.seen.items()
                      if h not in now_hosts and (parse_stamp(when) or limit) <= limit)


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


def _is_audit_report(data):
    remediation = data.get('kind') == 'remediation' or any(
        isinstance(e, dict) and ('before' in e or 'remediation' in e) for e in data['hosts'])
    return not remediation and not data.get('nothing_audited') and bool(data['hosts']), remediation


def report_data(path):
    """(a postmortem.json's data, None) or (None, why it is not one this collection reads)."""
    try:
        data = _parse(read_bounded(path, MAX_PREVIOUS_BYTES), path)
    except ValueError as exc:
        return None, 'the previous report %s cannot be used: %s' % (path, exc)
    if not isinstance(data, dict) or not str(data.get('generator', '')).startswith('homelab.postmortem') \
            or not isinstance(data.get('hosts'), list):
        return None, '%s is not a homelab.postmortem report' % path
    version = data.get('schema_version', 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        return None, '%s has report schema %r, newer than this collection reads (%d)' % (path, version, SCHEMA_VERSION)
    return data, None


def baseline_from_report(path, known, audits_only=False):
    """(State or None, a note) from a postmortem.json: its measured statuses (of the checks in
    ``known``); with ``audits_only``, a remediation run's report or one that audited no host is no
    baseline (found in the report directory, not asked for)."""
    data, problem = report_data(path)
    if data is None:
        return None, 'no comparison: ' + problem
    if audits_only:
        is_audit, remediation = _is_audit_report(data)
        if not is_audit:
            return None, 'no comparison: %s is a %s, not an audit' % (
                path, 'remediation run' if remediation else 'run that audited no host')
    state = State(path)
    state.generated_at = _stamp(data.get('generated_at'))
    for entry in data['hosts']:
        if not isinstance(entry, dict) or not isinstance(entry.get('name'), str):
            return None, 'no comparison: %s has a host entry that is not one' % path
        name = entry['name']
        state.seen[name] = state.generated_at
        if entry.get('state') != 'audited':
            state.host_unmeasured[name] = {'since': state.generated_at,
                                           'state': entry.get('state') if entry.get('state') in ('unreachable', 'failed') else 'failed'}
            continue
        findings = entry.get('findings') if isinstance(entry.get('findings'), dict) else {}
        state.statuses[name] = dict((cid, f.get('status')) for cid, f in findings.items()
                                    if cid in known and isinstance(f, dict) and f.get('status') in MEASURED)
        state.measured_at[name] = state.generated_at
    note = 'compared with %s (%s)' % (path, data.get('generated_at'))
    version = data.get('schema_version', 1)
    if version < SCHEMA_VERSION:
        note += ', a report of an older collection version (schema %d)' % version
    return state, note


def _dict(value):
    return value if isinstance(value, dict) else {}


def _read_v1(state, last, known):
    """Schema 1 (0.2.0): its letters were the latest status, measured or not, and 'U'/'F' in place of
    an unaudited host's letters. Measured letters are kept; the rest becomes "unmeasured since" the
    run that last listed the host (the measured status it replaced was not kept by that version)."""
    checks = last['checks']
    for host, letters in last['hosts'].items():
        since = state.seen.get(host) or state.generated_at
        if letters in ('U', 'F'):
            state.host_unmeasured[host] = {'since': since, 'state': 'unreachable' if letters == 'U' else 'failed'}
            continue
        statuses, unmeasured = {}, {}
        for cid, letter in zip(checks, letters):
            status = _V1_LETTER.get(letter)
            if cid not in known or status is None:
                continue
            if status in MEASURED:
                statuses[cid] = status
            else:
                unmeasured[cid] = since
        state.statuses[host] = statuses
        state.measured_at[host] = since
        if unmeasured:
            state.check_unmeasured[host] = unmeasured


def _read_v2(state, last, known):
    checks = last['checks']
    for host, letters in last['hosts'].items():
        state.statuses[host] = dict((cid, _STATUS[letter]) for cid, letter in zip(checks, letters)
                                    if letter in _STATUS and cid in known)
    for host, when in _dict(last.get('measured')).items():
        if isinstance(host, str) and _stamp(when):
            state.measured_at[host] = when
    for host, record in _dict(last.get('host_unmeasured')).items():
        record = _dict(record)
        if isinstance(host, str) and _stamp(record.get('since')):
            state.host_unmeasured[host] = {'since': record['since'],
                                           'state': record.get('state') if record.get('state') == 'unreachable' else 'failed'}
    for target, name in ((state.check_measured_at, 'check_measured'), (state.check_unmeasured, 'check_unmeasured')):
        for host, per_check in _dict(last.get(name)).items():
            kept = dict((cid, when) for cid, when in _dict(per_check).items() if cid in known and _stamp(when))
            if isinstance(host, str) and kept:
                target[host] = kept


def read_history(dest, known):
    """(State, note or None) from the report directory; an empty State when there is none. Only the
    checks in ``known`` are kept (a check this collection no longer has, or a made-up id, goes)."""
    path = os.path.join(dest, HISTORY_FILE)
    state = State(path)
    try:
        data = _parse(read_bounded(path, MAX_HISTORY_BYTES), path)
    except ValueError as exc:
        if 'does not exist' in str(exc):
            return state, None
        return state, 'the drift history %s was unusable and starts again: %s' % (path, exc)
    if not isinstance(data, dict) or data.get('schema_version') not in (1, HISTORY_SCHEMA):
        return state, 'the drift history %s has another format and starts again' % path
    last = data.get('last_audit')
    for key, when in _dict(data.get('closed')).items():
        if isinstance(key, str) and _stamp(when) and key.rpartition('\t')[2] in known:
            state.closed[key] = when
    if not isinstance(last, dict) or not isinstance(last.get('hosts'), dict) or not isinstance(last.get('checks'), list):
        return state, None
    state.generated_at = _stamp(last.get('generated_at'))
    last = dict(last, hosts=dict((h, v) for h, v in last['hosts'].items() if isinstance(h, str) and isinstance(v, str)),
                checks=[c if isinstance(c, str) else None for c in last['checks']])
    state.seen = dict((h, _stamp(w)) for h, w in _dict(last.get('seen')).items() if isinstance(h, str))
    for host in last['hosts']:
        state.seen.setdefault(host, state.generated_at)
    (_read_v1 if data['schema_version'] == 1 else _read_v2)(state, last, known)
    dropped = len(set(c for c in last['checks'] if c is not None) - set(known))
    note = None
    if data['schema_version'] == 1:
        note = 'the drift history %s was written by an older collection version (schema 1) and is upgraded' % path
    if dropped:
        note = ('%s; ' % note if note else '') + '%d check id(s) of the drift history this run does not know were dropped' % dropped
    return state, note


def _key(host, check):
    return '%s\t%s' % (host, check)


def compare(report, baseline, state):
    """Per host and check, what changed since ``baseline`` (None: nothing to compare with), judged on
    measurements only. ``state`` (the history) says since when what is unmeasured has been. Records
    each host's changes as ``entry['drift'] = {check: change}``, since when a check or host has gone
    unmeasured (``entry['unmeasured']``, ``entry['unmeasured_since']``, ``entry['last_measured_at']``)
    and returns the run's drift record."""
    stamp = report.get('generated_at')
    closed = state.closed
    counts = dict((c, 0) for c in CHANGES)
    now_hosts, newly_unaudited = set(), []
    for entry in report['hosts']:
        name = entry['name']
        now_hosts.add(name)
        before = (baseline.statuses.get(name) or {}) if baseline is not None else {}
        host_since = (state.host_unmeasured.get(name) or {}).get('since')
        # Beside the findings, not inside them: their JSON text is already made (report.build).
        if entry['state'] != 'audited':
            if baseline is None or name not in baseline.host_unmeasured:
                newly_unaudited.append(name)
            entry['unmeasured_since'] = host_since or stamp
            entry['last_measured_at'] = state.measured_at.get(name)
            for cid, was in before.items():
                if was in OPEN:
                    counts['unmeasured'] += 1
                    entry.setdefault('drift', {})[cid] = 'unmeasured'
            continue
        check_since = state.check_unmeasured.get(name) or {}
        for cid, finding in entry['findings'].items():
            now = finding.get('status')
            was = before.get(cid)
            if now in MEASURED:
                if now in OPEN and was not in OPEN:
                    change = 'reopened' if _key(name, cid) in closed else 'opened'
                elif was in OPEN and now in MEASURED_CLOSED:
                    change = 'closed'
                else:
                    change = 'unchanged'
            else:
                entry.setdefault('unmeasured', {})[cid] = check_since.get(cid) or host_since or stamp
                change = 'unmeasured' if was in OPEN else 'unchanged'
            counts[change] += 1
            if change != 'unchanged':
                entry.setdefault('drift', {})[cid] = change
    dropped = state.retired(now_hosts, stamp)
    if baseline is not None:
        earlier = set(baseline.seen) | set(baseline.statuses) | set(baseline.host_unmeasured)
        appeared, vanished = sorted(now_hosts - earlier), sorted(baseline.in_last_run() - now_hosts)
    else:
        appeared, vanished = [], []
    return {
        'since': baseline.generated_at if baseline is not None else None,
        'baseline': baseline.source if baseline is not None else None,
        'counts': counts,
        'hosts_appeared': appeared,
        'hosts_vanished': vanished,
        'hosts_newly_unaudited': newly_unaudited,
        'hosts_dropped': dropped,
        'dropped_after_days': RETIRE_AFTER_DAYS,
    }


def drift_since(report, dest, known, previous=None):
    """(the history State, to update after the run) and the run's drift, recorded in report['drift']:
    compared with ``previous`` when given, else the history in ``dest``, else (a report directory of
    a version without history) the audit report there. A baseline that cannot be used is a note."""
    state, note = read_history(dest, known)
    notes = [note] if note else []
    if previous:
        baseline, found = baseline_from_report(os.path.abspath(previous), known)
        notes.append(found)
    elif state.generated_at is not None:
        baseline = state
        notes.append('compared with the last audit (%s), recorded in %s' % (state.generated_at, state.source))
    else:
        baseline = None
        existing = os.path.join(dest, 'postmortem.json')
        if os.path.lexists(existing):
            baseline, found = baseline_from_report(existing, known, audits_only=True)
            notes.append(found)
        if baseline is None:
            notes.append('no earlier audit to compare with: every open finding counts as opened')
    drift = compare(report, baseline, state)
    drift['note'] = '; '.join(n for n in notes if n)
    report['drift'] = drift
    return state, drift


def _measured_now(entry, state, stamp):
    """Update ``state`` with one audited host: measured statuses replace the last ones; what was not
    measured keeps its last status, its time, and gets "unmeasured since"."""
    name = entry['name']
    host_since = (state.host_unmeasured.pop(name, None) or {}).get('since')
    statuses = state.statuses.setdefault(name, {})
    earlier = state.measured_at.get(name)
    older = state.check_measured_at.get(name) or {}
    unmeasured = state.check_unmeasured.get(name) or {}
    findings = entry['findings']
    # A check measured before and not now keeps the time of its last measurement.
    kept_times = dict((cid, older.get(cid, earlier)) for cid in statuses
                      if (findings.get(cid) or {}).get('status') not in MEASURED)
    for cid, finding in findings.items():
        status = finding.get('status')
        if status in MEASURED:
            statuses[cid] = status
            unmeasured.pop(cid, None)
        else:
            unmeasured.setdefault(cid, host_since or stamp)
    state.measured_at[name] = stamp
    for target, value in ((state.check_measured_at, dict((c, w) for c, w in kept_times.items() if w)),
                          (state.check_unmeasured, unmeasured)):
        if value:
            target[name] = value
        else:
            target.pop(name, None)


def next_history(report, state):
    """The history after this run (a dict to write as JSON): ``state`` updated with what this run
    measured and what it could not; hosts and checks it did not audit keep everything (a run with
    --limit or fewer checks does not make the next full run report them as new); closed markers
    for what it closed; retired hosts dropped; bounded to MAX_CLOSED markers and MAX_HOSTS hosts.
    Linear in hosts x checks. ``report['drift']`` must come from compare() with the same state."""
    stamp = report.get('generated_at')
    drift = report.get('drift') or {}
    closed = dict(state.closed)
    for entry in report['hosts']:
        for cid, change in (entry.get('drift') or {}).items():
            if change == 'closed':
                closed[_key(entry['name'], cid)] = stamp
            elif change in ('opened', 'reopened'):
                closed.pop(_key(entry['name'], cid), None)
    for entry in report['hosts']:
        name = entry['name']
        state.seen[name] = stamp
        if entry['state'] == 'audited':
            _measured_now(entry, state, stamp)
        else:
            since = (state.host_unmeasured.get(name) or {}).get('since') or stamp
            state.host_unmeasured[name] = {'since': since, 'state': 'unreachable' if entry['state'] == 'unreachable' else 'failed'}
    gone = set(drift.get('hosts_dropped') or ())
    hosts = [h for h in state.seen if h not in gone]
    if len(hosts) > MAX_HOSTS:
        hosts = sorted(hosts, key=lambda h: str(state.seen.get(h) or ''), reverse=True)[:MAX_HOSTS]
    kept = set(hosts)
    if gone or len(kept) < len(state.seen):
        closed = dict((k, v) for k, v in closed.items() if k.rpartition('\t')[0] in kept)
    if len(closed) > MAX_CLOSED:
        closed = dict(sorted(closed.items(), key=lambda item: item[1], reverse=True)[:MAX_CLOSED])
    # The report's checks first (its order), then those only the history has; a dict keeps it linear.
    order = dict.fromkeys(c['id'] for c in report['checks'])
    for host in hosts:
        for cid in state.statuses.get(host) or ():
            if cid not in order:
                order[cid] = None
    checks = list(order)

    def per_host(mapping):
        return dict((h, mapping[h]) for h in hosts if mapping.get(h))
    return {'schema_version': HISTORY_SCHEMA, 'closed': closed,
            'last_audit': {'generated_at': stamp, 'checks': checks,
                           'hosts': dict((h, ''.join(_LETTER.get((state.statuses.get(h) or {}).get(c), '-') for c in checks)
                                          .rstrip('-')) for h in hosts),
                           'seen': dict((h, state.seen.get(h)) for h in hosts),
                           'measured': per_host(state.measured_at),
                           'host_unmeasured': per_host(state.host_unmeasured),
                           'check_measured': per_host(state.check_measured_at),
                           'check_unmeasured': per_host(state.check_unmeasured)}}
