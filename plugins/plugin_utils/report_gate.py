# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate: whether a run fails, decided from the report model and worded here only.

The summary's gate line and the task's failure message say the same thing in the same words, so
an operator who reads one never has to reconcile it with the other.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import OPEN
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_summary import fit

NOT_AUDITED = '(not audited)'
# Remediation states of a host whose fixes did not all run (remediate.yml's postmortem_remediation).
UNFINISHED = ('failed', 'lost', 'not_run')


class Policy:
    """The run's gate settings, audit_report's options of the same names."""

    def __init__(self, fail_on='never', fail_on_unaudited=True, fail_on_no_hosts=True, fail_on_new_only=False):
        self.fail_on = fail_on
        self.fail_on_unaudited = fail_on_unaudited
        self.fail_on_no_hosts = fail_on_no_hosts
        self.new_only = fail_on_new_only

    @classmethod
    def from_options(cls, options):
        return cls(options['fail_on'], options['fail_on_unaudited'], options['fail_on_no_hosts'], options['fail_on_new_only'])

    @property
    def off(self):
        return not self.fail_on or self.fail_on == 'never'

    def hits(self, report):
        """What fails the gate: findings at or above ``fail_on`` and, unless allowed, every host that
        could not be audited (whatever ``fail_on`` is: a host we could not see is not a healthy one).
        Accepted findings never do. With ``new_only``, only findings this run opened or reopened, and
        hosts that were audited last time and could not be now (report['drift'] says which)."""
        if self.off:
            return []
        newly_unaudited = set((report.get('drift') or {}).get('hosts_newly_unaudited') or ())
        found = []
        for entry in report['hosts']:
            if entry['state'] != 'audited':
                if self.fail_on_unaudited and (not self.new_only or entry['name'] in newly_unaudited):
                    found.append('%s: %s %s' % (entry['name'], entry['state'], NOT_AUDITED))
                continue
            accepted = entry.get('accepted') or {}
            changes = entry.get('drift') or {}
            for cid, finding in entry['findings'].items():
                if cid in accepted or (self.new_only and changes.get(cid) not in ('opened', 'reopened')):
                    continue
                if STATUS_RANK[finding['status']] >= STATUS_RANK[self.fail_on]:
                    found.append('%s/%s: %s' % (entry['name'], cid, finding['status']))
        return found

    def _over_threshold(self, hits):
        """The hits counted: '2 new finding(s) at or above at_risk and 1 host(s) that could not be audited'."""
        unaudited = sum(1 for hit in hits if hit.endswith(NOT_AUDITED))
        return '%d %sfinding(s) at or above %s%s' % (
            len(hits) - unaudited, 'new ' if self.new_only else '', self.fail_on,
            (' and %d host(s) that could not be audited' % unaudited) if unaudited else '')

    def line(self, report, hits):
        """What the gate decided, in the summary's one line; with fail_on never, what it would have said."""
        if report.get('nothing_audited'):
            return fit('Gate: %s (postmortem_fail_on_no_hosts: %s).' % (
                'FAILED: nothing was audited' if self.fail_on_no_hosts else 'passed although nothing was audited',
                'true' if self.fail_on_no_hosts else 'false'))
        unaudited = [e['name'] for e in report['hosts'] if e['state'] != 'audited']
        if self.off:
            open_findings = sum(1 for e in report['hosts'] if e['state'] == 'audited'
                                for f in e['findings'].values() if isinstance(f, dict) and f.get('status') in OPEN)
            if not open_findings and not unaudited:
                return 'Gate: off (postmortem_fail_on: never).'
            return fit('Gate: off (postmortem_fail_on: never); at_risk would fail it: %d finding(s)%s.' % (
                open_findings, (', %d unaudited host(s)' % len(unaudited)) if unaudited else ''))
        if hits:
            return fit('Gate: FAILED: %s.' % self._over_threshold(hits))
        accepted = self._accepted_at_or_above(report)
        return fit('Gate: passed (nothing %sat or above %s%s%s).' % (
            'new ' if self.new_only else '', self.fail_on,
            '' if self.fail_on_unaudited or not unaudited else '; %d host(s) not audited were let pass' % len(unaudited),
            '; %d accepted finding(s) at or above it not counted' % accepted if accepted else ''))

    def _accepted_at_or_above(self, report):
        """How many accepted findings (postmortem_accept) the gate would have counted: said apart, so that a
        pass never sits unexplained beside an affected finding."""
        found = 0
        for entry in report['hosts']:
            for cid in entry.get('accepted') or {}:
                finding = entry['findings'].get(cid)
                status = finding.get('status') if isinstance(finding, dict) else None
                if status in STATUS_RANK and STATUS_RANK[status] >= STATUS_RANK[self.fail_on]:
                    found += 1
        return found

    def failures(self, report, hits, problems=()):
        """Why the run fails, one sentence each; none when it passes. ``problems``: what went wrong in
        the run itself (declared checks not judged, report files not written), which fails it always."""
        found = list(problems)
        if report.get('nothing_audited') and self.fail_on_no_hosts:
            found.append('%s; set postmortem_fail_on_no_hosts: false to let such a run pass' % report['nothing_audited'])
        unfinished = [e['name'] for e in report['hosts'] if (e.get('remediation') or {}).get('state') in UNFINISHED]
        if unfinished:
            found.append('Remediation did not finish: %s (failed, lost during its fixes, or not touched because an '
                         'earlier batch failed or lost a host). The report above says why, per host' % ', '.join(unfinished))
        if hits:
            found.append('%s: %s' % (self._over_threshold(hits), '; '.join(hits[:10])))
        return found
