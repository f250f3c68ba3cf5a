# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a remediation did to each open finding, from a closed set, and the command that fixes one.

This module util is PRIVATE to the collection. It can have breaking changes at any time.

An outcome is decided from data only: the plan (remediation.plan), what each role handed back in the
fact ``<role's short name>_outcome`` ({changed, by_hand}), the check mode, and the audits before and
after. A message a role printed never decides anything, so a by-hand step can no longer be lost
between the role's output and the summary (#44). ``fixed`` is claimed only when the audit after the
run measured the finding ``ok`` or ``not_applicable``; ``would_fix`` only in check mode, when the
role reported a change and nothing left by hand.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import shlex

from ansible_collections.homelab.postmortem.plugins.module_utils import registry

OUTCOMES = ('fixed', 'would_fix', 'manual', 'failed', 'not_run', 'nothing_to_do')
# A finding that calls for a fix (report.OPEN's value: report imports this module, so not from there).
OPEN = ('affected', 'at_risk')
# What the audit after a run must measure before a finding counts as fixed: unknown or error is not.
CLOSED = ('ok', 'not_applicable')
BY_HAND_MAX = 10
BY_HAND_CHARS = 400
# The playbook variables a fix command repeats from the audit, when the host had them set: what the
# remediation's own audit needs to see the same finding. postmortem_settings is repeated only when it
# holds no credential (an Ollama token, say): a command is printed and written to the report.
COMMAND_VARS = ('postmortem_root', 'postmortem_probes', 'postmortem_settings', 'postmortem_become')
_SECRET_WORDS = ('token', 'password', 'secret', 'key', 'credential', 'auth')


def short(role):
    return role.rsplit('.', 1)[-1]


def outcome_var(role):
    """The fact a remediation role hands its outcome in: ``<role's short name>_outcome``."""
    return '%s_outcome' % short(role)


def _bounded(text):
    text = ' '.join(text.split())
    return text if len(text) <= BY_HAND_CHARS else text[:BY_HAND_CHARS - 3] + '...'


def read_role_outcome(name, value):
    """{changed, by_hand} from a role's ``<role>_outcome`` fact, or {problem} saying why it is not
    usable (never its content): a mapping with a bool ``changed`` and a list of strings ``by_hand``."""
    if not isinstance(value, dict):
        return {'problem': '%s is a %s, not a mapping' % (name, type(value).__name__)}
    changed, by_hand = value.get('changed'), value.get('by_hand', [])
    if not isinstance(changed, bool):
        return {'problem': '%s.changed is a %s, not true or false' % (name, type(changed).__name__)}
    if not isinstance(by_hand, (list, tuple)) or not all(isinstance(item, str) for item in by_hand):
        return {'problem': '%s.by_hand is not a list of strings' % name}
    steps = [_bounded(item) for item in by_hand if item.strip()]
    if len(steps) > BY_HAND_MAX:
        steps = steps[:BY_HAND_MAX - 1] + ['... and %d more step(s) by hand' % (len(steps) - BY_HAND_MAX + 1)]
    return {'changed': changed, 'by_hand': steps}


def no_role_reason(cid):
    """Why a check of the registry has no automatic fix, with its first manual step."""
    detection = registry.BY_ID.get(cid)
    manual = ((detection.REMEDIATION or {}).get('manual') or []) if detection is not None else []
    return 'no automatic fix: %s' % (_bounded(manual[0]) if manual else 'see docs/%s.md' % cid)


def _ran(check_mode, reported):
    """The outcome of a check whose role finished, from what the role reported."""
    if reported is None:
        return {'outcome': 'manual', 'why': 'the role did not report what it changed: check the finding by hand'}
    if 'problem' in reported:
        return {'outcome': 'manual', 'why': 'the role\'s outcome could not be read (%s): check the finding by hand' % reported['problem']}
    if reported['by_hand']:
        return {'outcome': 'manual', 'why': '; '.join(reported['by_hand']), 'changed': reported['changed']}
    if check_mode:
        if reported['changed']:
            return {'outcome': 'would_fix', 'why': 'the diff above is what a run without --check writes'}
        return {'outcome': 'manual', 'why': 'the role would change nothing, yet the finding is open: see its docs page'}
    # Decided by the audit after the run (compose): fixed only when it measures the finding closed.
    return {'outcome': 'ran', 'changed': reported['changed']}


