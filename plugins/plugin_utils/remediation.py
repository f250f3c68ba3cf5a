# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which remediation roles a host's findings call for, and why every other open finding is left alone.

Pure functions of the audit before remediation, the user's choices and the registry, so that the
remediate playbook carries no decision logic of its own and every choice is unit-tested.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted

OPEN = ('affected', 'at_risk')


def findings_of(before):
    """The findings of the audit before remediation, or {} when that audit gave none."""
    if not isinstance(before, dict) or before.get('failed') or before.get('unreachable'):
        return {}
    facts = before.get('ansible_facts') or {}
    findings = facts.get('postmortem') if isinstance(facts, dict) else None
    return findings if isinstance(findings, dict) else {}


def _tag_allows(check, run_tags, skip_tags):
    """Whether --tags/--skip-tags let this detection's fix run (its role's tasks carry the id as tag)."""
    if check in skip_tags:
        return False
    return 'all' in run_tags or check in run_tags


def plan(host, before, wanted, entries, remediate_accepted, today, run_tags=('all',), skip_tags=()):
    """{roles: [role names, registry order], checks_by_role: {role: [ids]}, manual: [ids], left: [{check, why}]}.

    A role needed by several findings runs once; an accepted finding, one not in ``wanted`` or one
    whose id --tags/--skip-tags leave out is left alone, and the plan says why."""
    findings = findings_of(before)
    roles, checks_by_role, manual, left = [], {}, [], []
    for detection in registry.DETECTIONS:
        finding = findings.get(detection.ID)
        if not isinstance(finding, dict) or finding.get('status') not in OPEN:
            continue
        cid = detection.ID
        if 'all' not in wanted and cid not in wanted:
            left.append({'check': cid, 'why': 'not in postmortem_remediate'})
            continue
        entry, _expired = accepted.match(entries, str(host), cid, today)
        if entry is not None and not remediate_accepted:
            left.append({'check': cid, 'why': 'accepted (postmortem_accept entry %d: %s)' % (entry['number'], entry['reason'])})
            continue
        role = (detection.REMEDIATION or {}).get('role')
        if not role:
            manual.append(cid)
            continue
        if not _tag_allows(cid, run_tags, skip_tags):
            left.append({'check': cid, 'why': 'not selected by --tags/--skip-tags'})
            continue
        if role not in roles:
            roles.append(role)
        checks_by_role.setdefault(role, []).append(cid)
    return {'roles': roles, 'checks_by_role': checks_by_role, 'manual': manual, 'left': left}


# The switch that allows each role's disruptive step; off unless the user turns it on. A finding's
# advice never turns one on (REMEDIATION role vars are advice; tests/unit keeps this list true).
SWITCHES = {
    'homelab.postmortem.pi_ir_tx': 'pi_ir_tx_reboot',
    'homelab.postmortem.llama_server': 'llama_server_restart',
    'homelab.postmortem.docker_overlay_recover': 'docker_overlay_recover_restart',
    'homelab.postmortem.podman_quadlet': 'podman_quadlet_replace_running',
}
SWITCH_NAMES = frozenset(SWITCHES.values())


def advice(host_findings, roles, user_vars):
    """The role variables the chosen roles' findings advise, merged in report order: never a switch,
    never a variable the user set (inventory or extra vars win). Returns (vars, conflicts): when two
    findings advise different values for one variable, the first finding's value is kept and the
    conflict is named."""
    merged, conflicts, source = {}, [], {}
    for detection in registry.DETECTIONS:
        finding = host_findings.get(detection.ID)
        remediation = finding.get('remediation') if isinstance(finding, dict) else None
        if not isinstance(remediation, dict) or remediation.get('role') not in roles:
            continue
        for key, value in sorted((remediation.get('vars') or {}).items()):
            if key in SWITCH_NAMES or key in user_vars or not isinstance(key, str):
                continue
            if key in merged and merged[key] != value:
                conflicts.append('%s: %s advises %r, %s advised %r (kept)' % (key, detection.ID, value, source[key], merged[key]))
                continue
            merged.setdefault(key, value)
            source.setdefault(key, detection.ID)
    return merged, conflicts


def stop_reason(records, left_the_play):
    """Why this batch is not touched: the hosts of earlier batches that failed or were lost (a host
    that left the play without a record counts as lost); None when every earlier batch went well."""
    stopped, named = [], set()
    for host, found in records:
        state = found.get('state') if isinstance(found, dict) else None
        if state in ('failed', 'lost'):
            stopped.append('%s %s' % (host, 'failed' if state == 'failed' else 'was lost'))
            named.add(host)
    stopped += ['%s was lost' % host for host in left_the_play if host not in named]
    if not stopped:
        return None
    return 'not touched: the run stopped after %s in an earlier batch' % ', '.join(stopped)


def record(chosen, ran, failure, check_mode, switches):
    """What the remediation did on this host, role by role. ``ran``: roles that finished; ``failure``:
    {'task', 'reason', 'lost'} or None; ``switches``: {switch: value} as the user set them.
    "fixed" is never claimed here: the report decides it from the audit after remediation."""
    roles = []
    failed_role = None
    for role in chosen['roles']:
        entry = {'role': role, 'checks': chosen['checks_by_role'].get(role, [])}
        if role in ran:
            entry['result'] = 'ran'
            if check_mode:
                entry['note'] = 'check mode: nothing was changed'
            switch = SWITCHES.get(role)
            if switch and not switches.get(switch):
                entry['switch'] = '%s is off: a restart or reboot the fix needs is left to you' % switch
        elif failure and failed_role is None:
            failed_role = role
            entry['result'] = 'failed'
        else:
            entry['result'] = 'not_run'
            entry['why'] = 'an earlier role on this host failed' if failure else 'not reached'
        roles.append(entry)
    found = {'roles': roles, 'left': chosen['left'], 'manual': chosen['manual'], 'check_mode': bool(check_mode)}
    if failure:
        found.update(state='lost' if failure.get('lost') else 'failed', task=failure.get('task'), reason=failure.get('reason'))
    else:
        found['state'] = 'ran' if roles else 'nothing_to_run'
    return found
