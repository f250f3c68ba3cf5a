# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_interface as interface
from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import root_problem
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, report_drift, report_files, report_summary, terminal
from ansible_collections.homelab.postmortem.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    playbook=dict(type='str', default='audit', choices=['audit', 'remediate']),
    hosts=dict(type='list', elements='str'),
)

# Values that hold per host (inventory); the others are read where the playbook reads them too.
PER_HOST = ('postmortem_root', 'postmortem_checks', 'postmortem_probes', 'postmortem_settings', 'postmortem_become',
            'postmortem_command_timeout', 'postmortem_detection_timeout', 'postmortem_task_timeout',
            'postmortem_check_files')


def _probe_scope(checks, available=None):
    """The detections postmortem_checks selects (whose probes postmortem_probes may name), or None
    when it selects nothing valid (said by its own check)."""
    try:
        return registry.select(interface.typed_list(checks, 'postmortem_checks'), available)
    except registry.SelectionError:
        return None


def value_problems(name, value, hosts, checks=None, available=None):
    """The problem with one variable's value (None when fine); ``hosts`` name where it was set;
    ``available``: the checks this run can select (the registry's and the declared checks)."""
    if name == 'postmortem_root':
        problem = root_problem(value, local_checks=False)
        return ('postmortem_root for %s: %s' % (_hosts_text(hosts), problem)) if problem else None
    scope = _probe_scope(checks, available) if name == 'postmortem_probes' and checks is not None else None
    problem = interface.check_value(name, value, probes_for=scope, available=available)
    if problem and hosts:
        problem += ' (for %s)' % _hosts_text(hosts)
    return problem


UNREADABLE = object()


def read_variable(variables, name, host, problems):
    """A variable's value as Ansible templates it, or UNREADABLE with the problem noted in
    ``problems`` ({(name, reason): [hosts]}), naming the variable: a value nested deeper than Ansible's
    templating goes (about 200 levels) fails there with "Recursive loop detected in template",
    which names nothing."""
    try:
        return variables[name]
    except Exception as exc:  # pylint: disable=broad-except
        reason = ' '.join(str(exc).split())[:200] or type(exc).__name__
        if 'recursi' in reason.lower():
            reason = 'it is nested deeper than Ansible can template (%s)' % reason
        problems.setdefault((name, reason), [])
        if host:
            problems[(name, reason)].append(host)
        return UNREADABLE


def unreadable_problems(problems):
    return ['%s could not be read%s: %s' % (name, (' for %s' % _hosts_text(hosts)) if hosts else '', reason)
            for (name, reason), hosts in sorted(problems.items())]


def _hosts_text(hosts):
    hosts = sorted(hosts)
    return ', '.join(hosts[:5]) + (' and %d more' % (len(hosts) - 5) if len(hosts) > 5 else '')


def declared_checks(values, found):
    """The run's declared checks (a CheckSet, or None without check files) from the hosts'
    postmortem_check_files ({repr: (value, [hosts])}), which must be one value for the whole run;
    every problem of every file is added to ``found``."""
    given = [(value, where) for value, where in values.values() if value not in (None, '', [])]
    if not given:
        return None
    if len(values) > 1:
        found.append('postmortem_check_files must be the same for every host of a run (the report\'s checks are the '
                     'run\'s): %s' % '; '.join('%r for %s' % (value, _hosts_text(where)) for value, where in values.values()))
        return None
    value = given[0][0]
    if interface.check_value('postmortem_check_files', value):
        return None  # said by the value's own check
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks as loader
    try:
        return loader.load(value, registry.BY_ID, registry.GROUPS)
    except loader.CheckFileProblem as exc:
        found.extend(exc.problems)
    return None


def tag_problems(playbook, run_tags, skip_tags, declared=()):
    """--tags and --skip-tags: they select fixes in remediate (by detection id); the audit has none."""
    run_tags = [t for t in (run_tags or []) if t != 'all']
    skip_tags = list(skip_tags or [])
    if playbook == 'audit':
        found = []
        if [t for t in run_tags if t != 'always'] or skip_tags:
            found.append('--tags/--skip-tags select nothing in the audit (%s): choose detections with postmortem_checks'
                         % ', '.join(run_tags + ['!' + t for t in skip_tags]))
        return found
    found = interface.check_tags(run_tags, skip_tags, declared)
    for tag in run_tags:
        if tag in declared:
            found.append('--tags %s: a declared check has no remediation role, so nothing would run (its fix is the '
                         'advice in its check file)' % tag)
        detection = registry.BY_ID.get(tag)
        if detection is not None and not detection.REMEDIATION.get('role'):
            found.append('--tags %s: that detection has no remediation role, so nothing would run (the fix is manual: '
                         'see %s/%s.md)' % (tag, report_summary.docs_dir(), tag))
    return found


