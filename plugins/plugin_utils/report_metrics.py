# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report as Prometheus metrics (text exposition format 0.0.4), for node_exporter's
textfile collector.

Cardinality is bounded by hosts x checks: labels are the host's inventory name, the check id,
and closed sets (status, state, change); never a summary or any other free text. Metric names
and help texts are stable: alert rules and dashboards depend on them (docs/prometheus/).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, STATUSES
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_time import unix

PREFIX = 'homelab_postmortem_'
FILE = 'postmortem.prom'
HOST_STATES = ('audited', 'unreachable', 'failed')
DRIFT_CHANGES = ('opened', 'reopened', 'closed', 'unmeasured', 'unchanged')

METRICS = (
    ('finding_status', 'gauge', 'Status of one check on one host: 0 not_applicable, 1 ok, 2 unknown, 3 error, '
                                '4 at_risk, 5 affected (absent while the host could not be audited).'),
    ('finding_accepted', 'gauge', '1 while the finding is accepted in postmortem_accept (not expired).'),
    ('finding_opened', 'gauge', '1 when this audit opened or reopened the finding (it entered at_risk or affected '
                                'since the previous audit).'),
    ('findings', 'gauge', 'Findings per check and status in the last audit.'),
    ('host_audited', 'gauge', '1 when the host was audited, 0 when it could not be; state says why.'),
    ('last_measured_timestamp_seconds', 'gauge', 'When a run last measured the host (Unix time); for a host no run has '
                                                 'measured yet, when the audits first listed it.'),
    ('hosts', 'gauge', 'Hosts per state in the last audit.'),
    ('drift_findings', 'gauge', 'Findings per change since the previous audit.'),
    ('drift_hosts', 'gauge', 'Hosts that appeared in or vanished from the audit since the previous one.'),
    ('nothing_audited', 'gauge', '1 when the last run audited no host at all.'),
    ('last_run_timestamp_seconds', 'gauge', 'When the last audit report was written (Unix time).'),
    ('run_duration_seconds', 'gauge', 'How long the last audit took, from its input check to its report.'),
    ('info', 'gauge', 'The collection version and kind of run that wrote these metrics.'),
)
STATUS_VALUE = dict((s, STATUS_RANK[s]) for s in STATUSES)


def escape(value):
    """A label value as the exposition format wants it: backslash, double quote and newline escaped."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _labels(**labels):
    return '{' + ','.join('%s="%s"' % (k, escape(v)) for k, v in labels.items()) + '}'


def _number(value):
    if isinstance(value, float):
        return repr(round(value, 3))
    return str(int(value))


def _last_measured(entry, generated_at):
    if entry['state'] == 'audited':
        return generated_at
    return unix(entry.get('last_measured_at')) or unix(entry.get('unmeasured_since'))


def render(report, written_at, duration=None):
    """The metrics text (a trailing newline included); written_at is a Unix time."""
    samples = dict((name, []) for name, _kind, _help in METRICS)
    counts = {}
    host_counts = dict((s, 0) for s in HOST_STATES)
    generated_at = unix(report.get('generated_at'))
    for entry in report['hosts']:
        state = entry['state'] if entry['state'] in HOST_STATES else 'failed'
        host_counts[state] += 1
        samples['host_audited'].append((_labels(host=entry['name'], state=state), 1 if state == 'audited' else 0))
        measured = _last_measured(entry, generated_at)
        if measured is not None:
            samples['last_measured_timestamp_seconds'].append((_labels(host=entry['name']), measured))
        for cid, finding in sorted(entry['findings'].items()):
            status = finding.get('status')
            if status not in STATUS_VALUE:
                continue
            labels = _labels(host=entry['name'], check=cid)
            samples['finding_status'].append((labels, STATUS_VALUE[status]))
            if cid in (entry.get('accepted') or {}):
                samples['finding_accepted'].append((labels, 1))
            if (entry.get('drift') or {}).get(cid) in ('opened', 'reopened'):
                samples['finding_opened'].append((labels, 1))
            counts[(cid, status)] = counts.get((cid, status), 0) + 1
    for check in report['checks']:
        for status in STATUSES:
            samples['findings'].append((_labels(check=check['id'], status=status), counts.get((check['id'], status), 0)))
    for state in HOST_STATES:
        samples['hosts'].append((_labels(state=state), host_counts[state]))
    drift = report.get('drift') or {}
    if drift.get('since'):
        for change in DRIFT_CHANGES:
            samples['drift_findings'].append((_labels(change=change), (drift.get('counts') or {}).get(change, 0)))
        samples['drift_hosts'].append((_labels(change='appeared'), len(drift.get('hosts_appeared') or [])))
        samples['drift_hosts'].append((_labels(change='vanished'), len(drift.get('hosts_vanished') or [])))
    samples['nothing_audited'].append(('', 1 if report.get('nothing_audited') else 0))
    samples['last_run_timestamp_seconds'].append(('', float(written_at)))
    if duration is not None:
        samples['run_duration_seconds'].append(('', float(duration)))
    samples['info'].append((_labels(version=str(report.get('generator', '')).rsplit(' ', 1)[-1],
                                    kind=report.get('kind', 'audit')), 1))
    lines = []
    for name, kind, text in METRICS:
        if not samples[name]:
            continue
        lines.append('# HELP %s%s %s' % (PREFIX, name, text))
        lines.append('# TYPE %s%s %s' % (PREFIX, name, kind))
        lines.extend('%s%s%s %s' % (PREFIX, name, labels, _number(value)) for labels, value in samples[name])
    return '\n'.join(lines) + '\n'
