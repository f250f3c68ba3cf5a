# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report as one self-contained HTML page (no network, no external files).

The page opens fast at any fleet size: it parses only a small index (host names and one
letter per check), shows hosts per check and status first, and draws the host grid a page
at a time. Each host's findings sit in blocks of CHUNK hosts, gzip-compressed and base64-encoded
(a 10,000-host report is a tenth of its evidence's size), that the browser decompresses
(DecompressionStream) and parses only when one of their cells is opened; a browser without
DecompressionStream says so and points to postmortem.json. Everything is drawn with textContent
only: evidence comes from hosts and is never trusted as markup.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import heapq
import json
import os
import zlib
from html import escape as _escape

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DISRUPTIONS, STATUS_RANK
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_summary
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_docs import DOCS_DIR
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_html_page import PAGE

CHUNK = 200
# The worst hosts the page shows without JavaScript, rendered by the controller: bounded, so that a
# 10,000-host page grows by a few dozen kilobytes at most.
WORST_HOSTS = 100
WORST_TEXT = 200
# One or two characters a cell, so that every column fits at 1280 px with twice today's checks.
SHORT = {'ok': 'ok', 'affected': 'A', 'at_risk': 'R', 'unknown': '?', 'error': 'E', 'not_applicable': '\u2013',
         'unreachable': 'U', 'failed': 'F'}
HOST_STATES = ('unreachable', 'failed')
DRIFT_CODES = {'opened': 'o', 'reopened': 'r', 'closed': 'c', 'unmeasured': 'u'}
GZIP_LEVEL = 1
CODES = {'not_applicable': 'n', 'ok': 'o', 'unknown': 'u', 'error': 'e', 'at_risk': 'r', 'affected': 'a'}
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(',', ':'))


def _script_safe(text):
    # Inside <script>, "</script>" or "<!--" in host-supplied evidence would end
    # the element; escaping <, > and & keeps the JSON identical once parsed.
    return text.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')


def _script_safe_json(data):
    return _script_safe(_ENCODER.encode(data))


def _accepted_text(entry):
    return '%s%s' % (entry.get('reason'), (' (until %s)' % entry['expires']) if entry.get('expires') else '')


def _text(value, limit=WORST_TEXT):
    """A value (a host's, often) as HTML text: on one line, cut, escaped (quotes too: attributes hold it)."""
    return _escape(report_summary.one_line(value, limit), True)


def _check_fix(check):
    """The fix the page offers for a check: the registry's REMEDIATION, or a declared check's advice."""
    declared = check.get('declared')
    if declared:
        return {'manual': [report_summary.one_line(a, 500) for a in declared.get('advice') or []]}
    return report_summary.offered_remediation(check['id'])


def index(report):
    """What the page parses on load: host names, states and one letter per check."""
    check_ids = [c['id'] for c in report['checks']]
    hosts = []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            hosts.append({'n': entry['name'], 's': entry['state'], 'r': entry['reason'], 'c': ''})
            continue
        codes = ''.join(CODES.get((entry['findings'].get(cid) or {}).get('status'), '-') for cid in check_ids)
        hosts.append({'n': entry['name'], 's': 'audited', 'c': codes})
    compared = bool((report.get('drift') or {}).get('since'))
    for host, entry in zip(hosts, report['hosts']):
        changes = (entry.get('drift') or {}) if compared else {}
        if changes:  # one letter per check: what changed since the previous audit
            host['d'] = ''.join(DRIFT_CODES.get(changes.get(cid), '-') for cid in check_ids)
        if entry.get('unmeasured_since'):  # a host not audited: since when, and when it last was
            host['u'] = 'Not measured since %s%s.' % (entry['unmeasured_since'], (
                ' (last measured %s)' % entry['last_measured_at']) if entry.get('last_measured_at') else ' (never measured)')
        if entry.get('unmeasured'):  # checks the audit could not measure, since when
            host['w'] = dict((str(i), entry['unmeasured'][cid]) for i, cid in enumerate(check_ids) if cid in entry['unmeasured'])
        if entry.get('accepted'):
            host['a'] = dict((str(i), _accepted_text(entry['accepted'][cid]))
                             for i, cid in enumerate(check_ids) if cid in entry['accepted'])
        remediation = entry.get('remediation') or {}
        if remediation.get('state') in ('failed', 'lost', 'not_run'):  # the hosts a remediation run left alone or broke on
            host['m'] = {'s': remediation['state'], 'r': remediation.get('reason') or '', 't': remediation.get('task')}
        if remediation.get('notes'):  # what a fix role said only in its own task output (remediation.role_notes)
            # The role's short name, as the terminal summary prints it (homelab.postmortem.pi_ir_tx -> pi_ir_tx).
            host['o'] = [{'r': note['role'].rsplit('.', 1)[-1], 't': note['note']} for note in remediation['notes']]
    checks = [dict(c, fix=_check_fix(c)) for c in report['checks']]
    found = {'generator': report['generator'], 'generated_at': report['generated_at'], 'checks': checks,
             'statuses': report['statuses'], 'totals': report['totals'], 'hosts': hosts, 'chunk': CHUNK,
             'codes': dict((v, k) for k, v in CODES.items()), 'short': SHORT, 'disruptions': list(DISRUPTIONS)}
    # The built-in checks' pages, rendered beside the report (report_docs.DOCS_DIR): a relative link opens anywhere.
    found['docs'] = DOCS_DIR
    drift = report.get('drift') or {}
    if drift.get('since'):
        found['drift'] = {'since': drift['since'], 'counts': drift.get('counts') or {}}
    if report.get('accept'):
        found['accept'] = dict((k, report['accept'].get(k)) for k in ('accepted', 'expired', 'problem'))
    return found