def directory_problems(values, playbook, check_mode):
    """The report directory, and the textfile directory when set (the audit writes it), checked before
    any host is contacted: a 200-host run must not learn at its end that its report has nowhere to go.
    ``values``: the run's variables that passed their own check. In check mode nothing is created."""
    found = []
    report_dir = values.get('postmortem_report_dir', audit_variables.DEFAULTS['postmortem_report_dir'])
    path = report_files.report_dir_path(report_dir)
    why = report_files.directory_problem(path, created=True, probe=not check_mode)
    if why:
        found.append('postmortem_report_dir: the report directory %s %s' % (path, why))
    textfile_dir = values.get('postmortem_textfile_dir')
    if playbook == 'audit' and textfile_dir:
        path = report_files.textfile_dir_path(textfile_dir)
        why = report_files.directory_problem(path, created=False, probe=not check_mode)
        if why:
            found.append('postmortem_textfile_dir: the textfile directory %s %s' % (path, why))
    return found


class ActionModule(ControllerAction):
    """Runs once on the controller, before any host: the run's variables, all of them, checked."""

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        result, task_vars, args, hosts = self.start(tmp, task_vars)
        unreadable = {}
        names, per_value, check_files = _read_hosts(hosts, task_vars.get('hostvars') or {}, unreadable)
        names.update(k for k in task_vars if k.startswith(interface.PREFIX))
        if not hosts and 'postmortem_check_files' in task_vars:
            files = read_variable(task_vars, 'postmortem_check_files', None, unreadable)
            if files is not UNREADABLE:
                check_files[repr(files)] = (files, [])

        found = interface.describe_unknown(interface.unknown_variables(names))
        declared = declared_checks(check_files, found)
        available = declared.available(registry.BY_ID) if declared is not None else None
        declared_ids = [c.id for c in declared.checks] if declared is not None else []
        for (name, _raw, _checks_key), (value, checks, where) in sorted(per_value.items()):
            problem = value_problems(name, value, where, checks, available)
            if problem:
                found.append(problem)
        play_problems, fine = _play_values(task_vars, available, unreadable)
        found.extend(play_problems)
        if 'postmortem_report_dir' not in task_vars or 'postmortem_report_dir' in fine:
            found.extend(directory_problems(fine, args['playbook'], bool(self._task.check_mode)))
        found.extend(unreadable_problems(unreadable))
        found.extend(tag_problems(args['playbook'], task_vars.get('ansible_run_tags'), task_vars.get('ansible_skip_tags'),
                                  declared_ids))
        found.extend(_accept_problems(task_vars.get('postmortem_accept'), set(registry.BY_ID) | set(declared_ids)))

        result['changed'] = False
        result['problems'] = found
        # When the run began, for the report's duration, and the declared checks' questions for audit_facts
        # (a run_once result's facts reach every host; [] without check files, so no earlier run's stay).
        result['ansible_facts'] = {'_postmortem_started_at': time.time(),
                                   '_postmortem_declared': declared.wire() if declared is not None and not found else []}
        if found:
            # Each problem once, one per line, made visible: a check id from the operator's file or a value
            # may hold escape codes, and ansible-core prints a task's msg as it is (#44, #49).
            found = list(dict.fromkeys(found))
            result['problems'] = found
            result['failed'] = True
            result['msg'] = 'The %s was not started; fix its input first (%d problem%s):\n%s' % (
                'audit' if args['playbook'] == 'audit' else 'remediation', len(found), '' if len(found) == 1 else 's',
                '\n'.join('- ' + terminal.visible(problem) for problem in found))
        return result


def _read_hosts(hosts, hostvars, unreadable):
    """Every host's postmortem_* variables: (the names set anywhere, {(name, value, checks): (value, checks,
    [hosts])} so that each distinct value is checked once, {repr(files): (check files, [hosts])})."""
    names, per_value, check_files = set(), {}, {}
    for host in hosts:
        try:
            variables = hostvars[host]
        except KeyError:
            continue
        ours = [k for k in variables if k.startswith(interface.PREFIX)]
        names.update(ours)
        read = dict((name, read_variable(variables, name, host, unreadable)) for name in PER_HOST if name in ours)
        files = read.pop('postmortem_check_files', audit_variables.DEFAULTS['postmortem_check_files'])
        if files is not UNREADABLE:
            files = [] if files in (None, '', []) else files  # every way of saying "none" is one value
            check_files.setdefault(repr(files), (files, []))[1].append(host)
        checks = read.get('postmortem_checks', audit_variables.DEFAULTS['postmortem_checks'])
        if checks is UNREADABLE:
            checks = audit_variables.DEFAULTS['postmortem_checks']
        for name, value in read.items():
            if value is not UNREADABLE:
                key = (name, repr(value), repr(checks) if name == 'postmortem_probes' else None)
                per_value.setdefault(key, (value, checks, []))[2].append(host)
    return names, per_value, check_files


def _play_values(task_vars, available, unreadable):
    """The problems of the run-wide variables, and {name: value} of those that are fine."""
    found, fine = [], {}
    for name in interface.NAMES:
        if name in task_vars and name not in PER_HOST:
            value = read_variable(task_vars, name, None, unreadable)
            problem = value_problems(name, value, None, available=available) if value is not UNREADABLE else None
            if problem:
                found.append(problem)
            elif value is not UNREADABLE:
                fine[name] = value
    return found, fine


def _accept_problems(accept, known):
    """Whether the accepted-findings file can be used, checked whole before any host is contacted."""
    if not accept or not isinstance(accept, str):
        return []
    try:
        accepted.load(os.path.abspath(accept), report_drift.read_bounded, known)
    except accepted.AcceptProblem as exc:
        return [str(exc)]
    return []
