#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: audit_validate
short_description: Check an audit's input on the controller before any host is contacted
version_added: 0.1.0
description:
  - Runs on the controller (it is an action plugin), once, before M(homelab.postmortem.audit_facts).
    Checks the detection ids and groups, the probes, every detection's settings (types included),
    the fail threshold, the time limits, and each host's C(root) (it must be an absolute path).
  - Fails with every problem it found in one message, so a mistake costs no fleet run and no
    host is half-audited. Whether a C(root) exists is checked on each host by the audit itself.
options:
  checks:
    description: Detection ids and groups, as for M(homelab.postmortem.audit_facts).
    type: raw
    default: [all]
  probes:
    description: Probe names, as for M(homelab.postmortem.audit_facts).
    type: raw
    default: []
  settings:
    description: Per-detection settings, as for M(homelab.postmortem.audit_facts).
    type: raw
    default: {}
  fail_on:
    description: The threshold M(homelab.postmortem.audit_report) will use.
    type: raw
    default: never
  command_timeout:
    description: Seconds per host command (a whole number, at least 1).
    type: raw
    default: 30
  detection_timeout:
    description: Seconds per detection (a whole number, at least 1).
    type: raw
    default: 300
  root_var:
    description: The host variable that holds each host's image root, if any.
    type: str
    default: postmortem_root
  hosts:
    description: Hosts whose root to check. Defaults to C(ansible_play_hosts_all).
    type: list
    elements: str
attributes:
  action:
    support: full
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    platforms: posix
    support: full
    description: Target OS/families that can be operated against.
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
  - module: homelab.postmortem.audit_report
'''

EXAMPLES = r'''
- name: Check the audit's input once, before any host
  homelab.postmortem.audit_validate:
    checks: "{{ postmortem_checks | default(['all']) }}"
    fail_on: "{{ postmortem_fail_on | default('never') }}"
  run_once: true
'''

RETURN = r'''
problems:
  description: Every problem found; empty when the input is good.
  returned: always
  type: list
  elements: str
  sample: ["checks: unknown check 'pi_ir_rx'; known checks: pi_ir_tx, ..."]
'''
