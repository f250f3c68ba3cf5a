# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every action plugin of this collection shares: it runs on the controller and contacts no host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    """An action that needs no connection (the executor then opens none) and works in check mode."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    ARGUMENT_SPEC = {}

    def start(self, tmp, task_vars):
        """(result, task_vars, validated args, the play's hosts unless the task names them)."""
        result = super(ControllerAction, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        hosts = args.get('hosts')
        if hosts is None:
            hosts = list(task_vars.get('ansible_play_hosts_all') or [])
        return result, task_vars, args, hosts
