# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
name: audit_default
short_description: The default of a homelab.postmortem playbook variable
version_added: 0.2.0
description:
  - Returns the default of each named C(postmortem_*) variable, from the one declaration of the audit's interface
    (C(plugins/module_utils/audit_variables.py)), so that the playbooks write no default of their own.
  - The collection's C(docs/variables.md) lists every variable with its type, default and meaning.
options:
  _terms:
    description: Variable names, for example V(postmortem_task_timeout).
    required: true
    type: list
    elements: str
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
'''

EXAMPLES = r'''
- name: Give the audit task its time limit, the user's or the declared default
  homelab.postmortem.audit_facts:
  timeout: "{{ postmortem_task_timeout | default(lookup('homelab.postmortem.audit_default', 'postmortem_task_timeout')) | int }}"
'''

RETURN = r'''
_raw:
  description: The default of each variable named, in order.
  type: list
  elements: raw
'''

from ansible.errors import AnsibleError
from ansible.plugins.lookup import LookupBase

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        found = []
        for name in terms:
            if name not in audit_variables.DEFAULTS:
                raise AnsibleError('%s is not a variable of homelab.postmortem; the variables are %s'
                                   % (name, ', '.join(audit_variables.NAMES)))
            found.append(audit_variables.DEFAULTS[name])
        return found
