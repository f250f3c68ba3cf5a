# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parts of the terminal summary that answer "what do I do": the command that fixes a finding,
what a remediation did to each finding, and why the audit found nothing.

This module util is PRIVATE to the collection. It can have breaking changes at any time.

Nothing here is cut mid-word: a line too long for the screen is wrapped (a command with a shell
continuation, `` \\``, so that it can be pasted as it is printed). Every line is made visible by
the caller (terminal.visible_lines), as every other summary line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex
import textwrap

# Only what the audit measured as fine counts as closed: unknown or error after a fix confirms nothing.
from ansible_collections.homelab.postmortem.plugins.plugin_utils.fix_outcome import CLOSED, OPEN

WIDTH = 100
# Outcome words, in the order the summary lists them (the ones that need a person first).
OUTCOME_WORDS = (('failed', 'FAILED'), ('manual', 'by hand'), ('not_run', 'not run'), ('would_fix', 'would fix'),
                 ('fixed', 'fixed'), ('nothing_to_do', 'nothing to do'))
# Lines for the findings named under the outcome counts (those that need a person first).
OUTCOME_LINES = 6
NOTES_SHOWN = 3
REASONS_SHOWN = 6
NAMES_SHOWN = 6


def one_line(text, limit=500):
    if not isinstance(text, str):
        text = str(text) if text else ''
    return ' '.join(text.split())[:limit]


def wrapped(text, first='  ', rest='      ', width=WIDTH):
    """``text`` on as many lines as it needs, broken between words (only a word wider than the screen,
    a host's run of characters, is broken inside)."""
    return textwrap.wrap(one_line(text, 2000), width=width, initial_indent=first, subsequent_indent=rest,
                         break_on_hyphens=False) or [first.rstrip()]


def wrapped_at_most(text, most, first='  ', rest='      '):
    """wrapped(), at most ``most`` lines: what does not fit ends the last one with "..." between words
    (the whole text is in the report files)."""
    lines = wrapped(text, first, rest)
    if len(lines) <= most:
        return lines
    last = lines[most - 1]
    while len(last) + 4 > WIDTH:
        last = last.rsplit(' ', 1)[0] if ' ' in last.strip() else last[:WIDTH - 4]
    return lines[:most - 1] + [last + ' ...']


def command_lines(argv, first='      $ ', rest='          ', width=WIDTH):
    """A command as lines a shell takes whole when pasted: each word quoted, a line ending in `` \\``
    where the next one goes on."""
    words = [shlex.quote(str(word)) for word in argv]
    lines, line = [], first
    for word in words:
        candidate = line + ('' if line in (first, rest) else ' ') + word
        if line not in (first, rest) and len(candidate) + 2 > width:
            lines.append(line + ' \\')
            line = rest + word
        else:
            line = candidate
    lines.append(line)
    return lines


def fix_lines(fix, indent='      '):
    """What fixes one finding, from its report entry (fix_outcome.fix_entry): the command, whole, or
    the step by hand."""
    if not isinstance(fix, dict):
        return []
    if isinstance(fix.get('command'), str):
        try:
            argv = shlex.split(fix['command'])
        except ValueError:  # a report file edited by hand: shown as it is
            argv = [fix['command']]
        lines = [indent + 'fix (shows the diff; drop --check to apply):'] + command_lines(argv)
        if fix.get('note'):
            lines += wrapped(fix['note'], indent + '  ', indent + '  ')
        return lines
    return wrapped('by hand: %s' % fix.get('manual', 'see the docs page'), indent, indent + '  ')


def outcome_lines(report):
    """A remediation run's outcome per finding: the counts, then the findings that need a person (failed,
    by hand, not run) and those fixed or that would be, host/check: why, the first OUTCOMES_SHOWN of each."""
    counts = report.get('outcomes') or {}
    check_run = bool((report.get('run') or {}).get('check_mode'))
    if check_run:
        head = 'Remediation (CHECK MODE: nothing was changed):\n  a run without --check would fix %d; %d need a change by hand' % (
            counts.get('would_fix', 0), counts.get('manual', 0))
        rest = [('failed', 'failed'), ('not_run', 'not run')]
    else:
        head = 'Remediation: %d fixed; %d need a change by hand' % (counts.get('fixed', 0), counts.get('manual', 0))
        rest = [('failed', 'FAILED'), ('not_run', 'not run'), ('nothing_to_do', 'nothing to do')]
    extra = ['%d %s' % (counts[key], word) for key, word in rest if counts.get(key)]
    first, _nl, second = (head + ('; ' + '; '.join(extra) if extra else '')).partition('\n')
    lines = wrapped(first, '', '  ') + (wrapped(second) if second else [])
    items = {}
    for entry in report['hosts']:
        for cid, item in sorted(((entry.get('remediation') or {}).get('outcomes') or {}).items()):
            items.setdefault(item.get('outcome'), []).append((entry['name'], cid, item.get('why')))
    listed, left = [], 0
    for key, word in OUTCOME_WORDS:
        found = items.get(key) or []
        for position, (host, cid, why) in enumerate(found):
            if len(listed) >= OUTCOME_LINES:
                left += len(found) - position
                break
            text = '%s: %s/%s' % (word, host, cid) + (': %s' % one_line(why, 400) if why and key != 'would_fix' else '')
            block = wrapped_at_most(text, 2)
            if len(listed) + len(block) > OUTCOME_LINES:
                left += 1
                continue
            listed += block
    if left:
        listed.append('  ... and %d more finding(s): each with its outcome in postmortem-remediate.json' % left)
    return lines + listed


