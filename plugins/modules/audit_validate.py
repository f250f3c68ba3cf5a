#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: audit_validate
short_description: Check a run's postmortem_* variables on the controller before any host is contacted
version_added: 0.1.0
description:
  - Runs on the controller (it is an action plugin), once, as the first task of the
    C(homelab.postmortem.audit) and C(homelab.postmortem.remediate) playbooks. It reads the run's
    C(postmortem_*) variables itself (extra vars, and each host's inventory and group vars) and
    checks them against the one declaration of the audit's interface
    (C(plugins/module_utils/audit_variables.py)).
  - Checked, naming the variable and the hosts it was set for - C(postmortem_checks) (ids and groups),
    C(postmortem_probes), C(postmortem_settings) (every detection's settings, typed), C(postmortem_fail_on),
    C(postmortem_fail_on_unaudited), C(postmortem_fail_on_no_hosts), C(postmortem_become) (booleans),
    C(postmortem_command_timeout), C(postmortem_detection_timeout), C(postmortem_task_timeout) (whole seconds,
    1 to a week), C(postmortem_root) (absolute), C(postmortem_hosts), C(postmortem_report_dir),
    C(postmortem_remediate) (detections that have a remediation role), C(postmortem_serial) (hosts or a percentage).
  - A C(postmortem_*) variable that is none of these and not one of the results the playbooks set
    (C(postmortem), C(postmortem_run), C(postmortem_gather), C(postmortem_before), C(postmortem_remediation))
    is a mistake, reported with the closest known name ("did you mean C(postmortem_checks)?").
  - C(postmortem_checks), C(postmortem_probes) and C(postmortem_remediate) take a list or, as Ansible's list
    options (and C(gather_subset)) do, one string split at its commas (C(-e postmortem_checks=pi_ir_tx,podman)).
    A JSON list typed as text (C(-e 'postmortem_checks=["pi"]')) is refused with the C(-e '{...}') form that
    works; a misspelled check, group or probe name gets the closest known one.
  - The report directory (C(postmortem_report_dir), made absolute from the working directory as
    M(homelab.postmortem.audit_report) makes it) must be a directory this user can write, or one it can create;
    in the audit, C(postmortem_textfile_dir), when set, must be an existing directory this user can write. A
    read-only filesystem, a file in the way or a missing permission stops the run with the path and the reason.
    In check mode nothing is created (mode bits and mount flags are read); otherwise a test file is also
    created and removed at once, because root passes every mode bit and only an attempt shows what
    the filesystem itself refuses.
  - C(--tags) and C(--skip-tags) are checked too - in the remediation each must name a detection that has a
    remediation role; the audit has no tags (choose detections with C(postmortem_checks)).
  - Fails with every problem it found in one message, so a mistake costs no fleet run and no
    host is half-audited. Whether an O(homelab.postmortem.audit_facts#module:root) exists is checked on each host by the audit itself.
options:
  playbook:
    description: Which playbook's run this is; V(remediate) also checks the tags against the remediation roles.
    type: str
    choices: [audit, remediate]
    default: audit
  hosts:
    description: Hosts whose variables to check. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.action
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.audit_facts
  - module: homelab.postmortem.audit_report
'''

EXAMPLES = r'''
- name: Check the audit's input once, before any host
  homelab.postmortem.audit_validate:
  run_once: true

- name: Check a remediation run's input, tags included
  homelab.postmortem.audit_validate:
    playbook: remediate
  run_once: true
'''

RETURN = r'''
problems:
  description: Every problem found; empty when the input is good.
  returned: always
  type: list
  elements: str
  sample: ["postmortem_checks: unknown check 'pi_ir_rx' (did you mean pi_ir_tx?); known checks: pi_ir_tx, ...",
           "postmortem_check is not a variable of homelab.postmortem (did you mean postmortem_checks?)"]
'''
