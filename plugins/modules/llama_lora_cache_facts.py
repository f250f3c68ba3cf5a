#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_lora_cache_facts
short_description: Find llama-server instances that answer from KV computed under another LoRA scale
version_added: 0.1.0
description:
  - Finds llama-server processes (and router preset sections) that load LoRA adapters
    (C(--lora), C(--lora-scaled)) with prompt caching on (the default). Two ways in, from llama.cpp
    b11434 C(tools/server/server-context.cpp) - the RAM prompt cache (C(--cache-ram), on by default)
    restores a prompt by tokens only, and after C(POST /lora-adapters) a slot reuses its own
    prefix without comparing adapters. With both on the status is C(at_risk) for every path; with
    C(--cache-ram 0) it is C(at_risk) for the global path only; with C(--no-cache-prompt) (or
    C(LLAMA_ARG_CACHE_PROMPT) false, or C(cache-prompt) in C(/etc/llama.cpp/config.ini) or the
    user's C(~/.config/llama.cpp/config.ini)) it is C(ok). Evidence names the paths at risk, the
    settings and where each came from, and the systemd unit (or Quadlet source file) that starts it.
  - Setting C(clients_force_cache_prompt) (bool) says that clients send C(cache_prompt) true
    themselves, which overrides C(--no-cache-prompt).
  - With I(probes=[lora_cache]) it measures each of four paths on each such server, on loopback
    (per-request C(lora) or C(POST /lora-adapters), prompt restored from the RAM cache or reused
    in its slot). Per path and random marker (setting C(probe_markers), default 3) - the prompt
    computed under scale 0, the scale switched to 1, the prompt asked again; and the same with both
    scales 1 as the control. C(affected) when the cross-scale answers disagree with the uncached
    ones clearly more often than the controls do (first-token distributions, counts in the
    evidence); C(ok) when the cross-scale request reuses no KV of the probe prompt, or reused KV and
    still agreed. At most 4 + markers x (24 + 4 x slots) requests, temperature 0, 4 tokens each;
    the global scales are put back and read back; an API key from C(--api-key),
    C(--api-key-file) or C(LLAMA_API_KEY) is sent and never recorded.
  - Returns C(ansible_facts.postmortem.llama_lora_cache); the same detection runs in
    M(homelab.postmortem.audit_facts).
  - "Setting C(preset_paths) (list of paths): preset files to read besides those named by a
    running router's C(--models-preset)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Find servers that mix LoRA adapters with the RAM cache
  homelab.postmortem.llama_lora_cache_facts:
  become: true

- name: Measure it on the running servers
  homelab.postmortem.llama_lora_cache_facts:
    probes: [lora_cache]
  become: true

- name: Clients send cache_prompt true themselves; measure with five markers per path
  homelab.postmortem.llama_lora_cache_facts:
    probes: [lora_cache]
    settings:
      llama_lora_cache:
        clients_force_cache_prompt: true
        probe_markers: 5
  become: true
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(llama_lora_cache).
      returned: always
      type: complex
      contains:
        llama_lora_cache:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - Each process instance's evidence holds C(pid), C(argv) (API keys redacted), C(adapters)
              (C(path), C(scale)), C(cache_ram), C(cache_ram_source), C(cache_prompt),
              C(cache_prompt_source), C(lora_init_without_apply), C(config_problems), C(supervisor),
              C(paths_at_risk) (from the settings), C(exposed_paths) (after the probe), and with the
              probe C(probe) (C(paths) keyed C(per_request_restore), C(per_request_slot),
              C(global_restore), C(global_slot), each with C(verdict), C(reason), C(markers),
              C(cross_cache_n), C(control_cache_n), C(cross_disagreed), C(control_disagreed) and
              C(runs); C(slots), C(requests), C(measured_cache_prompt)).
          returned: always
          type: dict
          sample:
            id: llama_lora_cache
            status: affected
            summary: >-
              Measured: answers decoded on KV of another LoRA scale (POST /lora-adapters, prefix reused in
              the same slot): 3 of 3 cross-scale answers disagreed with the uncached ones, 0 of 3
              same-scale controls (cache_n [19, 18, 19]).
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('llama_lora_cache')


if __name__ == '__main__':
    main()
