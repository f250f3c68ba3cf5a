# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The terminal summary of a fleet report: it fits a screen at any fleet size.

At most about 60 lines whatever the fleet (every host failing every check included), each line
at most WIDTH columns, in a deterministic order: counts per check and status; per check, the
first hosts that need attention; per host, only the worst finding with what to do, for the
WORST_HOSTS worst hosts; the remediation's outcome; totals; what the gate decided (or would
have, had it been on); where the full report is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DISRUPTIONS, STATUS_RANK, STATUSES, json_safe
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_answer, role_specs
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import HOST_PROBLEMS, INTERPRETER_FIX, NOT_STARTED, OPEN
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_time import age
from ansible_collections.homelab.postmortem.plugins.plugin_utils.terminal import visible

WIDTH = 100
LINES = 60
WORST_HOSTS = 8
MIN_WORST_HOSTS = 3
ACCEPTED_SHOWN = 10
# Statuses that need a person: a fix, or a look at why the audit could not tell.
ATTENTION = ('affected', 'at_risk', 'error', 'unknown')
_SHORT = {'not_applicable': 'n/a', 'unreachable': 'unreach'}


def one_line(text, limit=500):
    """A text on one line: runs of whitespace (\\r\\n from ssh, tabs) folded to one space. A value
    that is not text (a host's summary may be anything) is shown cut to a few levels, so that
    printing it cannot recurse through whatever nesting it has."""
    if not isinstance(text, str):
        text = str(json_safe(text, 3)) if text else ''
    return ' '.join(text.split())[:limit]


def fit(line, width=WIDTH):
    return line if len(line) <= width else line[:width - 3] + '...'


def offered_remediation(cid):
    """A copy of the registry's REMEDIATION for a check ({} for one it does not know): the only source of
    the fix the summary and the HTML report offer. The role variables that are switches (Disruptive: in
    the role's spec) move to ``switches``: remediate never passes them for the user (remediation.advice),
    so showing them as the role's variables would promise a reboot or restart nobody asked for."""
    detection = registry.BY_ID.get(cid)
    if detection is None:
        return {}
    offered = json.loads(json.dumps(detection.REMEDIATION))
    role_vars = offered.get('vars') or {}
    if offered.get('role') and role_vars:
        options = _role_options(offered['role'])
        switches = sorted(name for name in role_vars if name in options and role_specs.is_switch(options[name]))
        if switches:
            offered['vars'] = dict((name, value) for name, value in role_vars.items() if name not in switches)
            offered['switches'] = switches
    return offered


_ROLE_OPTIONS = {}


def _role_options(role):
    """A role's declared options, read once per run (the summary and the page ask for every check)."""
    if role not in _ROLE_OPTIONS:
        _ROLE_OPTIONS[role] = role_specs.load(role).get('options') or {}
    return _ROLE_OPTIONS[role]


def fix_text(cid, finding, declared=None):
    """The remediation named in one phrase: role and vars, module, or the first manual step. What is
    offered comes from the registry's REMEDIATION for the check, never from the host's finding (a
    host must not be able to suggest a role to run); only the disruption a host reports (an image has
    none to reboot) is taken, when it is one of the model's. A declared check's (``declared``: its
    entry in the report's checks) is its check file's advice and docs link, never a role."""
    if declared:
        advice = declared.get('advice') or []
        return '%s (docs: %s)' % (one_line(advice[0], 200) if advice else 'see its docs', one_line(declared.get('docs'), 300))
    remediation = offered_remediation(cid)
    reported = finding.get('remediation') if isinstance(finding, dict) else None
    if isinstance(reported, dict) and reported.get('disruption') in DISRUPTIONS:
        remediation['disruption'] = reported['disruption']
    parts = []
    if remediation.get('role'):
        role_vars = remediation.get('vars') or {}
        shown = (' with %s' % json.dumps(role_vars, sort_keys=True)) if role_vars else ''
        if remediation.get('switches'):
            shown += ' (switch: %s)' % ', '.join(remediation['switches'])
        parts.append('role %s%s' % (remediation['role'], shown))
    if remediation.get('module'):
        parts.append('module %s' % remediation['module'])
    manual = remediation.get('manual')
    if not parts and manual:
        parts.append(one_line(manual[0], 200))
    text = ' or '.join(parts) or 'see the docs page'
    if remediation.get('disruption') and remediation.get('disruption') != 'none':
        text += ' (disruption: %s)' % remediation['disruption']
    return text


