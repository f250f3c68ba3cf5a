# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's data model: one record per host, what postmortem.json holds.

Controller-side only, and the bottom of the controller's layers: it imports no view. JUnit
(report_junit), HTML (report_html), the metrics (report_metrics) and the summary (report_summary)
are views of this model, so they can never disagree; report_gate decides from it whether the run
fails; report_encoding makes every finding strict JSON once; report_files writes them all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUSES, json_safe, safe_text, worst_status
from ansible_collections.homelab.postmortem.plugins.plugin_utils import fix_outcome, host_findings
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_encoding import COMPACT, plain, plain_fast, strict_encode

# Host states that are not findings. For the fail threshold they count as
# ``error``: an operator who fails on errors wants to hear about a host that
# could not be audited at all.
HOST_PROBLEMS = ('unreachable', 'failed')
# A finding's statuses that call for a fix.
OPEN = ('affected', 'at_risk')


# 3: per host unmeasured (check: since), unmeasured_since and last_measured_at; last_good at the top;
# nothing_audited also when hosts matched and none could be audited. 2: schema_version and kind; per
# host drift, accepted and acceptance_expired beside the findings; drift, accept and nothing_audited at
# the top. 1: the reports of 0.1.0 and 0.2.0 before it.
SCHEMA_VERSION = 3


def _text(value):
    """A value as text; one that is not text is cut to a few levels first (printing it must not
    recurse through whatever nesting a host gave it)."""
    if isinstance(value, str):
        return value
    return str(json_safe(value, 3)) if value else ''


def _one_line(text, limit=500):
    """A reason on one line: runs of whitespace (\\r\\n from ssh, tabs) folded to one space."""
    return ' '.join(_text(text).split())[:limit]


# A role's notes in the remediation record (remediation.role_notes): what only its own task output said
# before (a Pi 3 has no trial boot), bounded.
NOTES_MAX = 20
NOTE_CHARS = 500
# The outcomes the record stage may hand the report per check: fix_outcome's, and 'ran' until the audit
# after the run decides it (fix_outcome.compose).
RECORDED_OUTCOMES = fix_outcome.OUTCOMES + ('ran',)
# How the report's reason for a host whose module could not start begins (report.py writes it, the
# error line first so that it shows in the summary's one line), and the fix the summary then offers.
NOT_STARTED = 'no working Python: '
INTERPRETER_FIX = 'set ansible_python_interpreter, e.g. -e ansible_python_interpreter=/usr/bin/python3'
# How Ansible says the module never started (ansible-core 2.19): no file at the interpreter's path
# ("The module interpreter '/x' was not found."), or an interpreter that printed no JSON at all ("No
# start of json char found": a pyenv shim naming a version that is not installed); rc 127 is the
# shell's "command not found". A Python that started and died says so with a traceback instead.
NOT_STARTED_MSGS = ('No start of json char found', 'The module interpreter', 'you probably need to set the interpreter')
# The stderr line that names the error, before the advice a shim or shell prints after it.
_ERROR_LINE = re.compile(r'not found|no such file|cannot execute|permission denied|exec format error|error', re.IGNORECASE)


def _stderr_lines(result):
    lines = [line.strip() for line in _text(result.get('module_stderr')).splitlines() if line.strip()]
    return [line for line in lines if not line.startswith('Shared connection to')]


def _not_started(result, stderr):
    if any(line.startswith('Traceback') for line in stderr):
        return False
    msg = _text(result.get('msg'))
    return result.get('rc') == 127 or any(words in msg for words in NOT_STARTED_MSGS)


def _interpreter_tried(result, configured):
    """(the interpreter Ansible ran the module with, how it came to it), or (None, None). Discovery
    reports its pick in the result (it is the host's answer: shown, never run by us); an interpreter
    set for the host is the controller's own (``configured``: the host's ansible_python_interpreter)."""
    facts = result.get('ansible_facts')
    discovered = facts.get('discovered_interpreter_python') if isinstance(facts, dict) else None
    if isinstance(discovered, str) and discovered.strip():
        return _one_line(discovered, 200), 'discovered'
    if isinstance(configured, str) and configured.strip():
        return _one_line(configured, 200), 'ansible_python_interpreter'
    return None, None


