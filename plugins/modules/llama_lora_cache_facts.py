#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_lora_cache_facts
short_description: Find llama-server instances whose prompt cache can mix up LoRA scales
version_added: 0.1.0
description:
  - Finds llama-server processes (and router preset sections) that load LoRA adapters
    (C(--lora), C(--lora-scaled)) with the RAM prompt cache on (C(--cache-ram) other than 0;
    it is on by default). Such a server can answer a prompt with KV computed under another
    adapter scale. Status C(at_risk), with the instance, adapters, cache setting and the
    systemd unit (or Quadlet source file) that starts it as evidence.
  - With I(probes=[lora_cache]) it measures the mix-up on each such server, on loopback. A probe
    prompt with a random marker is sent under scale 0, pushed out of every slot, sent again under
    scale 1, and compared with the same request sent uncached; then the same through
    C(POST /lora-adapters). C(affected) when the cached answer differs (with C(cache_n), C(prompt_n)
    and both answers), C(ok) when the cache never restored the probe. 15 + 2 x slots requests,
    temperature 0, 16 tokens each; the global scales are put back and read back; an API key from
    C(--api-key), C(--api-key-file) or C(LLAMA_API_KEY) is sent and never recorded.
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
              (C(path), C(scale)), C(cache_ram), C(cache_ram_source), C(lora_init_without_apply),
              C(supervisor), and with the probe C(probe) (C(per_request) and C(global), each with
              C(cache_n), C(prompt_n), C(answer), C(uncached_answer), C(verdict), C(reason); C(requests)).
          returned: always
          type: dict
          sample:
            id: llama_lora_cache
            status: affected
            summary: "Measured (per-request lora, POST /lora-adapters): cache_n=21, the answer ' was to this.' instead of the uncached ' 5000'."
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
