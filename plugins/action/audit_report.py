# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os
import time

from ansible.utils.display import Display

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import COLLECTION_VERSION
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report as fleet_report
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, fix_outcome, report_drift, report_files, report_gate, report_metrics
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_summary, terminal
from ansible_collections.homelab.postmortem.plugins.plugin_utils.controller_action import ControllerAction
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_encoding import plain_fast

display = Display()

# Options a playbook variable feeds take its default from the one declaration (audit_interface).
default = audit_variables.option_default
ARGUMENT_SPEC = dict(
    dest=dict(type='path', default=default('audit_report', 'dest')),
    hosts=dict(type='list', elements='str'),
    result_var=dict(type='str', default='postmortem_gather'),
    before_var=dict(type='str'),
    remediation_var=dict(type='str'),
    formats=dict(type='list', elements='str', default=['json', 'junit', 'html', 'prometheus'],
                 choices=['json', 'junit', 'html', 'prometheus']),
    fail_on=dict(type='str', default=default('audit_report', 'fail_on'), choices=list(audit_variables.FAIL_ON_CHOICES)),
    fail_on_unaudited=dict(type='bool', default=default('audit_report', 'fail_on_unaudited')),
    print_summary=dict(type='bool', default=True),
    fail_on_no_hosts=dict(type='bool', default=default('audit_report', 'fail_on_no_hosts')),
    host_pattern=dict(type='str', default=default('audit_report', 'host_pattern')),
    previous=dict(type='str', default=default('audit_report', 'previous')),
    accept=dict(type='str', default=default('audit_report', 'accept')),
    fail_on_new_only=dict(type='bool', default=default('audit_report', 'fail_on_new_only')),
    textfile_dir=dict(type='str', default=default('audit_report', 'textfile_dir')),
    started_at=dict(type='float'),
    defer_failure=dict(type='bool', default=False),
    # raw: a path or a list of them; Ansible's list type would split a path at its commas.
    check_files=dict(type='raw', default=default('audit_report', 'check_files')),
)


def _host_var(hostvars, host, name, unreadable):
    """A host's variable as Ansible templates it; None when the host or the variable is missing.

    A value Ansible itself cannot template (a registered result nested about 200 levels deep
    fails with "Recursive loop detected in template") costs only that host its row, as
    ``unreadable(reason)``: the report is the fleet's, and one host's result must not fail it."""
    try:
        return hostvars[host].get(name)
    except KeyError:
        return None
    except Exception as exc:  # pylint: disable=broad-except
        reason = ' '.join(str(exc).split())[:300] or type(exc).__name__
        return unreadable('its %s could not be read on the controller: %s' % (name, reason))


def _collect(hostvars, hosts, args):
    """Each host's audit result, and (a remediation run) its earlier result and what its remediation
    recorded, read from its variables: ({host: result}, {host: earlier}, {host: record}); the last
    two are None when the task names no variable for them."""
    results = {}
    before = {} if args['before_var'] else None
    remediation = {} if args['remediation_var'] else None
    for host in hosts:
        results[host] = _host_var(hostvars, host, args['result_var'], lambda why: {'failed': True, 'msg': why})
        if before is not None:
            before[host] = _host_var(hostvars, host, args['before_var'], lambda why: {'failed': True, 'msg': why})
        if remediation is not None:
            remediation[host] = _host_var(hostvars, host, args['remediation_var'], lambda why: {'state': 'unknown', 'reason': why})
    return results, before, remediation


def _interpreters(hostvars, results):
    """The interpreter each host whose module failed was set to: its reason names it when the module
    could not start. Only shown, never run."""
    return dict((host, _host_var(hostvars, host, 'ansible_python_interpreter', lambda why: None))
                for host, result in results.items() if isinstance(result, dict) and result.get('failed'))


def _accept(report, path, known):
    """Mark accepted findings; a file that cannot be used (audit_validate checked it before the run,
    but it may have changed since) accepts nothing and says why: the gate then counts every finding.
    ``known``: the run's check ids (the registry's and the declared checks')."""
    try:
        entries = accepted.load(path, report_drift.read_bounded, known)
    except accepted.AcceptProblem as exc:
        return {'accepted': 0, 'expired': 0, 'unmatched': [], 'problem': str(exc)}
    return dict(accepted.apply(report, entries, datetime.date.today()), file=path)


def _declared(check_files, results, before):
    """(the run's declared checks or None, the results and the earlier results with their declared
    checks judged, a problem). The files were checked before any host was contacted; one that cannot
    be loaded now (changed during the run) is the run's failure: its hosts' answers are not judged."""
    if check_files in (None, '', []):
        return None, results, before, None
    # Imported here: the JMESPath judge is loaded only by a run that declares checks.
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks, declared_judge
    try:
        checks = declared_checks.load(check_files, registry.BY_ID, registry.GROUPS)
    except declared_checks.CheckFileProblem as exc:
        return None, results, before, 'the declared checks were not judged: %s' % '; '.join(exc.problems[:5])
    return (checks, declared_judge.judge_results(results, checks),
            declared_judge.judge_results(before, checks) if before else before, None)


def _scope(args, task_vars, check_mode):
    """What the run asked for (its host pattern, inventory, limit, check mode) and how long it took."""
    scope = {
        'host_pattern': args['host_pattern'],
        'inventory': [str(s) for s in task_vars.get('ansible_inventory_sources') or []],
        'limit': task_vars.get('ansible_limit'),
        'check_mode': check_mode,
    }
    if args['started_at']:
        scope['duration_seconds'] = round(max(0.0, time.time() - args['started_at']), 3)
    return scope