def _not_started_reason(result, stderr, configured):
    """Why the module could not start, the line naming the error first (the summary shows one line of
    about 90 columns), then the interpreter tried and how to set another; Ansible's words last."""
    msg = _one_line(result.get('msg'))
    error = [line for line in stderr if _ERROR_LINE.search(line)] or stderr or [msg or 'no output']
    interpreter, how = _interpreter_tried(result, configured)
    tried = ('%s (%s)' % (interpreter, how)) if interpreter else 'the interpreter Ansible chose'
    return ('%s%s; tried %s; %s, or in the inventory as the repository\'s inventory/localhost.yml does. Ansible: %s%s' % (
        NOT_STARTED, _one_line(error[0], 200), tried, INTERPRETER_FIX, msg,
        ('; module stderr: %s' % _one_line(' / '.join(stderr), 300)) if stderr else ''))


def _failure_reason(result, default, interpreter=None):
    """Why a host's task failed. When the module never produced JSON (no usable Python, a too old
    one), Ansible's msg is generic and the cause is in module_stderr: the exception line after a
    traceback, else the meaningful lines in order (a shell's or pyenv's "command not found" comes
    first, its advice after). A module that could not start at all names the interpreter it tried
    (``interpreter``: the host's ansible_python_interpreter, when set) and how to set another."""
    stderr = _stderr_lines(result)
    if _not_started(result, stderr):
        return _not_started_reason(result, stderr, interpreter)
    msg = _one_line(result.get('msg') or default)
    if any(line.startswith('Traceback') for line in stderr):
        after = stderr[max(i for i, line in enumerate(stderr) if line.startswith('Traceback')) + 1:]
        # The exception is the last line that is not a frame ("File ...") or its source line.
        frames = [line for line in after if not line.startswith('File ')]
        cause = frames[-1] if frames else ''
    else:
        cause = ' / '.join(stderr)
    if cause:
        return '%s (module stderr: %s)' % (msg, _one_line(cause, 300))
    return msg


def _problem(name, reason, state='failed'):
    return {'name': name, 'state': state, 'reason': reason, 'findings': {}}


def _classify(name, result, known, interpreter=None):
    """(the host record without its findings' text, the findings as the host returned them);
    ``interpreter``: the host's ansible_python_interpreter, for the reason of a module that could not start."""
    if result is None:
        return _problem(name, 'no audit result: the host left the play before the audit ran'), None
    if not isinstance(result, dict):
        return _problem(name, 'the audit result is %s, not a task result' % type(result).__name__), None
    if result.get('unreachable'):
        return _problem(name, safe_text(_one_line(result.get('msg') or 'host unreachable')), 'unreachable'), None
    if result.get('failed'):
        return _problem(name, safe_text(_failure_reason(result, 'audit module failed', interpreter))), None
    if result.get('skipped'):
        return _problem(name, 'audit task was skipped on this host'), None
    facts = result.get('ansible_facts') or {}
    findings, problem = host_findings.check(facts.get('postmortem') if isinstance(facts, dict) else facts, known)
    if problem:
        return _problem(name, safe_text(problem)), None
    return {'name': name, 'state': 'audited', 'reason': None, 'findings': findings,
            'run': plain_fast(facts.get('postmortem_run') or {})}, findings


def _encode_findings(findings):
    """Each finding encoded once, as strict compact JSON: ({id: finding}, {id: text}).

    The writers reuse these texts (the JSON file, the HTML's blocks, the JUnit bodies) instead of
    encoding the evidence again; that is what keeps the report near the cost of one json.dumps.
    Findings that already are strict JSON are kept as they came (Ansible's tagged containers
    encode as the plain ones); anything else (NaN, lone surrogates, sets, odd keys) is copied
    through plain() first."""
    try:
        texts = {}
        for cid, finding in findings.items():
            if not isinstance(cid, str):
                raise TypeError('finding id %r' % (cid,))
            texts[cid] = text = strict_encode(finding)
            text.encode('utf-8')
        return findings, texts
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        findings = plain(findings)
        return findings, dict((cid, COMPACT.encode(f)) for cid, f in findings.items())


def _entry_and_texts(name, result, known, interpreter=None):
    """(the report's host record, {check id: the finding's JSON text})."""
    entry, findings = _classify(name, result, known, interpreter)
    texts = {}
    if findings is not None:
        entry['findings'], texts = _encode_findings(findings)
    return entry, texts


