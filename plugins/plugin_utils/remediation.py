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
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, fix_outcome, host_findings, role_specs
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import NOTE_CHARS, NOTES_MAX, OPEN


def findings_of(before):
    """(the findings of the audit before remediation, why there are none to act on): ({}, None) when
    that audit gave none (the host failed or was unreachable: the report says so), ({}, why) when the
    host's answer is not usable (host_findings.check: an id the registry does not know, a bad status)."""
    if not isinstance(before, dict) or before.get('failed') or before.get('unreachable'):
        return {}, None
    facts = before.get('ansible_facts') or {}
    findings = facts.get('postmortem') if isinstance(facts, dict) else None
    if findings is None:
        return {}, None
    checked, problem = host_findings.check(findings, registry.BY_ID)
    return (checked, None) if problem is None else ({}, problem)


def _tag_allows(check, run_tags, skip_tags):
    """Whether --tags/--skip-tags let this detection's fix run (its role's tasks carry the id as tag)."""
    if check in skip_tags:
        return False
    return 'all' in run_tags or check in run_tags


def plan(host, before, wanted, entries, remediate_accepted, today, run_tags=('all',), skip_tags=()):
    """{roles: [role names, registry order], checks_by_role: {role: [ids]}, manual: [ids], left: [{check, why}]}.

    A role needed by several findings runs once; an accepted finding, one not in ``wanted`` or one
    whose id --tags/--skip-tags leave out is left alone, and the plan says why."""
    findings, refused = findings_of(before)
    roles, checks_by_role, manual, left = [], {}, [], []
    if refused:
        left.append({'check': '(host)', 'why': 'nothing is fixed on this host: %s' % refused})
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


# Names the controller never takes from anywhere but the user: Ansible's own (connection, become,
# interpreter), the collection's run variables, and the private ones the playbooks keep their state in.
RESERVED_PREFIXES = ('ansible_', 'postmortem_', '_')
DROPPED_SHOWN = 20
# How much of an advised value a reason shows.
SHOWN = 80


def role_switches(roles, specs):
    """{role: {switch: option}}: the options of each role's argument spec marked ``Disruptive:``."""
    return dict((role, dict(role_specs.switches(specs.get(role) or {}))) for role in roles)


def switches_off(roles, specs, values):
    """{role: [its switches the user left off]}; ``values``: {switch: the user's value} for those set."""
    found = {}
    for role, switches in role_switches(roles, specs).items():
        found[role] = [name for name, option in sorted(switches.items())
                       if not role_specs.switch_is_on(option, values.get(name, option.get('default')))]
    return found


def _given(chosen, specs, user_vars):
    """{check: {var: value}}: what the registry's REMEDIATION declares for each chosen check, kept when
    the role's spec declares the option, it is not a switch, not reserved and not set by the user."""
    given = {}
    for role in chosen['roles']:
        options = (specs.get(role) or {}).get('options') or {}
        for cid in chosen['checks_by_role'].get(role, []):
            declared = registry.BY_ID[cid].REMEDIATION.get('vars') or {}
            given[cid] = dict((key, value) for key, value in declared.items()
                              if key in options and not role_specs.is_switch(options[key])
                              and not key.startswith(RESERVED_PREFIXES) and key not in user_vars)
    return given


