# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report: one data model, written as JSON, JUnit XML and HTML.

Controller-side only. The data model is what postmortem.json holds; JUnit and
HTML are views of it, so the three can never disagree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os
import re
import tempfile
import xml.etree.ElementTree as ET

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, STATUSES, json_safe, safe_text, worst_status
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_html import render_html

# Host states that are not findings. For the fail threshold they count as
# ``error``: an operator who fails on errors wants to hear about a host that
# could not be audited at all.
HOST_PROBLEMS = ('unreachable', 'failed')
# One compact encoder for every document: the C encoder (an indent would run the pure-Python one),
# built once (json.dumps with arguments builds a new one per call).
_COMPACT = json.JSONEncoder(sort_keys=True, separators=(',', ':'))
REPORT_FILES = {'json': 'postmortem.json', 'junit': 'postmortem-junit.xml', 'html': 'postmortem.html'}


def plain(value):
    """Deep copy into plain, strict-JSON types (Ansible hands us tagged/lazy containers; a host
    may hand us NaN or lone surrogates). Exact types are checked first: this runs once per value
    of every finding of every host."""
    kind = type(value)
    if kind is str:
        return safe_text(value)
    if kind is dict or isinstance(value, dict) or hasattr(value, 'items'):
        return dict((safe_text(str(k)), plain(v)) for k, v in value.items())
    if kind is list or isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if value is None or kind is bool:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return json_safe(float(value))
    return safe_text(str(value))


_STRICT = json.JSONEncoder(allow_nan=False, ensure_ascii=False)


def plain_fast(value):
    """plain(), through the C encoder when the value already is strict JSON: no NaN (allow_nan
    refuses it), no lone surrogate (the UTF-8 encode refuses it), nothing but JSON types (the
    encoder refuses the rest). Anything else takes the careful path."""
    try:
        text = _STRICT.encode(value)
        text.encode('utf-8')
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        return plain(value)
    return json.loads(text)


# Characters XML 1.0 cannot hold even escaped; JUnit shows them as \xNN instead.
_XML_INVALID = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]')


def xml_text(text):
    return _XML_INVALID.sub(lambda m: '\\x%02x' % ord(m.group(0)) if ord(m.group(0)) < 0x100
                            else '\\u%04x' % ord(m.group(0)), str(text))


def _one_line(text, limit=500):
    """A reason on one line: runs of whitespace (\\r\\n from ssh, tabs) folded to one space."""
    return ' '.join(str(text or '').split())[:limit]


def _failure_reason(result, default):
    """Why a host's task failed. When the module never produced JSON (no usable Python, a too old
    one), Ansible's msg is generic and the cause is the last meaningful line of module_stderr."""
    msg = _one_line(result.get('msg') or default)
    stderr = [line.strip() for line in str(result.get('module_stderr') or '').splitlines() if line.strip()]
    stderr = [line for line in stderr if not line.startswith(('Shared connection to', 'Traceback'))]
    if stderr:
        return '%s (module stderr: %s)' % (msg, _one_line(stderr[-1], 300))
    return msg


def _problem(name, reason, state='failed'):
    return {'name': name, 'state': state, 'reason': reason, 'findings': {}}


def _checked_findings(findings):
    """The findings a host returned, or a reason why they cannot be used."""
    if not isinstance(findings, dict):
        return None, 'the audit returned %s instead of findings' % type(findings).__name__
    for cid, finding in findings.items():
        if not isinstance(finding, dict) or finding.get('status') not in STATUS_RANK:
            return None, 'the finding %s has no valid status (%r)' % (
                cid, finding.get('status') if isinstance(finding, dict) else finding)
    return findings, None


