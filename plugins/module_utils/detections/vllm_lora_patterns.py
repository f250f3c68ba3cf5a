# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_lora_patterns: vLLM serves a LoRA adapter's modules at a scale other than the one it was trained with.

PEFT adapters can give modules their own rank and alpha (rank_pattern, alpha_pattern).
vLLM before 0.32.0 keeps only r and lora_alpha and applies one scale to every module, without a
word. Each module's trained scale comes from the PEFT rule of the version that saved the adapter;
the served scale from the vLLM on this host; their ratio is the factor the module is off by.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install


def _lora_modules(process):
    """Adapter paths from --lora-modules: name=path or JSON {"name": ..., "path": ...}."""
    paths = []
    for value in process.options.get('--lora-modules') or []:
        if value.startswith('{'):
            try:
                data = bounded_json.loads(value, '--lora-modules value')
            except bounded_json.JsonInputError:
                continue
            if isinstance(data, dict) and isinstance(data.get('path'), str):
                paths.append(data['path'])
        elif '=' in value:
            paths.append(value.split('=', 1)[1])
    return paths


def _installs(ctx, settings, processes):
    """[(version tuple, version text, where, pids)] of the vLLM on this host."""
    found = []
    for entry in processes:
        text, where = vllm_install.version_of(ctx, entry.process)
        if text:
            found.append((hostio.version_tuple(text), text, 'pid %d (%s)' % (entry.pid, where), [entry.pid]))
    for prefix in settings['vllm_prefixes']:
        text, where = vllm_install.version_in(ctx, prefix)
        if text:
            found.append((hostio.version_tuple(text), text, where, []))
    unique = {}
    for version, text, where, pids in found:
        if version is not None:
            unique.setdefault(text, (version, text, where, []))[3].extend(pids)
    return sorted(unique.values())


def _first_question(ctx, detection, settings):
    processes, problems = vllm_install.processes(ctx)
    installs = _installs(ctx, settings, processes)
    used_by = {}
    for entry in processes:
        for path in _lora_modules(entry):
            used_by.setdefault(path, []).append(entry.pid)
    roots = list(settings['adapter_paths'])
    if roots:
        # The adapter code (PEFT's and vLLM's rules, safetensors) is loaded only when there is a place to
        # look for adapters: every module the audit imports is compiled from the payload on every host, every
        # run. With no root, find() walks nothing and returns ([], [], 0).
        from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
        found, walk_problems, skipped = vllm_adapters.find(ctx, roots, settings['max_adapters'])
    else:
        found, walk_problems, skipped = [], [], 0
    paths = list(found)
    for path in sorted(used_by):
        if path not in paths:
            paths.append(path)
    evidence = {'vllm_processes': len(processes), 'vllm_installs': [{'version': t, 'where': w} for _v, t, w, _p in installs],
                'adapter_paths': roots, 'adapters_skipped': skipped}
    if problems:
        evidence['proc_problems'] = problems[:20]
    if not paths and not walk_problems:
        return make_finding(detection, 'not_applicable', 'No PEFT adapter found (setting adapter_paths, --lora-modules).',
                            evidence=evidence)
    return Found(processes=processes, installs=installs, used_by=used_by, paths=paths, walk_problems=walk_problems,
                 skipped=skipped, evidence=evidence)


def _verdict():
    # Adapters to judge: PEFT's and vLLM's rules are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import vllm_lora_patterns as verdict
    return verdict


DETECTION = Detection(
    'vllm_lora_patterns',
    group='vllm',
    title="vLLM serves a LoRA adapter's modules at another scale than it was trained with",
    # Adapter files can be read in an image; running servers only on a live host.
    applies={'image': True, 'binary': None, 'root': None},
    references=[
        'vllm/lora/peft_helper.py (PyPI wheels 0.6.4.post1 to 0.33.0): one scale before 0.32.0, '
        'get_rank_and_scaling from 0.32.0',
        'https://github.com/vllm-project/vllm/pull/11003 (PEFTHelper, 0.6.5) and '
        'https://github.com/vllm-project/vllm/pull/6909 (rsLoRA, 0.7.0)',
        'https://github.com/huggingface/peft/pull/873 (rank_pattern/alpha_pattern, PEFT 0.6.0); '
        'peft/tuners/lora/model.py and peft/utils/other.py get_pattern_key (0.14.0, 0.15.0)',
    ],
    remediation=make_remediation(
        module='homelab.postmortem.vllm_lora_fold',
        manual=[
            'Fold each module\'s scale into lora_B with homelab.postmortem.vllm_lora_fold (writes a new adapter '
            'directory that every vLLM and PEFT version serves at the trained scale), then point vLLM at it.',
            'Or upgrade vLLM to 0.32.0 or later, which honours rank_pattern and alpha_pattern.',
        ],
        disruption='none',
    ),
    probes=(),
    settings={
        'adapter_paths': {'type': 'list', 'elements': 'str', 'default': [],
                          'description': 'Directories to scan for PEFT adapters (an adapter folder or a tree of them), '
                                         'besides the --lora-modules of running vLLM servers.'},
        'vllm_prefixes': {'type': 'list', 'elements': 'str', 'default': [],
                          'description': 'Python prefixes (virtualenvs) to look for vLLM in when no vLLM process runs.'},
        'max_adapters': {'type': 'int', 'default': 500, 'min': 1, 'max': 100000,
                         'description': 'Adapters read at most; the rest are counted as skipped.'},
        'max_modules_listed': {'type': 'int', 'default': 10, 'min': 1, 'max': 10000,
                               'description': 'Modules listed per adapter in the evidence (all are counted).'},
    },
    question=_first_question,
    verdict=_verdict,
)
