# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lines the homelab.postmortem.summary stdout callback prints: pure functions of task results.

This module util is PRIVATE to the collection. It can have breaking changes at any time.

A host's result is untrusted: a status is shown only when it is one of the model's, a check id and
every message go through terminal.visible, and no line holds more than one line of a host's text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK
from ansible_collections.homelab.postmortem.plugins.plugin_utils.terminal import visible

MESSAGE_CHARS = 600
MESSAGE_LINES = 60
# A host's answer names its worst finding; at most this many characters of a check id are shown.
ID_CHARS = 80
ATTENTION = ('affected', 'at_risk', 'error', 'unknown')


def _one_line(text, limit=MESSAGE_CHARS):
    if not isinstance(text, str):
        text = '' if text is None else str(text)
    text = ' '.join(text.split())
    return visible(text if len(text) <= limit else text[:limit - 3] + '...')


def worst(result):
    """(status, [check ids with it]) of a host's audit answer: the most serious status among its findings
    (only the model's statuses count), or (None, []) when the answer holds no findings."""
    facts = result.get('ansible_facts') if isinstance(result, dict) else None
    findings = facts.get('postmortem') if isinstance(facts, dict) else None
    if not isinstance(findings, dict):
        return None, []
    best, ids = None, []
    for cid, finding in findings.items():
        status = finding.get('status') if isinstance(finding, dict) else None
        if status not in STATUS_RANK:
            continue
        if best is None or STATUS_RANK[status] > STATUS_RANK[best]:
            best, ids = status, [cid]
        elif status == best:
            ids.append(cid)
    return best, ids


class Progress(object):
    """Counts the hosts of the play whose audit finished: '[3/12] pi-07: affected (pi_ir_tx)'."""

    def __init__(self):
        self.name, self.total, self.done = '', 0, 0

    def play(self, name, total):
        self.name, self.total, self.done = name, total, 0

    def _prefix(self):
        self.done += 1
        lines = [] if self.done > 1 else ['%s: %d host(s)' % (_one_line(self.name, 200) or 'audit', self.total)]
        return lines, '[%d/%s] ' % (self.done, self.total or '?')

    def audited(self, host, result):
        lines, prefix = self._prefix()
        status, ids = worst(result)
        if status is None:
            return lines + ['%s%s: no findings in its answer' % (prefix, _one_line(host, 200))]
        if status in ATTENTION:
            named = ', '.join(_one_line(cid, ID_CHARS) for cid in ids[:3]) + (' +%d more' % (len(ids) - 3) if len(ids) > 3 else '')
            return lines + ['%s%s: %s (%s)' % (prefix, _one_line(host, 200), status, named)]
        found = 'nothing to fix' if status == 'ok' else 'nothing of any check found (all n/a)'
        return lines + ['%s%s: %s' % (prefix, _one_line(host, 200), found)]

    def not_audited(self, host, state, result):
        lines, prefix = self._prefix()
        msg = result.get('msg') if isinstance(result, dict) else None
        return lines + ['%s%s: NOT AUDITED, %s: %s' % (prefix, _one_line(host, 200), state, _one_line(msg or 'no message'))]


def failed(host, task, result):
    """A task that failed on a host (not an audit: that is a progress line): one line, and the further
    lines of a message written one problem per line (audit_validate's), each made visible."""
    msg = result.get('msg') if isinstance(result, dict) else None
    lines = (msg if isinstance(msg, str) and msg.strip() else 'no message').strip().split('\n')
    return ['%s: FAILED in %r: %s' % (_one_line(host, 200), _one_line(task, 200), _one_line(lines[0], 2000))] + [
        '  %s' % _one_line(line, 2000) for line in lines[1:MESSAGE_LINES] if line.strip()] + (
        ['  ... and %d more line(s)' % (len(lines) - MESSAGE_LINES)] if len(lines) > MESSAGE_LINES else [])


def unreachable(host, result):
    msg = result.get('msg') if isinstance(result, dict) else None
    return ['%s: UNREACHABLE: %s' % (_one_line(host, 200), _one_line(msg or 'no message'))]


def said(host, result):
    """What a debug task of the playbooks or roles says (a step by hand, a restart that is needed)."""
    msg = result.get('msg') if isinstance(result, dict) else None
    if msg is None or msg == '':
        return []
    items = msg if isinstance(msg, list) else [msg]
    return ['%s: %s' % (_one_line(host, 200), _one_line(item, 2000)) for item in items[:20]]


def visible_block(text):
    """A diff, a line at a time, each made visible (a file's content may hold escape codes)."""
    return [visible(line) for line in (text or '').rstrip('\n').split('\n')] if text else []


def recap(summaries):
    """One line for the whole run: hosts and what Ansible counted ({host: stats.summarize(host)})."""
    if not summaries:
        return []
    totals = {}
    for counts in summaries.values():
        for key in ('ok', 'changed', 'failures', 'unreachable', 'ignored'):
            totals[key] = totals.get(key, 0) + int(counts.get(key, 0) or 0)
    return ['Ansible: %d host(s); tasks ok %d, changed %d, failed %d, unreachable %d, failures ignored %d' % (
        len(summaries), totals['ok'], totals['changed'], totals['failures'], totals['unreachable'], totals['ignored'])]
