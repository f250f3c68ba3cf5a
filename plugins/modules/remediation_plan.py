#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: remediation_plan
short_description: Choose the remediation roles one host's findings call for
version_added: 0.2.0
description:
  - Runs on the controller (it is an action plugin), for each host, in the C(homelab.postmortem.remediate)
    playbook. From the audit before remediation it picks the open findings (V(affected), V(at_risk)) and
    returns the remediation roles they name, each once, in report order.
  - Every open finding that is not fixed says why - not in O(remediate), accepted in O(accept), no role (a
    manual fix), or not selected by C(--tags)/C(--skip-tags) (each role's tasks carry its detection's id).
  - After the roles, the playbook calls it again to record what each role did. The record carries the notes each
    role of the plan handed over in the fact C(<role's short name>_notes) (for example C(pi_ir_tx_notes)); only a
    list of strings is kept, at most 20 notes of 500 characters, and no other variable is read.
options:
  before_var:
    description: The host variable that holds the audit before remediation (a registered M(homelab.postmortem.audit_facts) result).
    type: str
    default: postmortem_before
  remediate:
    description: Detection ids whose fixes may run; V(all) for every one.
    type: list
    elements: str
    default: [all]
  accept:
    description: A YAML file of accepted findings (see M(homelab.postmortem.audit_report)); their fixes do not run.
    type: str
    default: ''
  remediate_accepted:
    description: Fix accepted findings too.
    type: bool
    default: false
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.action
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Choose the fixes this host's findings call for
  homelab.postmortem.remediation_plan:
    remediate: [pi_ir_tx]
    accept: /etc/postmortem/accepted.yml
  register: plan
'''

RETURN = r'''
roles:
  description: The remediation roles to run on this host, each once, in report order.
  returned: always
  type: list
  elements: str
  sample: [homelab.postmortem.pi_ir_tx]
checks_by_role:
  description: The detections each role is run for.
  returned: always
  type: dict
  sample: {homelab.postmortem.llama_server: [llama_lora_cache, llama_sleep_race]}
manual:
  description: Open findings whose fix is manual (no role).
  returned: always
  type: list
  elements: str
  sample: [ollama_schema_order]
left:
  description: Open findings that are not fixed in this run, each with why.
  returned: always
  type: list
  elements: dict
  sample: [{check: pi_ir_tx, why: "accepted (postmortem_accept entry 1: blaster unplugged)"}]
'''