class FleetReport(dict):
    """The report's data model (a plain dict to every reader), plus each host's findings as the
    JSON text build() already made: ``finding_texts[i]`` is {check id: text} for hosts[i]."""
    finding_texts = None


def _recorded_outcome(item):
    kept = {'outcome': item['outcome']}
    if isinstance(item.get('why'), str):
        kept['why'] = safe_text(item['why'][:NOTE_CHARS])
    if isinstance(item.get('changed'), bool):
        kept['changed'] = item['changed']
    return kept


def _remediation_record(value):
    """What the remediate playbook recorded for a host (postmortem_remediation): state and why."""
    value = plain_fast(value)
    if not isinstance(value, dict):
        return {'state': 'unknown', 'reason': 'the remediation record is %s, not a mapping' % type(value).__name__}
    record = dict((k, value[k]) for k in ('state', 'task', 'reason', 'roles', 'left', 'manual', 'check_mode', 'dropped') if k in value)
    record['state'] = safe_text(str(record.get('state') or 'unknown'))
    # The roles' notes (remediation.role_notes): kept only in the shape and bounds the remediate playbook gives them.
    notes = value.get('notes')
    if isinstance(notes, list):
        kept = [{'role': safe_text(n['role']), 'note': safe_text(n['note'][:NOTE_CHARS])} for n in notes[:NOTES_MAX]
                if isinstance(n, dict) and isinstance(n.get('role'), str) and isinstance(n.get('note'), str)]
        if kept:
            record['notes'] = kept
    # What the record stage decided per check (fix_outcome.planned): kept only in its own shape.
    outcomes = value.get('outcomes')
    if isinstance(outcomes, dict):
        record['outcomes'] = dict((safe_text(cid), _recorded_outcome(item)) for cid, item in outcomes.items()
                                  if isinstance(cid, str) and isinstance(item, dict)
                                  and item.get('outcome') in RECORDED_OUTCOMES)
    return record


def _outcomes(entries, check_mode, described):
    """A remediation run: each finding open before it gets its outcome (fix_outcome.compose) in its
    host's record; a host with open findings and no record gets one that says so."""
    for entry in entries:
        outcomes = fix_outcome.compose(entry, check_mode, described)
        if not outcomes:
            continue
        entry.setdefault('remediation', {'state': 'not_run', 'reason': 'no remediation was recorded for this host'})
        entry['remediation']['outcomes'] = outcomes


def nothing_audited_reason(scope):
    """Why a run audited no host, in the words of its own input."""
    scope = scope or {}
    inventory = ', '.join(scope.get('inventory') or []) or 'the inventory'
    limit = scope.get('limit')
    return 'no host matched %r in %s%s' % (
        scope.get('host_pattern') or 'all', inventory, (' with --limit %s' % limit) if limit else '')


def unaudited_reason(entries, shown=3):
    """Why a run whose hosts matched audited none of them: counts per state, the first hosts' reasons."""
    states = {}
    for entry in entries:
        states[entry['state']] = states.get(entry['state'], 0) + 1
    # 240: room for a reason's cure (a module that could not start says how to set the interpreter).
    first = '; '.join('%s %s: %s' % (e['name'], e['state'], _one_line(e['reason'], 240)) for e in entries[:shown])
    return 'none of the %d host(s) could be audited (%s): %s%s' % (
        len(entries), ', '.join('%d %s' % (n, s) for s, n in sorted(states.items())), first,
        ' and %d more, each with its reason in the report' % (len(entries) - shown) if len(entries) > shown else '')


