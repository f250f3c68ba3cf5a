# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_lora_cache's verdict: the code that judges what the detection's first question found.

detections/llama_lora_cache.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, make_finding


def paths_at_risk(cache_ram, caching):
    """The probe paths this configuration leaves open, from its settings alone."""
    if not caching:
        return []
    if cache_ram == 0:
        return ['global_slot']
    return ['per_request_restore', 'global_restore', 'global_slot']


def _risk_summary(name, adapters, cache_ram, cache_ram_source, caching_source, risks, forced):
    count = '%s serves %d LoRA adapter(s)' % (name, len(adapters))
    if not risks:
        return '%s with prompt caching off (%s): no KV is reused across a scale change; clients that send ' \
               '"cache_prompt": true bring the risk back.' % (count, caching_source)
    caching = 'clients force prompt caching' if forced else 'prompt caching on (%s)' % caching_source
    if 'per_request_restore' in risks:
        return ('%s with %s and the RAM cache on (--cache-ram %d, %s): a prompt can come back from the cache '
                'computed under another scale, and after POST /lora-adapters a slot reuses KV of the old scale.'
                % (count, caching, cache_ram, cache_ram_source))
    return ('%s with the RAM cache off but %s: after POST /lora-adapters a slot reuses its own prefix '
            'computed under the old scale (--no-cache-prompt closes it).' % (count, caching))


def _instance(ctx, settings, inst):
    forced = settings['clients_force_cache_prompt']
    supervision = []

    def judge_config(config):
        adapters, adapter_problems = llama_resolution.lora_adapters(config)
        cache_ram, cache_ram_where, _s = config.value(llama_args.CACHE_RAM)
        caching, caching_where, _s = config.value(llama_args.CACHE_PROMPT)
        init_without_apply = bool(config.value(llama_args.LORA_INIT_WITHOUT_APPLY, False)[0])
        evidence = {'adapters': adapters, 'cache_ram': cache_ram, 'cache_ram_source': cache_ram_where,
                    'cache_prompt': caching, 'cache_prompt_source': caching_where,
                    'lora_init_without_apply': init_without_apply}
        if adapter_problems:
            evidence['adapter_problems'] = adapter_problems
            return 'unknown', '%s: %s' % (inst.name, '; '.join(adapter_problems)), evidence
        if not adapters:
            return 'ok', '%s loads no LoRA adapter.' % inst.name, evidence
        if inst.process is not None:
            if not supervision:
                supervision.append(llama_server.supervisor(ctx, inst.process))
            evidence['supervisor'] = supervision[0]
        risks = paths_at_risk(cache_ram, caching or forced)
        evidence['paths_at_risk'] = evidence['exposed_paths'] = risks
        summary = _risk_summary(inst.name, adapters, cache_ram, cache_ram_where, caching_where, risks,
                                forced and not caching)
        return ('at_risk' if risks else 'ok'), summary, evidence

    entry = llama_server.judge(inst, judge_config)
    evidence = entry['evidence']
    if 'lora_cache' in ctx.probes and evidence.get('adapters') and entry['status'] in ('ok', 'at_risk'):
        entry['status'], entry['summary'], evidence['exposed_paths'] = _probe(
            inst, evidence, settings, evidence['lora_init_without_apply'], evidence.get('paths_at_risk') or [],
            entry['summary'])
    return entry


def _probe(inst, evidence, settings, init_without_apply, risks, summary):
    """(status, summary, exposed paths): measured paths replace what the settings suggest."""
    # Imported here, when a probe runs: probes are opt-in, and every module the audit imports is
    # compiled from the payload on every host, every run.
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe
    base, key, reason = llama_server.probe_target(inst, inst.config(inst.rule_sets[-1]))
    if not base:
        evidence['probe'] = {'verdict': 'unknown', 'reason': reason}
        return ('at_risk' if risks else 'ok'), '%s (probe: %s)' % (summary, reason), risks
    measured = lora_probe.lora_cache(base, key, global_path=not init_without_apply, markers=settings['probe_markers'],
                                     force_cache_prompt=settings['clients_force_cache_prompt'])
    evidence['probe'] = measured
    paths = measured.get('paths') or {}
    affected = [p for p in lora_probe.PATHS if (paths.get(p) or {}).get('verdict') == 'affected']
    exposed = [p for p in lora_probe.PATHS
               if p in affected or (p in risks and (paths.get(p) or {}).get('verdict') != 'ok')]
    if affected:
        first = paths[affected[0]]
        return 'affected', ('Measured: answers decoded on KV of another LoRA scale (%s): %s.'
                            % ('; '.join(lora_probe.PATH_LABELS[p] for p in affected), first['reason'])), exposed
    if not exposed:
        return 'ok', 'Measured: no path served an answer from KV of another scale (%s).' % ', '.join(
            '%s: %s' % (p, paths[p]['verdict']) for p in lora_probe.PATHS if p in paths), exposed
    unmeasured = [p for p in exposed if p in paths]
    note = measured.get('reason') or '; '.join('%s %s: %s' % (p, paths[p]['verdict'], paths[p]['reason']) for p in unmeasured)
    return 'at_risk', '%s (probe: %s)' % (summary, note or 'no verdict'), exposed


def judge(ctx, detection, settings):
    found, evidence = llama_server.instances(ctx, settings.get('preset_paths'))
    instances = [i if isinstance(i, dict) else _instance(ctx, settings, i) for i in found]
    evidence['probe_requested'] = 'lora_cache' in ctx.probes
    if not instances:
        return make_finding(detection, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    if worst['status'] == 'ok':
        summary = 'No llama-server instance reuses KV across a LoRA scale change.'
    else:
        summary = worst['summary']
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