def _meta(report):
    checked = (report.get('run') or {}).get('check_mode')
    return _text('%s \u2014 generated %s \u2014 %d host(s), %d check(s)%s' % (
        report['generator'], report['generated_at'], len(report['hosts']), len(report['checks']),
        ' \u2014 CHECK MODE: nothing was changed' if checked else ''), 500)


OUTCOME_WORDS = (('fixed', 'fixed'), ('would_fix', 'would fix'), ('manual', 'need a change by hand'), ('failed', 'FAILED'),
                 ('not_run', 'not run'), ('nothing_to_do', 'nothing to do'))


def _totals(report):
    """The totals (a remediation's outcomes first: before/after is what that page is for), and when nothing
    was audited, why (with the last good report's link)."""
    parts = []
    if report.get('kind') == 'remediation':
        outcomes = report.get('outcomes') or {}
        parts.append('<div id="outcomes"><strong>Remediation%s:</strong> %s</div>' % (
            ' (check mode: nothing was changed)' if (report.get('run') or {}).get('check_mode') else '',
            ' '.join('<span data-outcome="%s">%s %d</span>' % (key, word, outcomes[key]) for key, word in OUTCOME_WORDS
                     if outcomes.get(key)) or 'no finding was open before the run'))
    parts += ['<span data-total="%s">%s: %d</span>' % (s, s, report['totals'][s])
              for s in list(report['statuses']) + list(HOST_STATES) if report['totals'].get(s)]
    if report.get('nothing_audited'):
        parts.append('<strong id="nothing-audited">NOTHING WAS AUDITED: %s. This is not an older run\'s report.</strong>'
                     % _text(report['nothing_audited'], 2000))
        kept = report.get('last_good') or {}
        if (kept.get('paths') or {}).get('html'):  # beside this page: a relative link works wherever the directory goes
            href = _text(os.path.basename(kept['paths']['html']), 500)
            parts.append('<p id="last-good">The last good report (%s) is kept: <a href="%s">%s</a></p>' % (
                _text(kept.get('generated_at')), href, href))
    return '\n'.join(parts)


def worst_hosts(report, limit=WORST_HOSTS):
    """(how many hosts need attention, [(entry, check id or None, status)] of the ``limit`` worst), ranked as
    the summary ranks them (report_summary.worst_finding; a host not audited counts as an error)."""
    checks = [c['id'] for c in report['checks']]
    needing = []
    for position, entry in enumerate(report['hosts']):
        worst = report_summary.worst_finding(entry, checks)
        if worst is not None:
            needing.append((-STATUS_RANK.get(worst[1], STATUS_RANK['error']), position, entry, worst))
    return len(needing), [(entry, cid, status) for _r, _p, entry, (cid, status) in heapq.nsmallest(limit, needing)]


def _fix_cell(entry, cid, status, declared, row):
    """The fix of one row of the worst-findings table: the remediate command (selectable, with a copy
    button), the step by hand, or why none is offered."""
    if cid is None:
        return 'the reason says why it could not be audited'
    if status not in report_summary.OPEN:
        return 'no fix offered: the audit could not tell (%s)' % _text(status)
    fix = (entry.get('fix') or {}).get(cid)
    if isinstance(fix, dict) and isinstance(fix.get('command'), str):
        return ('<code class="cmd" id="cmd-%d">%s</code><button type="button" class="copy" data-for="cmd-%d">Copy</button>%s' % (
            row, _text(fix['command'], 4000), row, ('<br>%s' % _text(fix['note'], 300)) if fix.get('note') else ''))
    if isinstance(fix, dict) and isinstance(fix.get('manual'), str):
        return 'by hand: %s' % _text(fix['manual'], 500)
    return _text(report_summary.fix_text(cid, entry['findings'][cid], declared.get(cid)), 300)


