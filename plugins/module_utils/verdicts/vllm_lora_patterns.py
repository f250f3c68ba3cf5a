# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_lora_patterns's verdict: the code that judges what the detection's first question found.

detections/vllm_lora_patterns.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding

# What a host without vLLM is judged by: the last release that drops the patterns.
WITHOUT_VLLM = (0, 31, 0)


def _max_lora_rank(entry):
    """The engine's --max-lora-rank (vllm/config/lora.py default 16), or None when it is not a number."""
    value = entry.value('--max-lora-rank', str(lora_scale.VLLM_DEFAULT_MAX_LORA_RANK))
    return int(value) if value.isdigit() and len(value) < 7 else None


def _judge_one(adapter, version, text, where, max_lora_rank, listed):
    """(status, summary line, evidence) for one vLLM version."""
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
    try:
        return _judged(vllm_adapters.load(path, ctx.path), installs, listed, used_by, max_ranks)
    except HostInputError as exc:
        # A file that cannot be read, or a pattern key that cannot be matched (lora_scale.PatternProblem).
        return instance('adapter %s' % path, exc.finding_status, str(exc), {'path': path, 'used_by': used_by})


def _judged(adapter, installs, listed, used_by, max_ranks):
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
    return lora_scale.rule_name(version) + ('' if version >= lora_scale.RSLORA_SINCE else ', no rsLoRA')


def judge(ctx, detection, settings, processes, installs, used_by, paths, walk_problems, skipped, evidence):
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
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
