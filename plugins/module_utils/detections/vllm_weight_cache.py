# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_weight_cache: a vLLM engine is served another checkpoint's weights by the weight cache daemon.

With --load-format ipc_cache (vLLM 0.30.0 and later) an engine takes its weights from a daemon
(``vllm preload``, or ``python -m ...weight_cache.daemon`` in 0.30.0) whose WeightCacheKey
matches its own. The key's checkpoint part hashes the safetensors headers only, so a fine-tune
with the same layout as the daemon's checkpoint matches, and the engine serves the daemon's
weights: "Mapped N tensors from the weight cache daemon", and nothing else says so.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install


def _first_question(ctx, detection, settings):
    processes, problems = vllm_install.processes(ctx)
    daemons = [p for p in processes if p.role == 'daemon']
    engines = [p for p in processes if p.role == 'engine' and p.value('--load-format') == 'ipc_cache']
    evidence = {'vllm_processes': len(processes), 'daemons': [d.pid for d in daemons],
                'ipc_cache_engines': [e.pid for e in engines]}
    if problems:
        evidence['proc_problems'] = problems[:20]
    if not engines:
        status = 'not_applicable'
        summary = ('No vLLM engine loads from the weight cache (--load-format ipc_cache).' if processes
                   else 'No vLLM process found.')
        return make_finding(detection, status, summary, evidence=evidence)
    return Found(daemons=daemons, engines=engines, evidence=evidence)


def _verdict():
    # An engine loads from the weight cache: the code that reads checkpoints is loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import vllm_weight_cache as verdict
    return verdict


DETECTION = Detection(
    'vllm_weight_cache',
    group='vllm',
    title="vLLM's weight cache serves an engine the weights of another checkpoint",
    applies={'image': False, 'binary': None, 'root': None},
    references=[
        'vllm/model_executor/model_loader/weight_cache/protocol.py hash_checkpoint and WeightCacheKey '
        '(PyPI 0.30.0 to 0.33.0: basename + safetensors header per shard, no weight bytes; the key\'s fields grow '
        'in 0.31.0, 0.32.0 and 0.33.0), get_socket_dir and get_socket_path',
        'vllm/model_executor/model_loader/weight_cache/ipc_loader.py: socket_path and socket_dir from '
        '--model-loader-extra-config, "Mapped %d tensors from the weight cache daemon", "Weight cache unusable (%s); '
        'falling back to disk loading"',
        'vllm/entrypoints/cli/preload.py (vllm preload and --weight-cache-socket-dir, from 0.31.0), '
        'weight_cache/daemon.py (0.30.0 daemon module)',
    ],
    remediation=make_remediation(
        manual=[
            'Stop the engine from mapping the daemon\'s weights: start it without --load-format ipc_cache, or run '
            'a daemon (vllm preload) for its own checkpoint and stop the one for the other checkpoint.',
            'Give fine-tunes a layout of their own only as a stopgap (for example another shard name): the key '
            'still hashes headers, not weights.',
        ],
        disruption='restart',
    ),
    probes=(),
    settings={
        'content_check': {'type': 'str', 'default': 'sample', 'choices': ['sample', 'full', 'off'],
                          'description': 'Compare tensor bytes of daemon and engine checkpoints: 3 x 4 KiB per tensor '
                                         '(sample), every byte (full), or not at all (off: matching keys are at_risk).'},
        'max_tensors': {'type': 'int', 'default': 20000, 'min': 1, 'max': 1000000,
                        'description': 'Tensors compared per checkpoint at most.'},
        'max_listed': {'type': 'int', 'default': 10, 'min': 1, 'max': 1000,
                       'description': 'Differing tensors listed in the evidence.'},
        'journal_lines': {'type': 'int', 'default': 20000, 'min': 0, 'max': 1000000,
                          'description': 'Lines of the engine unit\'s journal searched for its last weight cache line '
                                         '("Mapped N tensors" or "falling back to disk loading"; 0: do not read the '
                                         'journal).'},
    },
    question=_first_question,
    verdict=_verdict,
)
