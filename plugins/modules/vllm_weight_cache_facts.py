#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vllm_weight_cache_facts
short_description: Find vLLM engines that the weight cache daemon serves another checkpoint's weights
version_added: 0.2.0
description:
  - Finds weight cache daemons (C(vllm preload), C(python -m vllm.model_executor.model_loader.weight_cache.daemon))
    and engines started with C(--load-format ipc_cache) (command line, or the C(--config) file), and compares
    the fields of the C(WeightCacheKey) that the engine's vLLM release compares (0.30.0 checkpoint fingerprint,
    architecture, tensor parallel size, dtype with C(auto) resolved as vLLM does, quantization and its config,
    revision, vLLM version; 0.31.0 adds data parallel size and C(is_draft), 0.32.0 pipeline parallel size,
    0.33.0 RoPE parameters, KV cache dtype, expert parallelism and kernel backends). The checkpoint
    fingerprint is computed exactly as vLLM's C(hash_checkpoint) (md5 of each shard's base name and
    safetensors header, no weight bytes).
  - Checks that the engine reaches the daemon's socket at all - the same user, the same socket directory as
    each process sees it (C(socket_dir) or C(socket_path) in the engine's C(--model-loader-extra-config), the
    daemon's C(--weight-cache-socket-dir), else each one's C(TMPDIR)-dependent default; C(PrivateTmp) and
    containers give a process its own C(/tmp)) and the same GPU (C(CUDA_VISIBLE_DEVICES)).
  - For an engine that reaches a daemon with its key, compares the tensor bytes of both checkpoints (3 x 4 KiB
    per tensor by default, every byte with setting C(content_check=full)). C(affected) when they differ - the
    engine serves the daemon's weights - with both paths, fingerprints and the differing tensors; C(at_risk)
    when a field or the socket cannot be compared from here. The engine's unit journal decides when it can -
    its last "falling back to disk loading" line proves nothing was mapped (C(ok)), its last "Mapped N
    tensors from the weight cache daemon" line that something was.
  - "Settings: C(content_check), C(max_tensors), C(max_listed), C(journal_lines)."
  - No probe, so nothing is sent to a daemon or engine.
  - Returns C(ansible_facts.postmortem.vllm_weight_cache); the same detection runs in M(homelab.postmortem.audit_facts).
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Does any engine map another checkpoint's weights
  homelab.postmortem.vllm_weight_cache_facts:
  become: true
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(vllm_weight_cache).
      returned: always
      type: complex
      contains:
        vllm_weight_cache:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence.instances) has one entry per engine with C(engine) (pid, model, vLLM version, uid,
              header_fingerprint, loader_extra_config), C(daemons) (per daemon its pid and model, C(key) and
              C(socket), each field's verdict same/differs/unknown and why), and for the daemon that decided
              the verdict C(engine_content), C(daemon_content), C(tensors_compared), C(tensors_differing),
              C(differing) and C(journal).
          returned: always
          type: dict
          sample:
            id: vllm_weight_cache
            status: affected
            summary: "engine pid 4242 (/srv/models/finetune) is served the weights of /srv/models/base by daemon pid 4100."
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('vllm_weight_cache')


if __name__ == '__main__':
    main()