def _worst(report):
    """The worst finding per host with the command that fixes it: the first thing on the page (#44), and
    what a reader without JavaScript sees."""
    needing, rows = worst_hosts(report)
    declared = dict((c['id'], c['declared']) for c in report['checks'] if c.get('declared'))
    lines = ['<section id="worst"><h2>What needs attention: the worst finding per host, and its fix</h2>']
    if not rows:
        lines.append('<p>Nothing needs attention.</p>')
    else:
        lines.append('<p>%d host(s) need attention%s. A fix command shows the diff in check mode; drop --check to apply. '
                     'Every finding is in the grid below and in postmortem.json beside this page.</p>' % (
                         needing, ', the worst %d shown' % len(rows) if needing > len(rows) else ''))
        lines.append('<table><thead><tr><th>host</th><th>check</th><th>status</th><th>what was found</th><th>fix</th></tr></thead><tbody>')
        for row, (entry, cid, status) in enumerate(rows):
            what = entry.get('reason') if cid is None else entry['findings'][cid].get('summary')
            lines.append('<tr data-host="%s"><th scope="row">%s</th><td>%s</td><td class="s s-%s">%s</td><td>%s</td><td class="fix">%s</td></tr>' % (
                _text(entry['name']), _text(entry['name']), _text(cid or '(host)'), _text(status), _text(status),
                _text(what), _fix_cell(entry, cid, status, declared, row)))
        lines.append('</tbody></table>')
    lines.append('</section>')
    return '\n'.join(lines)


def _static(report):
    """The checks' legend, below the grid: the legend of its abbreviated cells and rotated headers."""
    lines = ['<section id="legend"><h2>Checks</h2><dl>']
    lines += ['<dt>%s</dt><dd>%s</dd>' % (_text(c['id']), _text(c['title'])) for c in report['checks']]
    lines.append('</dl><p id="status-legend">Cells: %s.</p></section>' % ', '.join(
        '%s %s' % (_text(SHORT[s]), s) for s in list(report['statuses']) + list(HOST_STATES) if s in SHORT))
    return '\n'.join(lines)


def _title(report):
    return 'homelab.postmortem %s' % ('remediation report' if report.get('kind') == 'remediation' else 'fleet report')


def render_html_parts(report, findings_text):
    """The page in pieces (see report.to_json_parts for why); findings_text[i] is the JSON text
    of hosts[i]'s findings, made once for every format."""
    hosts = report['hosts']
    # Split the template once, before any text goes in: host text that reads like a placeholder must not be replaced.
    before_title, rest = PAGE.split('__REPORT_TITLE__')
    before_heading, rest = rest.split('__REPORT_HEADING__')
    before_meta, rest = rest.split('__REPORT_META__')
    before_totals, rest = rest.split('__REPORT_TOTALS__')
    before_worst, rest = rest.split('__REPORT_WORST__')
    before_static, rest = rest.split('__REPORT_STATIC__')
    head, rest = rest.split('__REPORT_INDEX__')
    middle, tail = rest.split('__REPORT_CHUNKS__')
    yield (before_title + _title(report) + before_heading + _title(report) + before_meta + _meta(report) + before_totals
           + _totals(report) + before_worst + _worst(report) + before_static + _static(report))
    yield head + _script_safe_json(index(report)) + middle
    for number, start in enumerate(range(0, len(hosts), CHUNK)):
        block = '{' + ','.join('%s:%s' % (_ENCODER.encode(entry['name']), findings_text[start + offset])
                               for offset, entry in enumerate(hosts[start:start + CHUNK])) + '}'
        yield '%s<script type="application/gzip+base64" id="chunk-%d">%s</script>' % (
            '\n' if number else '', number, compress_block(block))
    yield tail


def compress_block(text):
    """A block of findings as the page carries it: gzip (level 1: the evidence is repetitive JSON, so
    it shrinks about tenfold even so, at a fraction of level 6's time), then base64, which holds no
    character that could end a <script> element. Decompressed by the browser's DecompressionStream."""
    packer = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return base64.b64encode(packer.compress(text.encode('utf-8')) + packer.flush()).decode('ascii')
