#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ollama_schema_order_facts
short_description: Find Ollama models whose chat path re-sorts JSON schema keys
version_added: 0.1.0
description:
  - Reads C(/api/version), C(/api/tags), C(/api/show), and C(OLLAMA_GO_TEMPLATE) from the running C(ollama serve)
    (its process environment, else its systemd unit's C(Environment=)). On Ollama 0.30.0 and later (PR 16031)
    a model without a renderer or parser can take the native chat path, which decodes the schema into a map and
    sends its keys sorted; such models are C(at_risk) (certain with C(OLLAMA_GO_TEMPLATE=false)).
  - Probe C(schema_order) (opt-in) sends one short request per model at risk (at most C(probe_max_models)) with a
    two-key schema declared in reverse alphabetical order, and reports the model C(affected) when the keys come
    back sorted.
  - "Settings: C(url), C(timeout), C(max_models), C(probe_models), C(probe_max_models), C(probe_timeout)."
  - Returns C(ansible_facts.postmortem.ollama_schema_order); the same detection runs in
    M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Which models re-sort schema keys, measured
  homelab.postmortem.ollama_schema_order_facts:
    probes: [schema_order]
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(ollama_schema_order).
      returned: always
      type: complex
      contains:
        ollama_schema_order:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) has C(ollama_version), C(models) and, past C(max_models), C(skipped_models);
              C(evidence.instances) has one entry per model looked at, named by its short name, with the probe's
              measurements under C(probe) when it ran.
          returned: always
          type: dict
          sample:
            id: ollama_schema_order
            status: affected
            summary: "Measured: 1 model(s) return schema keys re-sorted: gemma3:1b."
            evidence:
              ollama_go_template: false
              instances:
                - name: model gemma3:1b
                  status: affected
                  evidence: {probe: {keys: [alpha_animal, zeta_colour]}}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('ollama_schema_order')


if __name__ == '__main__':
    main()
