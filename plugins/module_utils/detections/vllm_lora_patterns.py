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

import json
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale

ID = 'vllm_lora_patterns'
GROUP = 'vllm'
# Adapter files can be read in an image; running servers only on a live host.
APPLIES = {'image': True, 'binary': None, 'root': None}
TITLE = "vLLM serves a LoRA adapter's modules at another scale than it was trained with"
REFERENCES = [
    'vllm/lora/peft_helper.py (PyPI wheels 0.6.4.post1 to 0.33.0): one scale before 0.32.0, '
    'get_rank_and_scaling from 0.32.0',
    'https://github.com/vllm-project/vllm/pull/11003 (PEFTHelper, 0.6.5) and '
    'https://github.com/vllm-project/vllm/pull/6909 (rsLoRA, 0.7.0)',
    'https://github.com/huggingface/peft/pull/873 (rank_pattern/alpha_pattern, PEFT 0.6.0); '
    'peft/tuners/lora/model.py and peft/utils/other.py get_pattern_key (0.14.0, 0.15.0)',
]
REMEDIATION = make_remediation(
    module='homelab.postmortem.vllm_lora_fold',
    manual=[
        'Fold each module\'s scale into lora_B with homelab.postmortem.vllm_lora_fold (writes a new adapter '
        'directory that every vLLM and PEFT version serves at the trained scale), then point vLLM at it.',
        'Or upgrade vLLM to 0.32.0 or later, which honours rank_pattern and alpha_pattern.',
    ],
    disruption='none',
)
PROBES = ()
SETTINGS = {
    'adapter_paths': {'type': 'list', 'elements': 'str', 'default': [],
                      'description': 'Directories to scan for PEFT adapters (an adapter folder or a tree of them), '
                                     'besides the --lora-modules of running vLLM servers.'},
    'vllm_prefixes': {'type': 'list', 'elements': 'str', 'default': [],
                      'description': 'Python prefixes (virtualenvs) to look for vLLM in when no vLLM process runs.'},
    'max_adapters': {'type': 'int', 'default': 500, 'min': 1, 'max': 100000,
                     'description': 'Adapters read at most; the rest are counted as skipped.'},
    'max_modules_listed': {'type': 'int', 'default': 10, 'min': 1, 'max': 10000,
                           'description': 'Modules listed per adapter in the evidence (all are counted).'},
}

_SELF = sys.modules[__name__]
# What a host without vLLM is judged by: the last release that drops the patterns.
WITHOUT_VLLM = (0, 31, 0)


def _lora_modules(process):
    """Adapter paths from --lora-modules: name=path or JSON {"name": ..., "path": ...}."""
    paths = []
    for value in process.options.get('--lora-modules') or []:
        if value.startswith('{'):
            try:
                data = json.loads(value)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get('path'), str):
                paths.append(data['path'])
        elif '=' in value:
            paths.append(value.split('=', 1)[1])
    return paths


def _installs(ctx, settings, processes):
    """[(version tuple, version text, where)] of the vLLM on this host."""
    found = []
    for entry in processes:
        text, where = vllm_install.version_of(ctx, entry.process)
        if text:
            found.append((hostio.version_tuple(text), text, 'pid %d (%s)' % (entry.pid, where)))
    for prefix in settings['vllm_prefixes']:
        text, where = vllm_install.version_in(ctx, prefix)
        if text:
            found.append((hostio.version_tuple(text), text, where))
    unique = {}
    for version, text, where in found:
        if version is not None:
            unique.setdefault(text, (version, text, where))
    return sorted(unique.values())