def _command_vars(hostvars, host):
    """The host's values of the variables a fix command repeats (fix_outcome.COMMAND_VARS), those set."""
    found = {}
    for name in fix_outcome.COMMAND_VARS:
        value = _host_var(hostvars, host, name, lambda why: None)
        if value is not None:
            found[name] = plain_fast(value)
    return found


def _drift(report, dest, known, previous):
    """The drift history to write after this run (report['drift'] is set), or None when there is none
    to keep: a remediation run, or a run without hosts. Only the ids this run knows are compared, kept
    and made metrics (a host's others never got this far)."""
    if report['kind'] != 'audit' or not report['hosts']:
        return None
    history, _drift_record = report_drift.drift_since(report, dest, known, previous)
    return history


def _write_reports(report, dest, formats):
    """The report files: ({format: path}, [problems]). A run that audited nothing keeps the last good
    report aside first, and never writes over one it could not keep."""
    audit = report['kind'] == 'audit'
    if audit and report.get('nothing_audited'):
        kept, keep_problems = report_files.keep_last_good(dest, report_drift.report_data)
        if kept:
            report['last_good'] = kept
        if keep_problems:
            return {}, keep_problems + ['%s was left as it was' % report_files.REPORT_FILES['json']]
    paths, problems = report_files.write(report, dest, formats)
    if audit and not report.get('nothing_audited') and 'json' in paths:
        report_files.forget_last_good(dest)
    return paths, problems


def _write_history(report, dest, history):
    """The drift history beside the reports: [problems]."""
    if history is None or not os.path.isdir(dest):
        return []
    try:
        report_files.atomic_write(os.path.join(dest, report_drift.HISTORY_FILE),
                                  [json.dumps(report_drift.next_history(report, history), separators=(',', ':')), '\n'])
    except (IOError, OSError) as exc:
        return ['the drift history was not written: %s' % (exc.strerror or exc)]
    return []


def _write_textfile(report, textfile_dir, duration, paths):
    """node_exporter's textfile (its path added to ``paths``): [problems]."""
    if not textfile_dir:
        return []
    path = os.path.join(os.path.abspath(textfile_dir), report_metrics.FILE)
    try:
        report_files.atomic_write(path, [report_metrics.render(report, time.time(), duration)])
    except (IOError, OSError) as exc:
        return ['%s was not written: %s' % (path, exc.strerror or exc)]
    paths['textfile'] = path
    return []


def _write(report, dest, args, history, duration):
    """Every file the run writes: ({kind: path}, [problems]). None of them raises: the summary is
    printed whatever happens to the files, it is the report of last resort."""
    paths, problems = _write_reports(report, dest, args['formats'])
    problems += _write_history(report, dest, history)
    problems += _write_textfile(report, args['textfile_dir'], duration, paths)
    return paths, problems


def _summarize(report, paths, gate_line, write_problems, declared_problem):
    """The terminal summary, host strings (summaries, reasons, a history's time stamps) made visible."""
    lines = report_summary.summary_lines(report, paths) + [gate_line]
    if write_problems:
        lines.append('Report files NOT written: ' + '; '.join(write_problems))
    if declared_problem:
        lines.append('Declared checks NOT judged: ' + declared_problem)
    return terminal.visible_lines(lines)


class ActionModule(ControllerAction):
    """Runs on the controller: reads every host's audit result, writes the reports."""

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        result, task_vars, args, hosts = self.start(tmp, task_vars)
        hostvars = task_vars.get('hostvars') or {}
        results, before, remediation = _collect(hostvars, hosts, args)
        declared, results, before, declared_problem = _declared(args['check_files'], results, before)
        checks = [(d.ID, d.TITLE) for d in registry.DETECTIONS] + (declared.report_checks() if declared else [])
        known = frozenset(cid for cid, _title in checks)
        scope = _scope(args, task_vars, bool(self._task.check_mode))
        report = fleet_report.build(hosts, results, checks, COLLECTION_VERSION, before=before, remediation=remediation,
                                    scope=scope, described=declared.described() if declared else None,
                                    interpreters=_interpreters(hostvars, results))
        dest = os.path.abspath(args['dest'])
        fix_outcome.add_fixes(report, dest, declared.described() if declared else None,
                              lambda host: _command_vars(hostvars, host))
        if args['accept']:
            report['accept'] = _accept(report, args['accept'], known)
        history = _drift(report, dest, known, args['previous'])
        paths, write_problems = _write(report, dest, args, history, scope.get('duration_seconds'))
        gate = report_gate.Policy.from_options(args)
        hits = gate.hits(report)
        lines = _summarize(report, paths, gate.line(report, hits), write_problems, declared_problem)
        if args['print_summary']:
            display.display('\n'.join(lines))
        else:
            result['summary'] = lines
        problems = ([declared_problem] if declared_problem else []) + (
            ['the report could not be written: %s' % '; '.join(write_problems)] if write_problems else [])
        return self.finish(result, report, paths, hits, gate.failures(report, hits, problems), args['defer_failure'])

    @staticmethod
    def finish(result, report, paths, hits, failures, defer_failure):
        """The task's result. The playbooks fail the run in a play of their own on the controller
        (defer_failure), so that the recap never counts the gate against the audited host this task
        happened to run on."""
        result.update(changed=False, paths=paths, totals=report['totals'], worst=fleet_report.worst(report), threshold_hits=hits)
        gate = {'failed': bool(failures), 'msg': terminal.visible('. '.join(failures)) if failures else None}
        if defer_failure:
            result['gate'] = gate
        elif failures:
            result['failed'] = True
            result['msg'] = gate['msg']
        return result