def host_status(entry, check_id):
    """A check's status on a host; a host that was not audited has its state for every check."""
    if entry['state'] != 'audited':
        return entry['state']
    finding = entry['findings'].get(check_id)
    return finding.get('status', 'error') if isinstance(finding, dict) else None


def _rank(status):
    # A host that could not be audited counts as error, as the fail threshold counts it.
    return STATUS_RANK.get(status, STATUS_RANK['error'])


def worst_finding(entry, checks):
    """(check id, status) of the host's most serious finding that needs attention; report order
    breaks ties. (None, state) for a host that was not audited; None when nothing needs attention."""
    if entry['state'] != 'audited':
        return None, entry['state']
    best = None
    accepted = entry.get('accepted') or {}
    for cid in checks:
        status = host_status(entry, cid)
        if cid not in accepted and status in ATTENTION and (best is None or _rank(status) > _rank(best[1])):
            best = (cid, status)
    return best


def _counts_table(report, checks):
    shown = [s for s in reversed(STATUSES) if s in report['totals']]
    header = ['CHECK'] + [_SHORT.get(s, s) for s in shown]
    rows = []
    for cid in checks:
        counts = dict((s, 0) for s in shown)
        for entry in report['hosts']:
            status = host_status(entry, cid) if entry['state'] == 'audited' else None
            if status in counts:
                counts[status] += 1
        rows.append([cid] + [counts[s] or '-' for s in shown])
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    lines = []
    for row in [header] + rows:
        cells = [str(row[0]).ljust(widths[0])] + [str(c).rjust(widths[i + 1]) for i, c in enumerate(row[1:])]
        lines.append(fit('  ' + '  '.join(cells).rstrip()))
    return lines


def _names(names, room):
    """As many names as fit in ``room`` columns, then "+N more" (its width reserved)."""
    shown, used = [], 0
    for position, name in enumerate(names):
        rest = len(names) - position - 1
        reserve = len(' +%d more' % rest) if rest else 0
        cost = len(name) + (2 if shown else 0)
        if shown and used + cost + reserve > room:
            break
        shown.append(name)
        used += cost
    more = len(names) - len(shown)
    return ', '.join(shown) + ((' +%d more' % more) if more else '')


def _per_check(report, checks):
    """Per check with hosts that need attention: the names that fit on its line per status, +N more."""
    lines = []
    for cid in checks:
        by_status = {}
        for entry in report['hosts']:
            if entry['state'] == 'audited' and cid not in (entry.get('accepted') or {}):
                status = host_status(entry, cid)
                if status in ATTENTION:
                    by_status.setdefault(status, []).append(entry['name'])
        if not by_status:
            continue
        statuses = sorted(by_status, key=lambda s: -_rank(s))
        room = (WIDTH - len('  %s: ' % cid) - sum(len(s) + 3 for s in statuses)) // len(statuses)
        parts = ['%s %s' % (status, _names(by_status[status], max(room, 12))) for status in statuses]
        lines.append(fit('  %s: %s' % (cid, '; '.join(parts))))
    unaudited = [e for e in report['hosts'] if e['state'] != 'audited']
    if unaudited:
        names = ['%s (%s)' % (e['name'], e['state']) for e in unaudited]
        lines.append(fit('  not audited: %s' % _names(names, WIDTH - len('  not audited: '))))
    return lines


