#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vllm_lora_patterns_facts
short_description: Find PEFT LoRA adapters whose modules vLLM serves at another scale than they were trained with
version_added: 0.2.0
description:
  - Scans the directories in setting C(adapter_paths) (an adapter folder or a tree of them, at most
    C(max_adapters) adapters, the rest counted) and the C(--lora-modules) of running vLLM servers for PEFT
    adapters (C(adapter_config.json), C(adapter_model.safetensors); only the safetensors header is read).
  - For each module, the trained scale follows the C(rank_pattern)/C(alpha_pattern) rule of the PEFT that
    saved the adapter - C(peft_version) in the config (PEFT 0.18.0 and later), else every PEFT release the
    config's fields allow (C(exclude_modules) from 0.14.0, C(corda_config) from 0.15.0, C(target_parameters)
    from 0.17.0 and the other fields of each release), narrowed by the module ranks in the weights - and the
    served scale follows the vLLM on this host (found next to the Python of each running vLLM process, or
    under setting C(vllm_prefixes)). vLLM before 0.32.0 applies one scale to every module (0.28.0 and 0.29.0
    pack rsLoRA MoE experts at C(lora_alpha / r)); 0.32.0 and later honour the patterns, matching fused MoE
    experts (C(target_parameters)) as C(experts.gate_up_proj) and C(experts.down_proj) as PEFT does.
  - C(affected) when a module's factor (served / trained) is not 1 under the installed vLLM and every possible
    PEFT release; C(at_risk) when it depends on which PEFT saved the adapter, when no vLLM is found and vLLM
    before 0.32.0 would serve it wrong, or when the vLLM refuses the adapter (DoRA, C(modules_to_save), a pattern
    rank above C(--max-lora-rank), PiSSA-style C(init_lora_weights) and the other refusals of 0.32.0 and later,
    rsLoRA on 0.6.5 and 0.6.6); C(ok) when patterns keep every scale equal.
  - "Settings: C(adapter_paths), C(vllm_prefixes), C(max_adapters), C(max_modules_listed)."
  - No probe, so nothing is sent to a server.
  - Returns C(ansible_facts.postmortem.vllm_lora_patterns); the same detection runs in M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Which adapters does this vLLM serve at the wrong scale
  homelab.postmortem.vllm_lora_patterns_facts:
    settings:
      vllm_lora_patterns:
        adapter_paths: [/srv/adapters]
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(vllm_lora_patterns).
      returned: always
      type: complex
      contains:
        vllm_lora_patterns:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - Each adapter instance's evidence holds C(path), C(used_by) (pids), C(r), C(lora_alpha),
              C(use_rslora), C(rank_pattern_keys), C(alpha_pattern_keys), C(target_parameters), C(modules),
              C(peft_version), C(peft_range), C(peft_range_why), C(peft_rules), C(rank_problem), and C(judged),
              one entry per vLLM version found with C(max_lora_rank), C(modules_off),
              C(modules_depending_on_peft), C(factors) (factor -> module count), C(refused) and
              C(modules_listed) (module, tensor_rank, served_scale, off, and rank, trained_scale, factor or
              C(by_peft) per PEFT release).
          returned: always
          type: dict
          sample:
            id: vllm_lora_patterns
            status: affected
            summary: "adapter /srv/adapters/persona: vLLM 0.31.0 serves 2 of 8 modules at another scale than trained (factor 0.5)."
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('vllm_lora_patterns')


if __name__ == '__main__':
    main()