def build(hosts, results, checks, collection_version, now=None, before=None, remediation=None, scope=None,
          described=None, interpreters=None):
    """hosts: names in inventory order; results: {host: registered result or None};
    checks: [(id, title)] in report order; before: {host: an earlier result} (a remediation run);
    remediation: {host: what the remediation recorded, or None}; scope: the run's host pattern,
    inventory sources, limit and check mode (a report without hosts says why from it);
    described: {id: {docs, advice, source}} of the run's declared checks (their entry in ``checks``
    carries it as ``declared``: the fix the report offers for them); interpreters: {host: its
    ansible_python_interpreter} for the hosts that have one set (named when their module could not start)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    known = frozenset(cid for cid, _title in checks)
    interpreters = interpreters or {}
    encoded = [_entry_and_texts(name, results.get(name), known, interpreters.get(name)) for name in hosts]
    entries, texts = [e for e, _t in encoded], [t for _e, t in encoded]
    if before is not None:
        for entry in entries:
            earlier, findings = _classify(entry['name'], before.get(entry['name']), known)
            entry['before'] = (dict((safe_text(str(cid)), safe_text(str(f.get('status', 'error'))))
                                    for cid, f in findings.items())
                               if findings is not None else {'(host)': earlier['state']})
    for entry in entries if remediation else ():
        if remediation.get(entry['name']) is not None:
            entry['remediation'] = _remediation_record(remediation[entry['name']])
    if before is not None:
        _outcomes(entries, bool((scope or {}).get('check_mode')), described)
    # Only the checks of this run are columns: host_findings.check refused any other id.
    seen = set(cid for e in entries for cid in e['findings'])
    known_checks = [c for c in checks if c[0] in seen] or list(checks)
    totals = dict((s, 0) for s in STATUSES + HOST_PROBLEMS)
    for entry in entries:
        if entry['state'] != 'audited':
            totals[entry['state']] += 1
            continue
        for finding in entry['findings'].values():
            totals[finding.get('status', 'error')] = totals.get(finding.get('status', 'error'), 0) + 1
    report = FleetReport({
        'schema_version': SCHEMA_VERSION,
        'kind': 'remediation' if before is not None or remediation is not None else 'audit',
        'generator': 'homelab.postmortem %s' % collection_version,
        'generated_at': now.strftime('%Y-%m-%dT%H:%M:%SZ'),
        'checks': [dict({'id': cid, 'title': title}, **({'declared': described[cid]} if cid in (described or {}) else {}))
                   for cid, title in known_checks],
        'statuses': list(STATUSES),
        'hosts': entries,
        'totals': dict((k, v) for k, v in totals.items() if v),
    })
    if before is not None:
        report['outcomes'] = fix_outcome.totals(report)
    if scope is not None:
        report['run'] = plain_fast(dict((k, scope.get(k)) for k in ('host_pattern', 'inventory', 'limit', 'check_mode',
                                                                    'duration_seconds') if k in scope))
    if not hosts:
        # Written so that an older report in the directory is never taken for this run's.
        report['nothing_audited'] = safe_text(nothing_audited_reason(scope))
    elif not any(e['state'] == 'audited' for e in entries):
        report['nothing_audited'] = safe_text(unaudited_reason(entries))
    report.finding_texts = texts
    return report


def finding_texts(report):
    """{check id: JSON text} per host, aligned with report['hosts']: build()'s, or made now for a
    report that did not come from build() (a copy, one read back from disk)."""
    texts = getattr(report, 'finding_texts', None)
    if texts is not None and len(texts) == len(report['hosts']):
        return texts
    return [_encode_findings(entry['findings'])[1] for entry in report['hosts']]


def findings_json(texts):
    """One host's findings object from its per-finding texts."""
    return '{' + ','.join('%s:%s' % (COMPACT.encode(cid), text) for cid, text in texts.items()) + '}'


def hosts_findings_json(report):
    return [findings_json(texts) for texts in finding_texts(report)]


def to_json_parts(report, findings_text):
    """The report as compact JSON, in pieces of about one host each (written one after another, a
    10,000-host report never exists as one string: allocating and faulting in strings of tens of
    megabytes cost more than encoding them). Joined, the pieces are what json.dumps(report,
    separators=(',', ':'), ensure_ascii=False) gives, each host's findings spliced in as the text
    build() made."""
    keys = list(report)
    at = keys.index('hosts')
    pairs = ['%s:%s' % (COMPACT.encode(key), COMPACT.encode(report[key])) for key in keys if key != 'hosts']
    yield '{' + ''.join(pair + ',' for pair in pairs[:at]) + '"hosts":['
    for position, (entry, text) in enumerate(zip(report['hosts'], findings_text)):
        yield (',' if position else '') + '{' + ','.join(
            '%s:%s' % (COMPACT.encode(key), text if key == 'findings' else COMPACT.encode(entry[key]))
            for key in entry) + '}'
    yield ']' + ''.join(',' + pair for pair in pairs[at:]) + '}'


def worst(report):
    statuses = []
    for entry in report['hosts']:
        if entry['state'] != 'audited':
            statuses.append('error')
        statuses.extend(f.get('status', 'error') for f in entry['findings'].values())
    return worst_status(statuses) if statuses else None
