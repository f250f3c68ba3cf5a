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
import tempfile
import xml.etree.ElementTree as ET

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, STATUSES, worst_status
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_html import render_html

# Host states that are not findings. For the fail threshold they count as
# ``error``: an operator who fails on errors wants to hear about a host that
# could not be audited at all.
HOST_PROBLEMS = ('unreachable', 'failed')
REPORT_FILES = {'json': 'postmortem.json', 'junit': 'postmortem-junit.xml', 'html': 'postmortem.html'}


def plain(value):
    """Deep copy into plain JSON types (Ansible hands us tagged/lazy containers)."""
    if isinstance(value, dict) or hasattr(value, 'items'):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def host_entry(name, result):
    """Turn one host's registered audit_facts result into the report's host record."""
    if result is None:
        return {'name': name, 'state': 'failed', 'reason': 'no audit result: the host left the play before the audit ran',
                'findings': {}}
    result = plain(result)
    if result.get('unreachable'):
        return {'name': name, 'state': 'unreachable', 'reason': (result.get('msg') or 'host unreachable').strip(),
                'findings': {}}
    if result.get('failed'):
        return {'name': name, 'state': 'failed', 'reason': (result.get('msg') or 'audit module failed').strip(),
                'findings': {}}
    if result.get('skipped'):
        return {'name': name, 'state': 'failed', 'reason': 'audit task was skipped on this host', 'findings': {}}
    facts = result.get('ansible_facts') or {}
    findings = facts.get('postmortem') or {}
    return {'name': name, 'state': 'audited', 'reason': None, 'findings': findings,
            'run': facts.get('postmortem_run') or {}}


def build(hosts, results, checks, collection_version, now=None):
    """hosts: names in inventory order; results: {host: registered result or None};
    checks: [(id, title)] in report order."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    entries = [host_entry(h, results.get(h)) for h in hosts]
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


def threshold_reached(report, fail_on):
    if not fail_on or fail_on == 'never':
        return []
    hits = []
    for entry in report['hosts']:
        if entry['state'] != 'audited' and STATUS_RANK['error'] >= STATUS_RANK[fail_on]:
            hits.append('%s: %s' % (entry['name'], entry['state']))
        for cid, finding in entry['findings'].items():
            if STATUS_RANK.get(finding.get('status'), STATUS_RANK['error']) >= STATUS_RANK[fail_on]:
                hits.append('%s/%s: %s' % (entry['name'], cid, finding.get('status')))
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
            body = json.dumps({'evidence': finding.get('evidence'), 'remediation': finding.get('remediation'),
                               'references': finding.get('references')}, indent=2, sort_keys=True)
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
    return ET.tostring(suites, encoding='unicode')


def summary_lines(report, paths):
    checks = [c['id'] for c in report['checks']]
    rows = [['HOST'] + checks]
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            rows.append([entry['name']] + [entry['state'].upper()] * len(checks))
        else:
            rows.append([entry['name']] + [effective_status(entry, c) or '-' for c in checks])
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ['homelab.postmortem audit: %d host(s), %d check(s)' % (len(report['hosts']), len(checks)), '']
    for row in rows:
        lines.append('  '.join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    attention = []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            attention.append('%s: %s: %s' % (entry['name'], entry['state'], entry['reason']))
            continue
        for cid in checks:
            finding = entry['findings'].get(cid)
            if finding and finding.get('status') in ('affected', 'at_risk', 'error', 'unknown'):
                attention.append('%s %s [%s] %s' % (entry['name'], cid, finding['status'], finding.get('summary', '')))
    if attention:
        lines += ['', 'Needs attention:'] + ['  ' + a for a in attention]
    totals = ', '.join('%s %d' % (k, report['totals'][k]) for k in STATUSES + HOST_PROBLEMS if k in report['totals'])
    lines += ['', 'Totals: ' + (totals or 'nothing ran')]
    if paths:
        lines.append('Reports: ' + '  '.join(paths[k] for k in ('html', 'json', 'junit') if k in paths))
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


def write(report, dest, formats):
    if not os.path.isdir(dest):
        os.makedirs(dest)
    paths = {}
    renderers = {
        'json': lambda r: json.dumps(r, indent=2, sort_keys=True) + '\n',
        'junit': lambda r: '<?xml version="1.0" encoding="UTF-8"?>\n' + to_junit(r) + '\n',
        'html': render_html,
    }
    for fmt in formats:
        path = os.path.abspath(os.path.join(dest, REPORT_FILES[fmt]))
        _atomic_write(path, renderers[fmt](report))
        paths[fmt] = path
    return paths