def host_entry(name, result):
    """Turn one host's registered audit_facts result into the report's host record."""
    if result is None:
        return _problem(name, 'no audit result: the host left the play before the audit ran')
    result = plain_fast(result)
    if not isinstance(result, dict):
        return _problem(name, 'the audit result is %s, not a task result' % type(result).__name__)
    if result.get('unreachable'):
        return _problem(name, _one_line(result.get('msg') or 'host unreachable'), 'unreachable')
    if result.get('failed'):
        return _problem(name, _failure_reason(result, 'audit module failed'))
    if result.get('skipped'):
        return _problem(name, 'audit task was skipped on this host')
    facts = result.get('ansible_facts') or {}
    findings, problem = _checked_findings(facts.get('postmortem') if isinstance(facts, dict) else facts)
    if problem:
        return _problem(name, problem)
    return {'name': name, 'state': 'audited', 'reason': None, 'findings': findings,
            'run': facts.get('postmortem_run') or {}}


def build(hosts, results, checks, collection_version, now=None, before=None):
    """hosts: names in inventory order; results: {host: registered result or None};
    checks: [(id, title)] in report order; before: {host: an earlier result} (a remediation run)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    entries = [host_entry(h, results.get(h)) for h in hosts]
    if before is not None:
        for entry in entries:
            earlier = host_entry(entry['name'], before.get(entry['name']))
            entry['before'] = (dict((cid, f.get('status', 'error')) for cid, f in earlier['findings'].items())
                               if earlier['state'] == 'audited' else {'(host)': earlier['state']})
    seen = set(cid for e in entries for cid in e['findings'])
    known = [c for c in checks if c[0] in seen] or list(checks)
    extra = sorted(seen - set(c[0] for c in known))
    for cid in extra:
        title = next((e['findings'][cid].get('title') for e in entries if cid in e['findings']), cid)
        known.append((cid, title))
    totals = dict((s, 0) for s in STATUSES + HOST_PROBLEMS)
    for entry in entries:
        if entry['state'] != 'audited':
            totals[entry['state']] += 1
            continue
        for finding in entry['findings'].values():
            totals[finding.get('status', 'error')] = totals.get(finding.get('status', 'error'), 0) + 1
    return {
        'generator': 'homelab.postmortem %s' % collection_version,
        'generated_at': now.strftime('%Y-%m-%dT%H:%M:%SZ'),
        'checks': [{'id': cid, 'title': title} for cid, title in known],
        'statuses': list(STATUSES),
        'hosts': entries,
        'totals': dict((k, v) for k, v in totals.items() if v),
    }


def effective_status(entry, check_id):
    if entry['state'] != 'audited':
        return entry['state']
    finding = entry['findings'].get(check_id)
    return finding.get('status', 'error') if finding else None


def worst(report):
    statuses = []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            statuses.append('error')
        statuses.extend(f.get('status', 'error') for f in entry['findings'].values())
    return worst_status(statuses) if statuses else None


def threshold_reached(report, fail_on, fail_on_unaudited=True):
    """What fails the gate: findings at or above ``fail_on`` and, unless allowed, every host that
    could not be audited (whatever ``fail_on`` is: a host we could not see is not a healthy one)."""
    if not fail_on or fail_on == 'never':
        return []
    hits = []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            if fail_on_unaudited:
                hits.append('%s: %s (not audited)' % (entry['name'], entry['state']))
            continue
        for cid, finding in entry['findings'].items():
            if STATUS_RANK[finding['status']] >= STATUS_RANK[fail_on]:
                hits.append('%s/%s: %s' % (entry['name'], cid, finding['status']))
    return hits


def to_junit(report):
    suites = ET.Element('testsuites', name='homelab.postmortem')
    counts = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
    for entry in report['hosts']:
        suite = ET.SubElement(suites, 'testsuite', name=entry['name'])
        s_counts = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
        for check in report['checks']:
            case = ET.SubElement(suite, 'testcase', classname=entry['name'], name=check['id'])
            s_counts['tests'] += 1
            if entry['state'] != 'audited':
                node = ET.SubElement(case, 'error', message='%s: %s' % (entry['state'], entry['reason']), type=entry['state'])
                node.text = entry['reason']
                s_counts['errors'] += 1
                continue
            finding = entry['findings'].get(check['id'])
            if finding is None:
                ET.SubElement(case, 'skipped', message='not run on this host')
                s_counts['skipped'] += 1
                continue
            status = finding.get('status')
            message = '%s: %s' % (status, finding.get('summary', ''))
            body = _COMPACT.encode({'evidence': finding.get('evidence'), 'remediation': finding.get('remediation'),
                                    'references': finding.get('references')})
            if status in ('affected', 'at_risk'):
                node = ET.SubElement(case, 'failure', message=message, type=status)
                node.text = body
                s_counts['failures'] += 1
            elif status == 'error':
                node = ET.SubElement(case, 'error', message=message, type=status)
                node.text = body
                s_counts['errors'] += 1
            elif status in ('not_applicable', 'unknown'):
                ET.SubElement(case, 'skipped', message=message)
                s_counts['skipped'] += 1
            else:
                out = ET.SubElement(case, 'system-out')
                out.text = message
        for key, value in s_counts.items():
            suite.set(key, str(value))
            counts[key] += value
    for key, value in counts.items():
        suites.set(key, str(value))
    # Host-supplied text (config lines, tool output) may hold control characters XML cannot carry.
    for node in suites.iter():
        if node.text:
            node.text = xml_text(node.text)
        for name, value in node.attrib.items():
            node.set(name, xml_text(value))
    return ET.tostring(suites, encoding='unicode')


def fix_text(finding):
    """The remediation named in one phrase: role and vars, module, or the first manual step."""
    remediation = finding.get('remediation') or {}
    parts = []
    if remediation.get('role'):
        role_vars = remediation.get('vars') or {}
        parts.append('role %s%s' % (remediation['role'], (' with %s' % json.dumps(role_vars, sort_keys=True)) if role_vars else ''))
    if remediation.get('module'):
        parts.append('module %s' % remediation['module'])
    if not parts and remediation.get('manual'):
        parts.append(_one_line(remediation['manual'][0], 200))
    text = ' or '.join(parts) or 'see the docs page'
    if remediation.get('disruption') and remediation.get('disruption') != 'none':
        text += ' (disruption: %s)' % remediation['disruption']
    return text


# Up to this many hosts the summary shows the host x check table; above it, counts per check
# and status. The attention list names at most ATTENTION_HOSTS hosts, worst first.
TABLE_HOSTS = 40
ATTENTION_HOSTS = 20


def _host_rank(entry):
    if entry['state'] != 'audited':
        return STATUS_RANK['error']  # as the fail threshold counts it
    return max([STATUS_RANK[f.get('status', 'error')] for f in entry['findings'].values()] or [0])


def _attention(entry, checks):
    if entry['state'] != 'audited':
        return ['%s: %s (not audited): %s' % (entry['name'], entry['state'], entry['reason'])]
    lines = []
    for cid in checks:
        finding = entry['findings'].get(cid)
        if finding and finding.get('status') in ('affected', 'at_risk', 'error', 'unknown'):
            lines.append('%s %s [%s] %s' % (entry['name'], cid, finding['status'], _one_line(finding.get('summary'))))
            lines.append('    fix: %s; docs: docs/%s.md' % (fix_text(finding), cid))
    return lines


def _table(rows):
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ['  '.join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def summary_lines(report, paths):
    """A summary at any fleet size: the host table for small fleets, counts per check and status for
    large ones; the worst ATTENTION_HOSTS hosts with what to do; totals; where the full report is."""
    checks = [c['id'] for c in report['checks']]
    hosts = report['hosts']
    lines = ['homelab.postmortem audit: %d host(s), %d check(s)' % (len(hosts), len(checks)), '']
    if len(hosts) <= TABLE_HOSTS:
        rows = [['HOST'] + checks]
        for entry in hosts:
            if entry['state'] != 'audited':
                rows.append([entry['name']] + [entry['state'].upper()] * len(checks))
            else:
                rows.append([entry['name']] + [effective_status(entry, c) or '-' for c in checks])
        lines += _table(rows)
    else:
        shown = [s for s in reversed(STATUSES + HOST_PROBLEMS) if s in report['totals']]
        rows = [['CHECK'] + shown]
        for cid in checks:
            counts = dict((s, 0) for s in shown)
            for entry in hosts:
                status = effective_status(entry, cid)
                if status in counts:
                    counts[status] += 1
            rows.append([cid] + [counts[s] or '-' for s in shown])
        lines += ['Hosts per check and status:'] + ['  ' + line for line in _table(rows)]
    needing = sorted((e for e in hosts if _attention(e, checks)), key=lambda e: -_host_rank(e))
    if needing:
        lines += ['', 'Needs attention (%d host(s)%s):' % (
            len(needing), ', the worst %d shown' % ATTENTION_HOSTS if len(needing) > ATTENTION_HOSTS else '')]
        for entry in needing[:ATTENTION_HOSTS]:
            lines += ['  ' + a for a in _attention(entry, checks)]
        if len(needing) > ATTENTION_HOSTS:
            lines.append('  ... and %d more host(s): every host is in the reports below' % (len(needing) - ATTENTION_HOSTS))
    else:
        lines += ['', 'Nothing needs attention.']
    if any('before' in e for e in hosts):
        lines += [''] + remediation_lines(report)
    totals = ', '.join('%s %d' % (k, report['totals'][k]) for k in STATUSES + HOST_PROBLEMS if k in report['totals'])
    lines += ['', 'Totals: ' + (totals or 'nothing ran')]
    if paths:
        lines.append('Reports: ' + '  '.join(paths[k] for k in ('html', 'json', 'junit') if k in paths))
    return lines


OPEN = ('affected', 'at_risk')


def remediation_lines(report):
    """Before against after: findings fixed, still open, new; the hosts that changed (at most ATTENTION_HOSTS)."""
    fixed = still = new = 0
    changed = []
    for entry in report['hosts']:
        before = entry.get('before') or {}
        after = dict((cid, f.get('status')) for cid, f in entry['findings'].items())
        moves = []
        for cid in sorted(set(before) | set(after)):
            was, now = before.get(cid), after.get(cid, entry['state'] if entry['state'] != 'audited' else None)
            if was in OPEN and now not in OPEN:
                fixed += 1
                moves.append('%s %s -> %s' % (cid, was, now))
            elif was in OPEN:
                still += 1
            elif now in OPEN:
                new += 1
                moves.append('%s %s -> %s' % (cid, was, now))
        if moves:
            changed.append('%s: %s' % (entry['name'], ', '.join(moves)))
    lines = ['Remediation: %d finding(s) fixed, %d still open, %d new' % (fixed, still, new)]
    lines += ['  ' + line for line in changed[:ATTENTION_HOSTS]]
    if len(changed) > ATTENTION_HOSTS:
        lines.append('  ... and %d more host(s) changed: see the reports' % (len(changed) - ATTENTION_HOSTS))
    return lines


def _atomic_write(path, text):
    directory = os.path.dirname(path) or '.'
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, 'w') as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ReportWriteError(Exception):
    pass


def _check_dest(dest):
    """Create the report directory, or say in words why it cannot hold the report."""
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise ReportWriteError('the report directory %s is not a directory (a file of that name exists)' % dest)
    if not os.path.isdir(dest):
        try:
            os.makedirs(dest)
        except OSError as exc:
            raise ReportWriteError('the report directory %s cannot be created: %s' % (dest, exc.strerror or exc))
    if not os.access(dest, os.W_OK | os.X_OK):
        raise ReportWriteError('the report directory %s is read-only for this user' % dest)


def write(report, dest, formats):
    """Write every format; returns ({format: path}, [problems]). Never raises for one bad file."""
    renderers = {
        'json': lambda r: _COMPACT.encode(r) + '\n',
        'junit': lambda r: '<?xml version="1.0" encoding="UTF-8"?>\n' + to_junit(r) + '\n',
        'html': render_html,
    }
    dest = os.path.abspath(dest)
    try:
        _check_dest(dest)
    except ReportWriteError as exc:
        return {}, [str(exc)]
    paths, problems = {}, []
    for fmt in formats:
        path = os.path.join(dest, REPORT_FILES[fmt])
        try:
            _atomic_write(path, renderers[fmt](report))
        except (IOError, OSError) as exc:
            problems.append('%s was not written: %s' % (path, exc.strerror or exc))
            continue
        paths[fmt] = path
    return paths, problems