def planned(chosen, ran, failure, check_mode, reported):
    """{check: {outcome, why}} for this host's open findings as the record stage knows them: the
    plan's left and manual checks, and each role's checks from what the role reported (``reported``:
    {role: read_role_outcome()}). A role that ran in a real run is ``ran`` until compose() reads
    the audit after it."""
    found = {}
    for item in chosen.get('left') or []:
        if item.get('check') != '(host)':
            found[item['check']] = {'outcome': 'not_run', 'why': item['why']}
    for cid in chosen.get('manual') or []:
        found[cid] = {'outcome': 'manual', 'why': no_role_reason(cid)}
    failed_role = None
    for role in chosen.get('roles') or []:
        if role in ran:
            outcome = _ran(check_mode, reported.get(role))
        elif failure and failed_role is None:
            failed_role = role
            outcome = {'outcome': 'failed', 'why': 'the role failed: %s' % _bounded(str(failure.get('reason') or 'no message'))}
        else:
            outcome = {'outcome': 'not_run', 'why': 'an earlier role on this host failed' if failure else 'not reached'}
        for cid in chosen.get('checks_by_role', {}).get(role, []):
            found[cid] = dict(outcome)
    return found


def _unrecorded(cid, record, declared):
    """The outcome of an open finding the record stage said nothing of: the host's failure, a declared
    check (always by hand), or a check the plan never saw."""
    state = record.get('state')
    if state in ('failed', 'lost', 'not_run'):
        why = _bounded(str(record.get('reason') or 'the host was not remediated'))
        return {'outcome': 'not_run' if state == 'not_run' else 'failed', 'why': why}
    if cid in declared:
        advice = declared[cid].get('advice') or []
        return {'outcome': 'manual', 'why': 'a declared check has no automatic fix: %s' % (
            _bounded(advice[0]) if advice else 'see %s' % declared[cid].get('docs'))}
    detection = registry.BY_ID.get(cid)
    if detection is not None and not (detection.REMEDIATION or {}).get('role'):
        return {'outcome': 'manual', 'why': no_role_reason(cid)}
    return {'outcome': 'manual', 'why': 'no outcome was recorded for it: check it by hand'}


def _final(now, audited, recorded, record, check_mode, cid, declared):
    """One open finding's outcome once the audit after the run is known."""
    outcome = _unrecorded(cid, record, declared) if recorded is None else dict(
        (k, recorded[k]) for k in ('outcome', 'why') if k in recorded)
    changed = bool(recorded and recorded.get('changed'))
    if not check_mode and audited and now in CLOSED:
        if changed:
            return {'outcome': 'fixed', 'why': 'the audit after the fix says %s' % now}
        return {'outcome': 'nothing_to_do', 'why': 'this run changed nothing for it; the audit after it says %s' % now}
    if outcome['outcome'] != 'ran':
        return outcome
    if check_mode or not audited:  # a role that ran in a real run, on a host lost before the audit after it
        return {'outcome': 'failed', 'why': 'the host could not be audited after the fix: nothing confirms it'}
    if now in OPEN:
        return {'outcome': 'failed', 'why': 'still %s after the role ran%s' % (now, '' if changed else ' (it changed nothing)')}
    return {'outcome': 'failed', 'why': 'the audit after the fix says %s: nothing confirms it' % now}


def compose(entry, check_mode, declared=None):
    """{check: {outcome, why}} for each finding that was open before a remediation run on this host
    (entry: the report's host record with ``before`` and ``remediation``; a host without a record has
    each open finding ``not_run``), None for a host without an audit before. ``declared``: the run's declared checks ({id: {docs, advice}}), always by hand."""
    record = entry.get('remediation')
    before = entry.get('before')
    if not isinstance(before, dict):
        return None
    if not isinstance(record, dict):
        record = {'state': 'not_run', 'reason': 'no remediation was recorded for this host (it left the play before its fixes)'}
    recorded = record.get('outcomes') if isinstance(record.get('outcomes'), dict) else {}
    audited = entry.get('state') == 'audited'
    outcomes = {}
    for cid in sorted(before):
        was = before[cid]
        if was not in OPEN:
            continue
        after = entry['findings'].get(cid) if audited else None
        now = after.get('status') if isinstance(after, dict) else None
        item = recorded.get(cid)
        outcomes[cid] = _final(now, audited, item if isinstance(item, dict) else None, record, check_mode, cid, declared or {})
    return outcomes


