# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables
from ansible_collections.homelab.postmortem.plugins.plugin_utils import accepted, fix_outcome, remediation, report_drift, report_summary, role_specs, terminal
from ansible_collections.homelab.postmortem.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    stage=dict(type='str', default='plan', choices=['plan', 'record']),
    before_var=dict(type='str', default='postmortem_before'),
    remediate=dict(type='list', elements='str', default=audit_variables.option_default('remediation_plan', 'remediate')),
    accept=dict(type='str', default=audit_variables.option_default('remediation_plan', 'accept')),
    remediate_accepted=dict(type='bool', default=audit_variables.option_default('remediation_plan', 'remediate_accepted')),
    plan=dict(type='dict'),
    ran=dict(type='list', elements='str', default=[]),
    failure=dict(type='dict'),
)


class ActionModule(ControllerAction):
    """Runs on the controller for each host of the remediate playbook: before its fixes, which roles
    its findings call for (and why every other open finding is left alone, and whether an earlier
    batch stopped the run); after them, the record of what each role did."""

    ARGUMENT_SPEC = ARGUMENT_SPEC

    def run(self, tmp=None, task_vars=None):
        result, task_vars, args, _hosts = self.start(tmp, task_vars)
        result['changed'] = False
        if args['stage'] == 'record':
            chosen = args['plan'] or {'roles': [], 'checks_by_role': {}, 'left': [], 'manual': []}
            specs = dict((role, role_specs.load(role)) for role in chosen['roles'])
            values = dict((name, self._templar.template(task_vars[name]))
                          for switches in remediation.role_switches(chosen['roles'], specs).values()
                          for name in switches if name in task_vars)
            # The roles are the plan's (the registry's); a role's notes are read as the role set them, never
            # templated again: they may hold what a host returned.
            notes = remediation.role_notes(chosen['roles'], dict(
                (remediation.notes_var(role), task_vars[remediation.notes_var(role)])
                for role in chosen['roles'] if remediation.notes_var(role) in task_vars))
            # Each role's outcome fact (<role>_outcome: changed, by_hand), read as the role set it, like its notes.
            reported = remediation.role_outcomes(chosen['roles'], dict(
                (fix_outcome.outcome_var(role), task_vars[fix_outcome.outcome_var(role)])
                for role in chosen['roles'] if fix_outcome.outcome_var(role) in task_vars))
            outcomes = fix_outcome.planned(chosen, args['ran'], args['failure'], self._task.check_mode, reported)
            result['record'] = remediation.record(chosen, args['ran'], args['failure'], self._task.check_mode,
                                                  remediation.switches_off(chosen['roles'], specs, values), notes, outcomes)
            said = remediation.failure_message(result['record'], task_vars.get('inventory_hostname'))
            result['say'] = terminal.visible(said) if said else None
            return result
        entries = []
        if args['accept']:
            try:
                entries = accepted.load(args['accept'], report_drift.read_bounded)
            except accepted.AcceptProblem as exc:
                result.update(failed=True, msg='no fix was chosen: %s' % exc)
                return result
        hostvars = task_vars.get('hostvars') or {}
        everyone = list(task_vars.get('ansible_play_hosts_all') or [])
        still = set(task_vars.get('ansible_play_hosts') or [])
        records = []
        for host in everyone:
            try:
                records.append((host, hostvars[host].get('postmortem_remediation')))
            except KeyError:
                continue
        before = task_vars.get(args['before_var'])
        chosen = remediation.plan(
            host=task_vars.get('inventory_hostname'), before=before, wanted=args['remediate'], entries=entries,
            remediate_accepted=args['remediate_accepted'], today=datetime.date.today(),
            run_tags=task_vars.get('ansible_run_tags') or ['all'], skip_tags=task_vars.get('ansible_skip_tags') or [])
        findings, _refused = remediation.findings_of(before)
        user_vars = set(k for k in task_vars if not k.startswith('_postmortem_'))
        specs = dict((role, role_specs.load(role)) for role in chosen['roles'])
        chosen['role_vars'], chosen['conflicts'], chosen['dropped'] = remediation.advice(chosen, findings, user_vars, specs)
        chosen['stop'] = remediation.stop_reason(records, [h for h in everyone if h not in still])
        chosen['docs_dir'] = report_summary.docs_dir()
        chosen['say'] = terminal.visible_lines(remediation.plan_messages(chosen, chosen['docs_dir']))
        result.update(chosen)
        return result
