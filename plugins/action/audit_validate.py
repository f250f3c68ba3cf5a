# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUSES
from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import root_problem

ARGUMENT_SPEC = dict(
    checks=dict(type='raw', default=['all']),
    probes=dict(type='raw', default=[]),
    settings=dict(type='raw', default={}),
    fail_on=dict(type='raw', default='never'),
    command_timeout=dict(type='raw', default=30),
    detection_timeout=dict(type='raw', default=300),
    root_var=dict(type='str', default='postmortem_root'),
    hosts=dict(type='list', elements='str'),
)


def _list(value, name):
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)):
        raise registry.SelectionError('%s must be a list, got %s' % (name, type(value).__name__))
    return list(value)


def _seconds(value, name):
    try:
        number = int(str(value).strip())
    except ValueError:
        raise registry.SelectionError('%s must be a whole number of seconds, got %r' % (name, value))
    if number < 1:
        raise registry.SelectionError('%s must be at least 1 second, got %d' % (name, number))
    return number


def problems(args, roots):
    """Every mistake in the audit's input, before any host is contacted."""
    found = []
    checks = probes = None
    try:
        checks = registry.select(_list(args['checks'], 'checks'))
    except registry.SelectionError as exc:
        found.append('checks: %s' % exc)
    try:
        probes = _list(args['probes'], 'probes')
        registry.validate_probes(probes, checks if checks is not None else registry.DETECTIONS)
    except registry.SelectionError as exc:
        found.append('probes: %s' % exc)
    try:
        registry.validate_settings(args['settings'])
    except registry.SelectionError as exc:
        found.append('settings: %s' % exc)
    if args['fail_on'] not in ('never',) + STATUSES:
        found.append('fail_on: %r is not one of never, %s' % (args['fail_on'], ', '.join(STATUSES)))
    for name in ('command_timeout', 'detection_timeout'):
        try:
            _seconds(args[name], name)
        except registry.SelectionError as exc:
            found.append(str(exc))
    for host, root in sorted(roots.items()):
        problem = root_problem(root, local_checks=False)
        if problem:
            found.append('root for %s: %s' % (host, problem))
    return found


class ActionModule(ActionBase):
    """Runs once on the controller, before any host: the audit's input, all of it, checked."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hosts = args['hosts'] or list(task_vars.get('ansible_play_hosts_all') or [])
        hostvars = task_vars.get('hostvars') or {}
        roots = {}
        for host in hosts:
            try:
                value = hostvars[host].get(args['root_var'])
            except KeyError:
                value = None
            if value is not None:
                roots[host] = self._templar.template(value)
        found = problems(args, roots)
        result['changed'] = False
        result['problems'] = found
        if found:
            result['failed'] = True
            result['msg'] = 'The audit was not started; fix its input first: %s' % ' | '.join(found)
        return result