def _adapter_instance(path, installs, listed, used_by):
    name = 'adapter %s' % path
    try:
        adapter = vllm_adapters.load(path)
    except vllm_adapters.AdapterProblem as exc:
        return instance(name, 'error', str(exc), {'path': path, 'used_by': used_by})
    config = adapter.config
    evidence = {
        'path': path, 'used_by': used_by, 'r': config.r, 'lora_alpha': config.alpha, 'use_rslora': config.use_rslora,
        'rank_pattern_keys': len(config.rank_pattern), 'alpha_pattern_keys': len(config.alpha_pattern),
        'modules': len(adapter.modules),
        'peft_version': lora_scale.dotted(adapter.peft_version) if adapter.peft_version_recorded else None,
        'peft_rule': _rule_name(adapter.peft_version),
    }
    if not adapter.peft_version_recorded:
        evidence['note'] = ('adapter_config.json does not record the PEFT that saved it; the rule of PEFT %s (the '
                            'newest) decides the trained scales' % lora_scale.dotted(vllm_adapters.CURRENT_PEFT))
    judged = installs or [(WITHOUT_VLLM, None, None)]
    worst, summary, per_version = 'ok', None, []
    for version, text, where in judged:
        rows, refused = vllm_adapters.judge(adapter, version)
        off = [row for row in rows if vllm_adapters.off(row)]
        mismatched = [row['module'] for row in rows if row['tensor_rank'] not in (None, row['rank'])]
        factors = {}
        for row in off:
            factors[str(row['factor'])] = factors.get(str(row['factor']), 0) + 1
        per_version.append({'vllm_version': text or 'none found (judged as %s)' % lora_scale.dotted(version),
                            'where': where, 'modules_off': len(off), 'factors': factors, 'refused': refused,
                            'rank_mismatch': mismatched[:listed], 'modules_listed': (off or rows)[:listed]})
        if refused:
            status, line = 'at_risk', '%s: %s.' % (name, refused)
        elif off and text:
            status, line = 'affected', ('%s: vLLM %s serves %d of %d modules at another scale than trained (factor %s).'
                                        % (name, text, len(off), len(rows), ', '.join(sorted(factors))))
        elif off:
            status, line = 'at_risk', ('%s: no vLLM found; vLLM before 0.32.0 would serve %d of %d modules at another '
                                       'scale (factor %s).' % (name, len(off), len(rows), ', '.join(sorted(factors))))
        else:
            status, line = 'ok', '%s: every module is served at its trained scale.' % name
        if STATUS_RANK[status] > STATUS_RANK[worst] or summary is None:
            worst, summary = status, line
    evidence['judged'] = per_version
    return instance(name, worst, summary, evidence)


def _rule_name(version):
    if version < lora_scale.SEPARATE_LOOKUP_SINCE:
        return 'PEFT 0.6-0.13: one lookup over rank then alpha keys, .*\\.<key>$'
    if version < lora_scale.OPTIONAL_PREFIX_SINCE:
        return 'PEFT 0.14: separate lookups, .*\\.<key>$'
    return 'PEFT 0.15+: separate lookups, (.*\\.)?(<key>)$'


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    processes, problems = vllm_install.processes(ctx)
    installs = _installs(ctx, settings, processes)
    used_by = {}
    for entry in processes:
        for path in _lora_modules(entry):
            used_by.setdefault(path, []).append(entry.pid)
    roots = list(settings['adapter_paths'])
    found, walk_problems, skipped = vllm_adapters.find(ctx, roots, settings['max_adapters'])
    paths = list(found)
    for path in sorted(used_by):
        try:
            real = ctx.path(path)
        except hostio.ReadProblem:
            real = path
        if real not in paths:
            paths.append(real)
    evidence = {'vllm_processes': len(processes), 'vllm_installs': [{'version': t, 'where': w} for _v, t, w in installs],
                'adapter_paths': roots, 'adapters_skipped': skipped}
    if problems:
        evidence['proc_problems'] = problems[:20]
    if not paths and not walk_problems:
        return make_finding(_SELF, 'not_applicable', 'No PEFT adapter found (setting adapter_paths, --lora-modules).',
                            evidence=evidence)
    instances = [instance('adapter path', 'error', 'Cannot read %s.' % p, {}) for p in walk_problems[:20]]
    for path in paths:
        instances.append(_adapter_instance(path, installs, settings['max_modules_listed'], used_by.get(path, [])))
    if skipped:
        evidence['note'] = 'stopped after %d adapters (setting max_adapters); %d more were not read' % (
            settings['max_adapters'], skipped)
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    summary = worst['summary'] if worst['status'] != 'ok' else (
        'Every adapter is served at its trained scales (%d adapters).' % len(paths))
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
