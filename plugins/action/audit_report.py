# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import COLLECTION_VERSION
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUSES
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report as fleet_report
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_summary

display = Display()

ARGUMENT_SPEC = dict(
    dest=dict(type='path', default='postmortem-report'),
    hosts=dict(type='list', elements='str'),
    result_var=dict(type='str', default='postmortem_gather'),
    before_var=dict(type='str'),
    remediation_var=dict(type='str'),
    formats=dict(type='list', elements='str', default=['json', 'junit', 'html'], choices=['json', 'junit', 'html']),
    fail_on=dict(type='str', default='never', choices=['never'] + list(STATUSES)),
    fail_on_unaudited=dict(type='bool', default=True),
    print_summary=dict(type='bool', default=True),
    fail_on_no_hosts=dict(type='bool', default=True),
    host_pattern=dict(type='str'),
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


class ActionModule(ActionBase):
    """Runs on the controller: reads every host's audit result, writes the reports."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)

        hosts = args['hosts'] if args['hosts'] is not None else list(task_vars.get('ansible_play_hosts_all') or [])
        hostvars = task_vars.get('hostvars') or {}
        results, before, remediation = {}, {}, {}
        for host in hosts:
            results[host] = _host_var(hostvars, host, args['result_var'], lambda why: {'failed': True, 'msg': why})
            if args['before_var']:
                before[host] = _host_var(hostvars, host, args['before_var'], lambda why: {'failed': True, 'msg': why})
            if args['remediation_var']:
                remediation[host] = _host_var(hostvars, host, args['remediation_var'],
                                              lambda why: {'state': 'unknown', 'reason': why})

        checks = [(d.ID, d.TITLE) for d in registry.DETECTIONS]
        scope = {
            'host_pattern': args['host_pattern'] if args['host_pattern'] is not None else task_vars.get('postmortem_hosts', 'all'),
            'inventory': [str(s) for s in task_vars.get('ansible_inventory_sources') or []],
            'limit': task_vars.get('ansible_limit'),
            'check_mode': bool(self._task.check_mode),
        }
        report = fleet_report.build(hosts, results, checks, COLLECTION_VERSION,
                                    before=before if args['before_var'] else None,
                                    remediation=remediation if args['remediation_var'] else None, scope=scope)
        # The summary is printed whatever happens to the files: it is the report of last resort.
        paths, write_problems = fleet_report.write(report, args['dest'], args['formats'])
        hits = fleet_report.threshold_reached(report, args['fail_on'], args['fail_on_unaudited'])
        lines = report_summary.summary_lines(report, paths)
        lines += report_summary.gate_lines(report, args['fail_on'], args['fail_on_unaudited'], args['fail_on_no_hosts'], hits)
        if write_problems:
            lines += ['Report files NOT written: ' + '; '.join(write_problems)]
        if args['print_summary']:
            display.display('\n'.join(lines))
        result.update(
            changed=False,
            paths=paths,
            totals=report['totals'],
            worst=fleet_report.worst(report),
            threshold_hits=hits,
        )
        if not args['print_summary']:
            result['summary'] = lines
        failures = []
        if not hosts and args['fail_on_no_hosts']:
            failures.append('%s; set postmortem_fail_on_no_hosts: false to let such a run pass' % report['nothing_audited'])
        if write_problems:
            failures.append('the report could not be written: %s' % '; '.join(write_problems))
        if hits:
            unaudited = [h for h in hits if h.endswith('(not audited)')]
            failures.append('%d finding(s) at or above %s%s: %s' % (
                len(hits) - len(unaudited), args['fail_on'],
                (' and %d host(s) that could not be audited' % len(unaudited)) if unaudited else '',
                '; '.join(hits[:10])))
        if failures:
            result['failed'] = True
            result['msg'] = '. '.join(failures)
        return result
