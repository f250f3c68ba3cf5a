#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: audit_facts
short_description: Run homelab.postmortem detections on a host in one round trip
version_added: 0.1.0
description:
  - Runs any subset of the collection's detections on the target and returns one finding
    per detection as C(ansible_facts.postmortem.<id>).
  - Detections read files, C(/proc), C(/sys) and C(systemctl show); they never change the host.
  - This is the module behind the C(homelab.postmortem.audit) playbook.
options:
  checks:
    description:
      - Detection ids to run, like C(gather_subset). C(all) runs every detection; C(!id)
        excludes one. A list of only exclusions means all but those.
      - Known ids are C(pi_ir_tx) and C(llama_sleep_race).
      - An unknown id fails the task.
    type: list
    elements: str
    default: [all]
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem contributors
'''

EXAMPLES = r'''
- name: Run every detection
  homelab.postmortem.audit_facts:

- name: Everything but the Raspberry Pi check
  homelab.postmortem.audit_facts:
    checks: ['!pi_ir_tx']

- name: Audit an SD-card image before it is flashed
  homelab.postmortem.audit_facts:
    checks: [pi_ir_tx]
    root: /mnt/sdcard

- name: Narrow the affected kernel range once a fixed kernel ships
  homelab.postmortem.audit_facts:
    checks: [pi_ir_tx]
    settings:
      pi_ir_tx:
        fixed_in: "6.18.60"

- name: Show what was found
  ansible.builtin.debug:
    msg: "{{ item.value.status }}: {{ item.value.summary }}"
  loop: "{{ ansible_facts.postmortem | dict2items }}"
'''

RETURN = r'''
# Shared by every detection module; see the homelab.postmortem.detection doc fragment.
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module()


if __name__ == '__main__':
    main()