def _host_lines(entry, checks, cid, status, declared):
    """The lines of one host in the worst-findings list: what, where, and what fixes it."""
    if cid is None:
        reason = one_line(entry.get('reason'))
        lines = [fit('  %s: %s (not audited)' % (entry['name'], status))]
        # Made visible before it is cut, so that escapes cannot push the line past its width.
        lines.append(fit('      %s' % visible(reason)))
        if status == 'failed' and reason.startswith(NOT_STARTED):
            # A host's own failure message could begin so too: it would only get this advice.
            lines.append('      fix: %s' % INTERPRETER_FIX)
        else:
            lines.append('      fix: make the host reachable and auditable, then audit again')
        return lines
    finding = entry['findings'][cid]
    others = sum(1 for c in checks if c != cid and host_status(entry, c) in ATTENTION)
    lines = [fit('  %s: %s [%s]%s' % (entry['name'], cid, status, (' (+%d more on this host)' % others) if others else ''))]
    lines += report_answer.wrapped_at_most(visible(one_line(finding.get('summary'))), 2, '      ', '      ')
    if status in OPEN:
        fix = (entry.get('fix') or {}).get(cid)
        lines += report_answer.fix_lines(fix) if fix else [fit('      fix: %s' % fix_text(cid, finding, declared.get(cid)))]
    else:
        # Nothing was measured to fix: say so rather than offer a restart for a guess.
        lines.append(fit('      no fix offered: the audit could not tell (%s); the reason is above' % status))
    return lines


def _worst_hosts(report, checks, budget):
    """The worst finding of the worst hosts with the command that fixes it, in ``budget`` lines at most
    (at least MIN_WORST_HOSTS hosts)."""
    needing = []
    for position, entry in enumerate(report['hosts']):
        worst = worst_finding(entry, checks)
        if worst is not None:
            needing.append((-_rank(worst[1]), position, entry, worst))
    needing.sort(key=lambda item: item[:2])
    if not needing:
        return ['', 'Nothing needs attention.']
    declared = dict((c['id'], c['declared']) for c in report['checks'] if c.get('declared'))
    blocks, used = [], 3
    for _rank_key, _position, entry, (cid, status) in needing[:WORST_HOSTS]:
        block = _host_lines(entry, checks, cid, status, declared)
        if len(blocks) >= MIN_WORST_HOSTS and used + len(block) > budget:
            break
        blocks.append(block)
        used += len(block)
    shown = len(blocks)
    lines = ['', 'Worst finding per host (%d host(s) need attention%s):' % (
        len(needing), ', the worst %d shown' % shown if len(needing) > shown else '')]
    for block in blocks:
        lines += block
    if len(needing) > shown:
        lines.append('  ... and %d more host(s): every host and finding is in the full report' % (len(needing) - shown))
    return lines


def remediation_lines(report):
    """What the remediation did to each open finding (report_answer.outcome_lines), the audit before against
    after, what failed or was not run per host, the advice not used, the roles' notes."""
    lines = report_answer.outcome_lines(report) + report_answer.before_after_lines(report)
    for state, label in (('failed', 'remediation FAILED'), ('lost', 'LOST during remediation'),
                         ('not_run', 'remediation not run')):
        hit = [e for e in report['hosts'] if (e.get('remediation') or {}).get('state') == state]
        if not hit:
            continue
        record = hit[0]['remediation']
        where = " in '%s'" % one_line(record['task'], 200) if record.get('task') else ''
        also = (' (+%d more host(s))' % (len(hit) - 1)) if len(hit) > 1 else ''
        lines.append(fit('  %s%s: %s%s: %s' % (hit[0]['name'], also, label, where, one_line(record.get('reason'), 400))))
    advised = [e for e in report['hosts'] if (e.get('remediation') or {}).get('dropped')]
    if advised:
        first = advised[0]['remediation']['dropped']
        lines.append(fit('  advice from %d host(s) not used (roles get the registry\'s variables and yours): %s: %s' % (
            len(advised), advised[0]['name'], one_line(first[0] if isinstance(first, list) and first else first, 300))))
    return lines + report_answer.note_lines(report)


