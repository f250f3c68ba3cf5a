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

import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install

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


def _max_lora_rank(entry):
    """The engine's --max-lora-rank (vllm/config/lora.py default 16), or None when it is not a number."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
    value = entry.value('--max-lora-rank', str(lora_scale.VLLM_DEFAULT_MAX_LORA_RANK))
    return int(value) if value.isdigit() and len(value) < 7 else None


def _judge_one(adapter, version, text, where, max_lora_rank, listed):
    """(status, summary line, evidence) for one vLLM version."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
    name = 'adapter %s' % adapter.path
    rows, refusals = vllm_adapters.judge(adapter, version, max_lora_rank)
    all_off = [row for row in rows if row['off'] == 'all']
    some_off = [row for row in rows if row['off'] == 'some']
    factors = {}
    for row in all_off:
        for factor in sorted(set(str(r['factor']) for r in row.get('by_peft') or [row])):
            factors[factor] = factors.get(factor, 0) + 1
    evidence = {'vllm_version': text or 'none found (judged as %s)' % lora_scale.dotted(version), 'where': where,
                'max_lora_rank': max_lora_rank, 'modules_off': len(all_off), 'modules_depending_on_peft': len(some_off),
                'factors': factors, 'refused': refusals,
                'modules_listed': (all_off + some_off or rows)[:listed]}
    served_by = 'vLLM %s' % text if text else 'vLLM before 0.32.0 (none found here)'
    if refusals:
        return 'at_risk', '%s: vLLM %s refuses it: %s.' % (
            name, text or '%s (none found here; judged as that release)' % lora_scale.dotted(version),
            '; '.join(refusals)), evidence
    if all_off:
        status = 'affected' if text else 'at_risk'
        return status, ('%s: %s serves %d of %d modules at another scale than trained (factor %s).'
                        % (name, served_by, len(all_off), len(rows), ', '.join(sorted(factors)))), evidence
    if some_off:
        return 'at_risk', ('%s: whether %s serves %d of %d modules at their trained scale depends on the PEFT that '
                           'saved it (PEFT %s possible: %s), and their rules give these modules different scales.'
                           % (name, served_by, len(some_off), len(rows), adapter.peft_range.text(),
                              adapter.peft_range.why)), evidence
    return 'ok', '%s: every module is served at its trained scale.' % name, evidence


def _adapter_instance(ctx, path, installs, listed, used_by, max_ranks):
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
    try:
        return _judged(vllm_adapters.load(path, ctx.path), installs, listed, used_by, max_ranks)
    except HostInputError as exc:
        # A file that cannot be read, or a pattern key that cannot be matched (lora_scale.PatternProblem).
        return instance('adapter %s' % path, exc.finding_status, str(exc), {'path': path, 'used_by': used_by})


def _judged(adapter, installs, listed, used_by, max_ranks):
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
    path = adapter.path
    name = 'adapter %s' % path
    config = adapter.config
    evidence = {
        'path': path, 'used_by': used_by, 'r': config.r, 'lora_alpha': config.alpha, 'use_rslora': config.use_rslora,
        'rank_pattern_keys': len(config.rank_pattern), 'alpha_pattern_keys': len(config.alpha_pattern),
        'target_parameters': list(config.target_parameters), 'modules': len(adapter.modules),
        'peft_version': lora_scale.dotted(adapter.peft_range.first) if adapter.peft_version_recorded else None,
        'peft_range': adapter.peft_range.text(), 'peft_range_why': adapter.peft_range.why,
        'peft_rules': [rule_name(v) for v in adapter.candidates],
    }
    if adapter.rank_problem:
        evidence['rank_problem'] = adapter.rank_problem
    judged = installs or [(WITHOUT_VLLM, None, None, [])]
    worst, summary, per_version = 'ok', None, []
    for version, text, where, pids in judged:
        ranks = [max_ranks[p] for p in pids if p in used_by and max_ranks.get(p) is not None]
        status, line, details = _judge_one(adapter, version, text, where, min(ranks) if ranks else None, listed)
        per_version.append(details)
        if STATUS_RANK[status] > STATUS_RANK[worst] or summary is None:
            worst, summary = status, line
    evidence['judged'] = per_version
    if adapter.rank_problem and worst == 'ok':
        # PEFT would not load these tensors with this config, so no scale was trained with it.
        worst, summary = 'at_risk', '%s: %s, so the scales it was trained with cannot be known.' % (
            name, adapter.rank_problem)
    return instance(name, worst, summary, evidence)


def rule_name(version):
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
    return lora_scale.rule_name(version) + ('' if version >= lora_scale.RSLORA_SINCE else ', no rsLoRA')


def detect(ctx):
    settings = ctx.settings_for(_SELF)
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
        return make_finding(_SELF, 'not_applicable', 'No PEFT adapter found (setting adapter_paths, --lora-modules).',
                            evidence=evidence)
    instances = [instance('adapter path', 'error', 'Cannot read %s.' % p, {}) for p in walk_problems[:20]]
    max_ranks = dict((entry.pid, _max_lora_rank(entry)) for entry in processes)
    for index, path in enumerate(paths):
        left, why = ctx.runner.limit()
        if left <= 0:
            # Each adapter's pattern matching is bounded (lora_scale.MATCH_SECONDS); many of them share the budget.
            evidence['adapters_not_read'] = len(paths) - index
            instances.append(instance('adapters not read', 'unknown', '%d adapter(s) were not read: %s is used up '
                                      '(first: %s).' % (len(paths) - index, why, paths[index]), {'first': paths[index:][:10]}))
            break
        instances.append(_adapter_instance(ctx, path, installs, settings['max_modules_listed'], used_by.get(path, []),
                                           max_ranks))
    if skipped:
        evidence['note'] = 'stopped after %d adapters (setting max_adapters); %d more were not read' % (
            settings['max_adapters'], skipped)
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    summary = worst['summary'] if worst['status'] != 'ok' else (
        'Every adapter is served at its trained scales (%d adapters).' % len(paths))
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