def totals(report):
    """{outcome: count} over the report's hosts (only outcomes that occur)."""
    counts = {}
    for entry in report['hosts']:
        for item in ((entry.get('remediation') or {}).get('outcomes') or {}).values():
            counts[item['outcome']] = counts.get(item['outcome'], 0) + 1
    return dict((k, counts[k]) for k in OUTCOMES if k in counts)


def _has_secret(value, depth=0):
    if depth > 20:
        return True
    if isinstance(value, dict):
        return any((isinstance(k, str) and any(w in k.lower() for w in _SECRET_WORDS)) or _has_secret(v, depth + 1)
                   for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_secret(v, depth + 1) for v in value)
    return False


def command(inventory, host, check, host_vars=None, report_dir=None):
    """(argv, note) of the command that shows the fix for ``check`` on ``host``: remediate limited to
    that host and check, in check mode with the diff. ``inventory``: the audit's inventory sources;
    ``host_vars``: the host's values of COMMAND_VARS (those set). Every word is shell-quoted by the
    caller (shlex.join); host and check are the run's own (inventory, registry), never a host's text."""
    argv = ['ansible-playbook', 'homelab.postmortem.remediate']
    for source in inventory or []:
        argv += ['-i', source]
    argv += ['--limit', host, '--tags', check]
    extra = {'postmortem_checks': [check]}
    note = None
    for name in COMMAND_VARS:
        if name not in (host_vars or {}):
            continue
        value = host_vars[name]
        if name == 'postmortem_settings' and _has_secret(value):
            note = 'add the postmortem_settings you audited with (not repeated here: they hold a credential)'
            continue
        if value in (None, '', [], {}, False, '/'):
            continue
        extra[name] = value
    if report_dir:
        extra['postmortem_report_dir'] = report_dir
    argv += ['-e', json.dumps(extra, sort_keys=True, separators=(', ', ': '))]
    argv += ['--check', '--diff']
    return argv, note


def shell_text(argv):
    return ' '.join(shlex.quote(str(word)) for word in argv)


def add_fixes(report, dest, described, vars_of):
    """Each audited host's open findings with what fixes them, as ``fix``: {check: fix_entry()}, from the run's
    inventory sources, the host's name, the check's id and ``vars_of(host)`` (its values of COMMAND_VARS, the
    controller's), never from a host's text."""
    inventory = (report.get('run') or {}).get('inventory') or []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            continue
        open_ids = sorted(cid for cid, f in entry['findings'].items() if isinstance(f, dict) and f.get('status') in OPEN)
        if not open_ids:
            continue
        host_vars = vars_of(entry['name'])
        fixes = {}
        for cid in open_ids:
            argv, note = command(inventory, entry['name'], cid, host_vars, dest)
            fixes[cid] = fix_entry(cid, argv, note, (described or {}).get(cid))
        entry['fix'] = fixes


def fix_entry(cid, argv, note, declared=None):
    """What postmortem.json says fixes one open finding: {command, note} for a check with a role (the command
    shell-quoted: shlex.split gives its words back), {manual} for one without (a declared check, an
    advice-only detection)."""
    if declared is not None:
        advice = declared.get('advice') or []
        return {'manual': '%s (docs: %s)' % (_bounded(advice[0]), _bounded(str(declared.get('docs')))) if advice
                else 'see %s' % _bounded(str(declared.get('docs')))}
    detection = registry.BY_ID.get(cid)
    if detection is None or not (detection.REMEDIATION or {}).get('role'):
        return {'manual': no_role_reason(cid)}
    found = {'command': shell_text(argv)}
    if note:
        found['note'] = note
    return found