def docs_dir():
    """Where the detections' docs pages are: the collection's own docs/ (a checkout or an installed
    collection: the same relative place), so the path works wherever the collection came from."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), 'docs')


def summary_lines(report, paths):
    checks = [c['id'] for c in report['checks']]
    hosts = report['hosts']
    run = report.get('run') or {}
    title = 'homelab.postmortem %s: %d host(s), %d check(s)%s' % (
        'remediation' if any('before' in e or 'remediation' in e for e in hosts) else 'audit', len(hosts), len(checks),
        ' (check mode)' if run.get('check_mode') else '')
    if report.get('nothing_audited') and not hosts:
        return [fit(title), '', fit('NOTHING WAS AUDITED: %s.' % report['nothing_audited'])] + last_good_lines(report) + _where(paths)
    head = [fit(title)]
    if report.get('nothing_audited'):
        # Hosts matched and none could be audited: the hosts' reasons follow, among those that need attention.
        head += ['', fit('NOTHING WAS AUDITED: %s.' % report['nothing_audited'].split(':', 1)[0])] + last_good_lines(report)
    # The answer first (#44): what changed, what the remediation did, the worst findings with the command
    # that fixes each; the counts and the reasons behind n/a and unknown after them.
    head += drift_lines(report)
    if any('before' in e or 'remediation' in e for e in hosts):
        head += [''] + remediation_lines(report)
    tail = accept_lines(report)
    attention = _per_check(report, checks)
    at = len(tail)
    if attention:
        tail += ['', 'Hosts that need attention, per check:'] + attention
    tail += report_answer.why_nothing_lines(report, checks)
    if not report.get('nothing_audited') and len(hosts) > 1:
        # One host's counts are its findings, said above: the table is for fleets.
        tail += ['', 'Findings per check (number of hosts):'] + _counts_table(report, checks)
    totals = ', '.join('%s %d' % (k, report['totals'][k]) for k in STATUSES + HOST_PROBLEMS if k in report['totals'])
    # Paths are printed whole (a cut path is useless), on lines of their own.
    tail += ['', fit('Totals: ' + (totals or 'nothing ran')), 'Docs per check (<check>.md):', '  %s' % docs_dir()]
    tail += _where(paths)
    # The gate's line (report_gate.Policy.line) follows: one more line of the budget.
    worst = _worst_hosts(report, checks, LINES - 1 - len(head) - len(tail))
    over = len(head) + len(worst) + len(tail) + 1 - LINES
    if over > 0 and len(attention) > 2:
        # The worst findings with their commands come first: the per-check list (the counts say the same) gives way.
        keep = max(1, len(attention) - over - 1)
        tail[at + 2:at + 2 + len(attention)] = attention[:keep] + [
            '  ... and %d more check(s): every host and finding is in the full report' % (len(attention) - keep)]
    return head + worst + tail


def _where(paths):
    """Where the full report is: paths are printed whole, even where one is wider than the screen."""
    shown = [paths[k] for k in ('html', 'json', 'junit') if k in (paths or {})]
    if not shown:
        return []
    return ['Full report: %s' % shown[0]] + ['             %s' % p for p in shown[1:]]


def last_good_lines(report):
    """Where the last good audit's report is, when a run that audited nothing replaced it."""
    kept = report.get('last_good')
    if not kept or not kept.get('paths'):
        return []
    shown = [kept['paths'][k] for k in ('html', 'json', 'junit') if k in kept['paths']]
    return [fit('The last good report (%s, %s host(s)) is kept as:' % (kept.get('generated_at'), kept.get('hosts')))] + \
        ['  %s' % path for path in shown]


