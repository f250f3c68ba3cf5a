# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_lora_cache: a request gets an answer decoded on KV computed under another LoRA scale.

Two ways in (llama.cpp b11434 tools/server/server-context.cpp): the RAM prompt cache restores
an entry by tokens only, whatever scale computed it; and after POST /lora-adapters a request
without a "lora" field reuses its slot's prefix without comparing adapters. Prompt caching on
(the default) with adapters loaded is at_risk: the global path even with --cache-ram 0, both
paths with the RAM cache on. The lora_cache probe measures each path with a same-scale control.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation

PROBE_MARKERS = 3  # lora_probe.DEFAULT_MARKERS, which is imported only when the probe runs


def _first_question(ctx, detection, settings):
    running, problems = llama_processes.processes(ctx)
    if not running and not settings.get('preset_paths'):
        evidence = dict(llama_processes.process_table_evidence(running, problems), probe_requested='lora_cache' in ctx.probes)
        return make_finding(detection, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    return Found()


def _verdict():
    # A llama-server process or a preset to read: the configuration resolver and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import llama_lora_cache as verdict
    return verdict


DETECTION = Detection(
    'llama_lora_cache',
    group='llama',
    title="llama-server answers from KV computed under a different LoRA scale",
    # Preset files can be read in an image; processes only on a live host.
    applies={'image': True, 'binary': None, 'root': None},
    references=[
        'https://github.com/ggml-org/llama.cpp/issues/26207',
        'llama.cpp b11434 tools/server/server-context.cpp: get_available_slot (prompt_load by tokens) and '
        'launch_slot_with_task (adapters compared only for requests with a "lora" field)',
        'llama.cpp b11434 common/arg.cpp: --cache-prompt/--no-cache-prompt, LLAMA_ARG_CACHE_PROMPT, '
        'common_params_apply_system_config',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.llama_server',
        role_vars={'llama_server_cache_ram_off': True, 'llama_server_lora_global_path': True, 'llama_server_restart': True},
        manual=[
            'Start llama-server with --cache-ram 0 when it serves more than one LoRA setting: closes the '
            'RAM-cache restore (both per-request and global clients).',
            'Clients that change scales with POST /lora-adapters: also --no-cache-prompt (no prefix reuse at all); '
            'a client that sends "cache_prompt": true itself brings the risk back.',
        ],
        disruption='restart',
    ),
    probes=('lora_cache',),
    settings={
        'preset_paths': {'type': 'list', 'elements': 'str', 'default': [],
                         'description': 'Router preset INI files to read besides those named by running routers.'},
        'clients_force_cache_prompt': {
            'type': 'bool', 'default': False,
            'description': 'Clients send "cache_prompt": true themselves, which overrides --no-cache-prompt: judge '
                           'servers as if prompt caching were on, and send it in the probe\'s measured requests.'},
        'probe_markers': {'type': 'int', 'default': PROBE_MARKERS, 'min': 3, 'max': 10,
                          'description': 'Random probe prompts per path, each measured across a scale change and '
                                         'with the same scale (the control).'},
    },
    question=_first_question,
    verdict=_verdict,
)
