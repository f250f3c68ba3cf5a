#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ollama_format_think_facts
short_description: Find Ollama thinking models that are not held to a JSON schema when they answer without thinking
version_added: 0.1.0
description:
  - Reads C(/api/version), C(/api/tags) and C(/api/show) of the Ollama on the audited host (loopback only, with
    timeouts). On Ollama 0.12.4-rc7 and later (PR 12460) every local model whose capabilities include C(thinking)
    and that Ollama renders itself is C(at_risk), since with C(think) true and a C(format) the format is applied
    only after thinking was seen; models on the native chat path (from 0.30.0-rc0) are C(ok), cloud models are
    not asked.
  - Probe C(format_think) (opt-in) sends 3 short prompts times C(probe_seeds) requests with C(think) true and a
    one-field schema to each thinking model (at most C(probe_max_models)), counts the replies that skipped
    thinking and those that broke the schema, and reports the model C(affected) when any reply broke it.
  - "Settings: C(url), C(timeout), C(max_models), C(fixed_in), C(probe_models), C(probe_max_models),
    C(probe_seeds), C(probe_timeout)."
  - Returns C(ansible_facts.postmortem.ollama_format_think); the same detection runs in
    M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Which thinking models break the schema, measured
  homelab.postmortem.ollama_format_think_facts:
    probes: [format_think]
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(ollama_format_think).
      returned: always
      type: complex
      contains:
        ollama_format_think:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) has C(ollama_version), C(models) and, past C(max_models), C(skipped_models);
              C(evidence.instances) has one entry per model looked at, named by its short name, with the probe's
              measurements under C(probe) when it ran.
          returned: always
          type: dict
          sample:
            id: ollama_format_think
            status: affected
            summary: "Measured: 1 thinking model(s) broke the schema: qwen3:0.6b."
            evidence:
              instances:
                - name: model qwen3:0.6b
                  status: affected
                  evidence: {probe: {requests: 6, skipped_thinking: 2, broke_schema_without_thinking: 2}}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('ollama_format_think')


if __name__ == '__main__':
    main()
