#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ollama_gemma4_renderer_facts
short_description: Find Gemma 4 models that Ollama resolves to the wrong prompt template
version_added: 0.1.0
description:
  - Reads C(/api/version), C(/api/tags) and C(/api/show) of the Ollama on the audited host (loopback only,
    with timeouts) and, for every model whose stored renderer is C(gemma4), computes the renderer that
    version resolves it to, with that version's rules, since Ollama never shows it.
  - "Rules: before 0.21.0 one C(gemma4) renderer (C(gemma4-small) and C(gemma4-large) do not exist); from
    0.21.0-rc0 (PR 15612) e2b/e4b in the short name, then the full name, gives small, 26b/31b large, else the
    model type against 16e9, else small; from 0.30.3 (PR 16457) 12b is a large name and the threshold 12e9; an
    explicit renderer is used as is. The model type is the one the resolver reads, C(details.parameter_size) of
    C(/api/tags) (a safetensors import has none, so resolves small); pre-releases are ordered before their release."
  - C(affected) when a model of 10e9 parameters or more (its real size, C(general.parameter_count) of
    C(/api/show)) resolves small (on Ollama before 0.21.0, with the advice to upgrade); C(unknown) for a source
    build (version 0.0.0) or when the result cannot be told.
  - "Settings: C(url) (default C(http://127.0.0.1:11434)), C(timeout) (10), C(max_models) (500), C(fixed_in)
    (none; the first version with the 11.5e9 threshold of commit 122c7dab once a release is confirmed)."
  - Returns C(ansible_facts.postmortem.ollama_gemma4_renderer); the same detection runs in
    M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Which Gemma 4 models get the wrong template
  homelab.postmortem.ollama_gemma4_renderer_facts:

- name: An Ollama on another port
  homelab.postmortem.ollama_gemma4_renderer_facts:
    settings:
      ollama_gemma4_renderer:
        url: http://127.0.0.1:11500
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(ollama_gemma4_renderer).
      returned: always
      type: complex
      contains:
        ollama_gemma4_renderer:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) has C(ollama_version), C(rule_set), C(rule_source), C(models) and, past C(max_models),
              C(skipped_models). C(evidence.instances) has one entry per Gemma 4 model, named by its short name,
              with C(stored_renderer), C(model_type) (from C(/api/tags)), C(show_parameter_size),
              C(real_parameter_count), C(resolved_renderer) and C(decided_by).
          returned: always
          type: dict
          sample:
            id: ollama_gemma4_renderer
            status: affected
            summary: "1 large Gemma 4 model(s) get the wrong template on Ollama 0.35.1: mygemma:latest."
            evidence:
              instances:
                - name: model mygemma:latest
                  status: affected
                  evidence: {stored_renderer: gemma4, model_type: 11.9B, real_parameter_count: 11900000000,
                             resolved_renderer: gemma4-small, decided_by: "model type 11.9B < 1.2e+10"}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('ollama_gemma4_renderer')


if __name__ == '__main__':
    main()
