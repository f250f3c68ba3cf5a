# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: summary
type: stdout
short_description: The audit's answer and progress, without Ansible's task banners
version_added: 0.3.0
description:
  - >-
    A stdout callback for M(homelab.postmortem.audit_facts) runs (the C(homelab.postmortem.audit) and
    C(homelab.postmortem.remediate) playbooks): one progress line per host as its audit finishes
    (for example C([12/50] pi-07: affected) and the check ids in parentheses), one worded line per unreachable host and per failed task,
    the diffs a fix shows with C(--diff), what the remediation roles say, then the audit's own summary
    (what is wrong, where, the command that fixes it) and where the reports went.
  - >-
    No task banners, no C(skipping:) lines, no play recap table; a one-host audit prints about 25 lines.
  - >-
    Choose it with C(ANSIBLE_STDOUT_CALLBACK=homelab.postmortem.summary) in the environment or C(stdout_callback = homelab.postmortem.summary)
    in the C([defaults]) section of C(ansible.cfg). C(make audit) uses it. Ansible's default callback keeps working.
  - >-
    Every text a host returned (a finding's status, a check id, a message, a diff) is printed as visible text
    (control characters and direction marks escaped), never as escape codes.
requirements:
  - ansible-core 2.19 or later
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
'''

from ansible.plugins.callback import CallbackBase

from ansible_collections.homelab.postmortem.plugins.plugin_utils import callback_lines

AUDIT_ACTIONS = ('homelab.postmortem.audit_facts', 'audit_facts')
DEBUG_ACTIONS = ('ansible.builtin.debug', 'debug', 'ansible.legacy.debug')


class CallbackModule(CallbackBase):
    """Progress per host, failures worded once, the summary the report action prints."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'stdout'
    CALLBACK_NAME = 'homelab.postmortem.summary'

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._progress = callback_lines.Progress()

    def _say(self, lines):
        for line in lines:
            self._display.display(line)

    def v2_playbook_on_play_start(self, play):
        total = 0
        try:
            total = len(play.get_variable_manager().get_vars(play=play).get('ansible_play_hosts_all') or [])
        except Exception:  # pylint: disable=broad-except  # a count is only a progress hint
            total = 0
        self._progress.play(play.get_name(), total)

    def _is_audit(self, result):
        return result._task.action in AUDIT_ACTIONS

    def v2_runner_on_ok(self, result):
        if self._is_audit(result):
            self._say(self._progress.audited(result._host.get_name(), result._result))
        elif result._task.action in DEBUG_ACTIONS:
            self._say(callback_lines.said(result._host.get_name(), result._result))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if self._is_audit(result):
            self._say(self._progress.not_audited(result._host.get_name(), 'failed', result._result))
        elif not ignore_errors:
            self._say(callback_lines.failed(result._host.get_name(), result._task.get_name(), result._result))

    def v2_runner_on_unreachable(self, result):
        if self._is_audit(result):
            self._say(self._progress.not_audited(result._host.get_name(), 'unreachable', result._result))
        else:
            self._say(callback_lines.unreachable(result._host.get_name(), result._result))

    def v2_runner_item_on_failed(self, result):
        if not result._task.ignore_errors:
            self._say(callback_lines.failed(result._host.get_name(), result._task.get_name(), result._result))

    def v2_on_file_diff(self, result):
        results = result._result.get('results') if result._task.loop else None
        for item in results if isinstance(results, list) else [result._result]:
            if isinstance(item, dict) and item.get('diff') and item.get('changed', False):
                self._say(callback_lines.visible_block(self._get_diff(item['diff'])))

    def v2_playbook_on_stats(self, stats):
        self._say(callback_lines.recap(dict((host, stats.summarize(host)) for host in sorted(stats.processed))))