def _dropped_advice(cid, finding, expected_role, given, user_vars, switches):
    """Why each piece of a host's advice for ``cid`` is not used, one line each."""
    remediation = finding.get('remediation') if isinstance(finding, dict) else None
    if remediation is None:
        return []
    if not isinstance(remediation, dict):
        return ['%s: remediation is a %s, not a mapping' % (cid, type(remediation).__name__)]
    found = []
    if remediation.get('role') not in (None, '', expected_role):
        found.append('%s: role %s (the registry names %s for it)' % (cid, host_findings.shown(remediation.get('role'), SHOWN), expected_role))
    advised = remediation.get('vars')
    if advised in (None, {}):
        return found
    if not isinstance(advised, dict):
        return found + ['%s: vars is a %s, not a mapping of role variables' % (cid, type(advised).__name__)]
    for key in sorted(advised, key=lambda name: host_findings.shown(name, SHOWN)):
        value = advised[key]
        if isinstance(key, str) and key in given and given[key] == value:
            continue
        if not isinstance(key, str):
            why = 'not a variable name'
        elif key.startswith(RESERVED_PREFIXES):
            why = 'a name the controller never takes from a host'
        elif key in switches:
            why = 'a disruptive switch: only you turn it on'
        elif key in user_vars:
            why = 'you set it'
        elif key in given:
            why = 'the registry gives %s' % host_findings.shown(given[key], SHOWN)
        else:
            why = 'not a variable the registry gives %s for %s' % (expected_role, cid)
        found.append('%s: %s=%s (%s)' % (cid, host_findings.shown(key), host_findings.shown(value, SHOWN), why))
    return found


def advice(chosen, host_findings, user_vars, specs):
    """(vars, conflicts, dropped) for the roles the plan chose.

    The variables come from the controller alone: the registry's REMEDIATION for each chosen check,
    only options the role's argument spec declares, never a ``Disruptive:`` switch, never a reserved
    name, never a variable the user set (inventory or extra vars win). What the host's findings
    advise is data: each piece the controller does not give is named in ``dropped`` (at most
    DROPPED_SHOWN lines, then how many more). Two checks declaring different values for one
    variable: the first (report order) is kept and the conflict named."""
    given = _given(chosen, specs, user_vars)
    switches = role_switches(chosen['roles'], specs)
    merged, conflicts, source, dropped = {}, [], {}, []
    for detection in registry.DETECTIONS:
        cid = detection.ID
        if cid not in given:
            continue
        role = detection.REMEDIATION.get('role')
        for key, value in sorted(given[cid].items()):
            if key in merged and merged[key] != value:
                conflicts.append('%s: %s declares %r, %s declared %r (kept)' % (key, cid, value, source[key], merged[key]))
                continue
            merged.setdefault(key, value)
            source.setdefault(key, cid)
        dropped.extend(_dropped_advice(cid, host_findings.get(cid), role, given[cid], user_vars, switches.get(role, {})))
    if len(dropped) > DROPPED_SHOWN:
        dropped = dropped[:DROPPED_SHOWN] + ['... and %d more' % (len(dropped) - DROPPED_SHOWN)]
    return merged, conflicts, dropped


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


def remediation_roles():
    """The roles the registry's REMEDIATION names: the only ones whose notes are read."""
    return set(d.REMEDIATION.get('role') for d in registry.DETECTIONS if (d.REMEDIATION or {}).get('role'))


def notes_var(role):
    """The fact a role hands its notes in: ``<role's short name>_notes`` (pi_ir_tx_notes)."""
    return '%s_notes' % role.rsplit('.', 1)[-1]


def role_outcomes(roles, values):
    """{role: fix_outcome.read_role_outcome()} for the plan's ``roles`` that set their outcome fact
    (``values``: {fix_outcome.outcome_var(role): the fact's value}); only the registry's roles are read."""
    known = remediation_roles()
    return dict((role, fix_outcome.read_role_outcome(fix_outcome.outcome_var(role), values[fix_outcome.outcome_var(role)]))
                for role in roles if role in known and fix_outcome.outcome_var(role) in values)