def unmeasured_lines(report):
    """Hosts and open findings the audits have not been able to measure, and for how long."""
    now = report.get('generated_at')
    names = []
    for entry in report['hosts']:
        if entry['state'] != 'audited' and entry.get('unmeasured_since'):
            names.append('%s %s' % (entry['name'], age(entry['unmeasured_since'], now)))
    for entry in report['hosts']:
        since = entry.get('unmeasured') or {}
        names.extend('%s/%s %s' % (entry['name'], cid, age(since.get(cid), now))
                     for cid, change in sorted((entry.get('drift') or {}).items())
                     if change == 'unmeasured' and entry['state'] == 'audited')
    if not names:
        return []
    return [fit('  not measured: %s' % _names(names, WIDTH - len('  not measured: ')))]


def drift_lines(report):
    """What changed since the previous audit, first: 'Since 2026-11-30T02:00:00Z: 2 opened, 1 closed.'"""
    drift = report.get('drift')
    if not drift:
        return []
    if not drift.get('since'):
        return [fit('Drift: %s.' % drift.get('note'))]
    counts = drift.get('counts') or {}
    parts = ['%d %s' % (counts[c], c) for c in ('opened', 'reopened', 'closed', 'unmeasured') if counts.get(c)]
    if drift.get('hosts_appeared'):
        parts.append('%d new host(s)' % len(drift['hosts_appeared']))
    if drift.get('hosts_vanished'):
        parts.append('%d host(s) not in this run' % len(drift['hosts_vanished']))
    lines = [fit('Since %s: %s.' % (drift['since'], ', '.join(parts) or 'nothing changed'))]
    changed = []
    for entry in report['hosts']:
        changed.extend('%s/%s%s' % (entry['name'], cid, ' (reopened)' if change == 'reopened' else '')
                       for cid, change in sorted((entry.get('drift') or {}).items()) if change in ('opened', 'reopened'))
    if changed:
        lines.append(fit('  now open: %s' % _names(changed, WIDTH - len('  now open: '))))
    closed = ['%s/%s' % (entry['name'], cid) for entry in report['hosts']
              for cid, change in sorted((entry.get('drift') or {}).items()) if change == 'closed']
    if closed:
        lines.append(fit('  closed: %s' % _names(closed, WIDTH - len('  closed: '))))
    lines += unmeasured_lines(report)
    if drift.get('hosts_dropped'):
        lines.append(fit('  dropped from the history (no run listed them for %s days): %s' % (
            drift.get('dropped_after_days'), _names(drift['hosts_dropped'], WIDTH - 60))))
    return lines


def accept_lines(report):
    """Accepted findings (postmortem_accept): how many, expired ones, entries that match nothing."""
    accept = report.get('accept')
    if not accept:
        return []
    if accept.get('problem'):
        return [fit('Accepted findings: NONE, %s' % accept['problem'])]
    line = 'Accepted (postmortem_accept): %d finding(s)' % accept.get('accepted', 0)
    if accept.get('expired'):
        line += '; %d expired, counting again' % accept['expired']
    lines = [fit(line + '.')]
    named = [(entry['name'], cid, item) for entry in report['hosts']
             for cid, item in sorted((entry.get('accepted') or {}).items()) if isinstance(item, dict)]
    for host, cid, item in named[:ACCEPTED_SHOWN]:
        until = (', until %s' % item['expires']) if item.get('expires') else ''
        lines.append(fit('  accepted: %s/%s (#%s%s): %s' % (host, cid, item.get('entry'), until, one_line(item.get('reason'), 300))))
    if len(named) > ACCEPTED_SHOWN:
        lines.append('  ... and %d more accepted finding(s): see the full report' % (len(named) - ACCEPTED_SHOWN))
    expired = accept.get('expired_entries') or []
    if expired:
        named = ['#%d %s/%s (since %s)' % (e['number'], e['host'], e['check'], e['expires']) for e in expired]
        lines.append(fit('  expired: %s' % _names(named, WIDTH - len('  expired: '))))
    unmatched = accept.get('unmatched') or []
    if unmatched:
        lines.append(fit('  %d entr%s match nothing in this run: %s' % (
            len(unmatched), 'y' if len(unmatched) == 1 else 'ies',
            _names(['#%d %s/%s' % (e['number'], e['host'], e['check']) for e in unmatched], WIDTH - 40))))
    return lines
