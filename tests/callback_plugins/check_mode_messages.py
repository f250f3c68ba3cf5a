# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test aid, not shipped: records every message a --check run shows, for tests/check_mode_wording.py.

Enabled with ANSIBLE_CALLBACK_PLUGINS=<this directory> ANSIBLE_CALLBACKS_ENABLED=check_mode_messages and
POSTMORTEM_CHECK_MESSAGES=<file>: one JSON line per task result (each loop item too) with the host, the
role, the task, the action and its messages (msg, warnings). Runs without --check record nothing, so
Molecule's converge and idempotence steps leave the file to the check step.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
name: check_mode_messages
type: aggregate
short_description: Record the messages of a check-mode run (a test aid)
description:
  - Writes each task result's messages of an ansible-playbook --check run as a JSON line to the file named by
    the environment variable POSTMORTEM_CHECK_MESSAGES.
requirements:
  - enabled in callbacks_enabled
'''

import json
import os

from ansible import context
from ansible.plugins.callback import CallbackBase


def _messages(result):
    found = []
    msg = result.get('msg')
    if isinstance(msg, (list, tuple)):
        found += [str(item) for item in msg]
    elif msg not in (None, ''):
        found.append(str(msg))
    found += [str(item) for item in result.get('warnings') or []]
    return found


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'check_mode_messages'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._path = os.environ.get('POSTMORTEM_CHECK_MESSAGES')

    def _record(self, result, state):
        if not self._path or not context.CLIARGS.get('check'):
            return
        task = result._task
        role = getattr(task, '_role', None)
        items = result._result.get('results') if isinstance(result._result.get('results'), list) else None
        for each in ([result._result] if items is None else [result._result] + items):
            if not isinstance(each, dict):
                continue
            messages = _messages(each)
            if not messages:
                continue
            line = {'host': result._host.get_name(), 'role': role.get_name(include_role_fqcn=False) if role else None,
                    'task': task.get_name(), 'action': task.action, 'state': state, 'messages': messages}
            with open(self._path, 'a', encoding='utf-8') as handle:
                handle.write(json.dumps(line) + '\n')

    def v2_playbook_on_start(self, playbook):
        # A line per check-mode playbook, so that a run whose tasks showed no message still proves it was recorded.
        if self._path and context.CLIARGS.get('check'):
            with open(self._path, 'a', encoding='utf-8') as handle:
                handle.write(json.dumps({'playbook': os.path.basename(playbook._file_name), 'messages': []}) + '\n')

    def v2_runner_on_ok(self, result):
        self._record(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._record(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._record(result, 'unreachable')