def role_notes(roles, values):
    """[{role, note}] for the record, from ``values`` ({notes_var(role): the fact's value}) of ``roles``
    (the plan's, which come from the registry). Only a list of strings is taken: anything else is one note
    that says so, never its content. At most NOTES_MAX notes of NOTE_CHARS characters, in role order."""
    found = []
    known = remediation_roles()
    for role in roles:
        name = notes_var(role)
        if role not in known or name not in values:
            continue
        value = values[name]
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            kind = type(value).__name__ if not isinstance(value, (list, tuple)) else 'list with an item that is not a string'
            found.append({'role': role, 'note': '%s is a %s, not a list of strings: its notes are not kept' % (name, kind)})
            continue
        for note in value:
            found.append({'role': role, 'note': note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS - 3] + '...'})
    if len(found) > NOTES_MAX:
        found = found[:NOTES_MAX - 1] + [{'role': found[NOTES_MAX - 1]['role'],
                                          'note': '... and %d more note(s), not kept' % (len(found) - NOTES_MAX + 1)}]
    return found


def record(chosen, ran, failure, check_mode, switches_off, notes=None, outcomes=None):
    """What the remediation did on this host, role by role. ``ran``: roles that finished; ``failure``:
    {'task', 'reason', 'lost'} or None; ``switches_off``: {role: [its Disruptive: switches the user left
    off]}; ``notes``: role_notes(); ``outcomes``: fix_outcome.planned(), per check. "fixed" is never
    claimed here: the report decides it from the audit after remediation (fix_outcome.compose)."""
    roles = []
    failed_role = None
    for role in chosen['roles']:
        entry = {'role': role, 'checks': chosen['checks_by_role'].get(role, [])}
        if role in ran:
            entry['result'] = 'ran'
            if check_mode:
                entry['note'] = 'check mode: nothing was changed'
            off = switches_off.get(role) or []
            if off:
                entry['switch'] = '%s %s off: the %s left to you' % (
                    ', '.join(off), 'is' if len(off) == 1 else 'are',
                    'disruption it allows (a restart or reboot the fix needs) is' if len(off) == 1
                    else 'disruptions they allow (restarts, reboots, scaling down) are')
        elif failure and failed_role is None:
            failed_role = role
            entry['result'] = 'failed'
        else:
            entry['result'] = 'not_run'
            entry['why'] = 'an earlier role on this host failed' if failure else 'not reached'
        roles.append(entry)
    found = {'roles': roles, 'left': chosen['left'], 'manual': chosen['manual'], 'check_mode': bool(check_mode)}
    if chosen.get('dropped'):
        found['dropped'] = list(chosen['dropped'])
    if notes:
        found['notes'] = list(notes)
    if outcomes:
        found['outcomes'] = dict(outcomes)
    if failure:
        found.update(state='lost' if failure.get('lost') else 'failed', task=failure.get('task'), reason=failure.get('reason'))
    else:
        found['state'] = 'ran' if roles else 'nothing_to_run'
    return found


def plan_messages(chosen, docs_dir):
    """What the plan leaves alone and why, what has no role, conflicting declarations and the host's
    advice that was dropped: one line each, for the operator's terminal (made visible by the caller)."""
    lines = ['%s: not fixed: %s' % (item['check'], item['why']) for item in chosen['left']]
    lines += ['%s: fix by hand, see %s/%s.md' % (cid, docs_dir, cid) for cid in chosen['manual']]
    lines += list(chosen.get('conflicts') or [])
    lines += ['advice from the host not used: %s' % line for line in chosen.get('dropped') or []]
    return lines


def failure_message(found, host):
    """The line that says what failed on a host (None when nothing did)."""
    if found.get('state') not in ('failed', 'lost'):
        return None
    # In check mode nothing was written, so there is no file half-way to speak of (#35).
    files = ('Check mode: nothing was written.' if found.get('check_mode') else
             'The fix modules back a file up before they change it and write it atomically, so a file is either as '
             'it was or fixed; backups (name.<UTC time>.bak) stay next to each file.')
    return ("REMEDIATION %s on %s in '%s': %s. %s Later batches are not touched; every host is audited again." % (
        'FAILED' if found['state'] == 'failed' else 'LOST THE HOST', host, found.get('task'), found.get('reason'), files))