def before_after_lines(report, hosts_shown=2):
    """Before against after, measured: how many open findings the audit after the run measures closed
    (only ok or n/a count), how many are still open (or could not be measured), how many are new; then
    the first hosts whose findings moved."""
    closed = still = new = 0
    changed = []
    for entry in report['hosts']:
        before = entry.get('before') or {}
        after = dict((cid, f.get('status')) for cid, f in entry['findings'].items())
        moves = []
        for cid in sorted(set(before) | set(after)):
            was, now = before.get(cid), after.get(cid, entry['state'] if entry['state'] != 'audited' else None)
            if was in OPEN and now in CLOSED:
                closed += 1
                moves.append('%s %s -> %s' % (cid, was, now))
            elif was in OPEN:
                still += 1
            elif now in OPEN:
                new += 1
                moves.append('%s %s -> %s' % (cid, was, now))
        if moves:
            changed.append('%s: %s' % (entry['name'], ', '.join(moves)))
    lines = ['  audit before -> after: %d closed, %d still open or not measured, %d new' % (closed, still, new)]
    for line in changed[:hosts_shown]:
        lines += wrapped_at_most(line, 1, '    ')
    if len(changed) > hosts_shown:
        lines.append('    ... and %d more host(s) changed: see the reports' % (len(changed) - hosts_shown))
    return lines


def note_lines(report):
    """What the roles handed to the record (a Pi 3 has no trial boot): the first NOTES_SHOWN, then how many more."""
    notes = [(entry['name'], note) for entry in report['hosts']
             for note in (entry.get('remediation') or {}).get('notes') or [] if isinstance(note, dict)]
    lines = []
    for host, note in notes[:NOTES_SHOWN]:
        lines += wrapped_at_most('%s: %s: %s' % (host, str(note.get('role')).rsplit('.', 1)[-1], one_line(note.get('note'), 400)), 1)
    if len(notes) > NOTES_SHOWN:
        lines.append('  ... and %d more note(s) from the roles: see the reports' % (len(notes) - NOTES_SHOWN))
    return lines


def _names(names):
    shown = ', '.join(names[:NAMES_SHOWN])
    return shown + (' and %d more' % (len(names) - NAMES_SHOWN) if len(names) > NAMES_SHOWN else '')


def why_nothing_lines(report, checks):
    """Why checks found nothing to judge: the not_applicable and unknown findings grouped by their
    reason (the finding's summary), the most common first, each naming its checks and how many hosts.
    So "looked and found nothing" reads apart from "could not look"."""
    groups = {}
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            continue
        accepted = entry.get('accepted') or {}
        for cid in checks:
            finding = entry['findings'].get(cid)
            if not isinstance(finding, dict) or cid in accepted or finding.get('status') not in ('not_applicable', 'unknown'):
                continue
            # A reason that names its own check ("... pi_ir_tx reads only a running system") is one reason.
            key = (finding['status'], one_line(finding.get('summary'), 300).replace(cid, 'the check'))
            hosts, ids = groups.setdefault(key, ([], []))
            if entry['name'] not in hosts:
                hosts.append(entry['name'])
            if cid not in ids:
                ids.append(cid)
    if not groups:
        return []
    ordered = sorted(groups.items(), key=lambda item: (item[0][0] != 'unknown', -len(item[1][1]) * len(item[1][0]), item[0][1]))
    lines = ['', 'Not measured or not found, by reason (n/a: nothing of it on the host; unknown: could not look):']
    for (status, summary), (hosts, ids) in ordered[:REASONS_SHOWN]:
        where = ('on %d host(s)' % len(hosts)) if len(hosts) > 1 else 'on %s' % hosts[0]
        label = 'n/a' if status == 'not_applicable' else status
        lines += wrapped_at_most('%s, %d check%s %s (%s): %s' % (label, len(ids), '' if len(ids) == 1 else 's', where,
                                                                 _names(ids), summary), 3)
    if len(ordered) > REASONS_SHOWN:
        lines.append('  ... and %d more reason(s): every finding\'s is in the full report' % (len(ordered) - REASONS_SHOWN))
    return lines
