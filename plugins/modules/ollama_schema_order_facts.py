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
  - "Reads C(/api/version), C(/api/tags), C(/api/show), and C(OLLAMA_GO_TEMPLATE) from the running C(ollama serve)
    (its process environment, else its systemd unit's C(Environment=)). From Ollama 0.30.0-rc0 a model that Ollama
    does not render itself takes the native chat path, which decodes the schema into a map and sends its keys
    sorted. Each model's path is decided as upstream's chatModeForModel does, from what these show: C(affected)
    when it is native for certain, C(ok) when rendered, C(at_risk) with the reason when it cannot be told.
    Ollama 0.5.0-rc1 to 0.5.2-rc3 re-sorted every schema (C(affected))."
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
            summary: "1 model(s) take the native chat path, which re-sorts schema keys: gemma3:1b."
            evidence:
              ollama_go_template: {state: set, value: "false", go_template_enabled: false}
              instances:
                - name: model gemma3:1b
                  status: affected
                  evidence: {chat_path: native, chat_path_reason: "OLLAMA_GO_TEMPLATE='false', read as false ..."}
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
