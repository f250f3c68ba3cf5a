# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The trust boundary: what a host's audit result may say before the controller uses it.

A compromised host can answer anything. Its findings are data for the report (statuses, summaries,
evidence), and only for checks this run knows: a finding under an id the controller did not ask
for, or with a status outside the model, makes the whole answer unusable, so that a host can never
add a report column, a history key or a metric series, or forge a line under a made-up check.
Everything the controller acts on (roles, their variables, paths) comes from the registry and the
user's variables, never from here (plugin_utils/remediation.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK

SHOWN_IDS = 3


def shown(value, limit=60):
    """A host's value in a reason or a message: repr (control characters become escapes), cut."""
    try:
        text = repr(value)
    except RecursionError:
        text = '<nested too deeply>'
    return text if len(text) <= limit else text[:limit - 3] + '...'


def check(findings, known):
    """(findings, None) when the host's findings can be used, else (None, why). ``known``: the ids
    of the checks this run knows (the registry's, and the user's declared checks)."""
    if not isinstance(findings, dict):
        return None, 'the audit returned %s instead of findings' % type(findings).__name__
    unknown = [cid for cid in findings if not isinstance(cid, str) or cid not in known]
    if unknown:
        return None, ('the audit returned findings for %d check id(s) this run does not know (%s%s): a host that '
                      'answers for checks it was not asked is not trusted, none of its findings are used' % (
                          len(unknown), ', '.join(shown(c) for c in unknown[:SHOWN_IDS]),
                          ', ...' if len(unknown) > SHOWN_IDS else ''))
    for cid, finding in findings.items():
        status = finding.get('status') if isinstance(finding, dict) else None
        if not isinstance(status, str) or status not in STATUS_RANK:
            return None, 'the finding %s has no valid status (%s)' % (
                cid, shown(finding.get('status') if isinstance(finding, dict) else finding))
        if finding.get('id', cid) != cid:
            return None, 'the finding under %s says it is %s' % (cid, shown(finding.get('id')))
    return findings, None
