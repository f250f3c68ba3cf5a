# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_lora_cache's verdict: the code that judges what the detection's first question found.

detections/llama_lora_cache.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache as DETECTION

LORA_KEYS = ('lora', 'lora-scaled')


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


def _process_instance(ctx, process):
    settings = ctx.settings_for(DETECTION)
    environ = process.environ() or {}
    evidence = llama_server.process_evidence(process)
    adapters = llama_server.lora_adapters(process.argv)
    value, cache_ram_source, problems = llama_server.resolve_configured(ctx, llama_server.CACHE_RAM, process, environ)
    cache_ram = llama_server.as_int(value)
    caching, caching_source, more_problems = llama_server.cache_prompt(ctx, process, environ)
    init_without_apply = llama_server.has_flag(process.argv, '--lora-init-without-apply')
    evidence.update(adapters=adapters, cache_ram=cache_ram if cache_ram is not None else value,
                    cache_ram_source=cache_ram_source, cache_prompt=caching, cache_prompt_source=caching_source,
                    lora_init_without_apply=init_without_apply)
    config_problems = sorted(set(problems + more_problems))
    if config_problems:
        evidence['config_problems'] = config_problems
    name = llama_server.describe_process(process)
    if not adapters:
        return instance(name, 'ok', '%s loads no LoRA adapter.' % name, evidence)
    if cache_ram is None:
        return instance(name, 'error', '%s: --cache-ram %r (%s) is not a number.' % (name, value, cache_ram_source), evidence)
    if caching is None:
        return instance(name, 'error', '%s: %s=%r is not a value llama-server accepts.'
                        % (name, llama_server.CACHE_PROMPT.env, environ.get(llama_server.CACHE_PROMPT.env)), evidence)
    evidence['supervisor'] = llama_server.supervisor(ctx, process)
    forced = settings['clients_force_cache_prompt']
    risks = paths_at_risk(cache_ram, caching or forced)
    evidence['paths_at_risk'] = risks
    summary = _risk_summary(name, adapters, cache_ram, cache_ram_source, caching_source, risks, forced and not caching)
    exposed = risks
    status = 'at_risk' if risks else 'ok'
    if 'lora_cache' in ctx.probes:
        status, summary, exposed = _probe(process, evidence, settings, init_without_apply, risks, summary)
    evidence['exposed_paths'] = exposed
    return instance(name, status, summary, evidence)


def _probe(process, evidence, settings, init_without_apply, risks, summary):
    """(status, summary, exposed paths): measured paths replace what the settings suggest."""
    # Imported here, when a probe runs: probes are opt-in, and every module the audit imports is
    # compiled from the payload on every host, every run.
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe
    base, key, reason = llama_server.probe_target(process)
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


def _preset_caching(sections, section, routers):
    """(enabled, where) of prompt caching for a preset section: router command line, section, [*], top."""
    flag = None
    for router in routers:
        value = llama_server.last_flag(router.argv, llama_server.CACHE_PROMPT.names, (llama_server.CACHE_PROMPT_OFF,))
        if value is not None:
            flag = (router.pid, value)
    if flag is not None:
        return flag[1], 'command line of router pid %d' % flag[0]
    for candidate in (section, '*', ''):
        entries = sections.get(candidate) or {}
        keys = sorted(k for k in ('cache-prompt', 'no-cache-prompt') if k in entries)
        if keys:
            raw, lineno = entries[keys[-1]]
            return (raw in llama_server.TRUTHY) == (keys[-1] == 'cache-prompt'), '[%s] line %d' % (candidate or '(top)', lineno)
    return True, 'default'


def _preset_instances(ctx, path, routers):
    sections, problem = llama_server.read_preset(path, routers)
    if problem:
        return problem
    found = []
    forced = ctx.settings_for(DETECTION)['clients_force_cache_prompt']
    router_cache = llama_server.router_value(routers, llama_server.CACHE_RAM)
    for section in sorted(s for s in sections if s not in ('', '*')):
        adapters = []
        for key in LORA_KEYS:
            for candidate in (section, '*', ''):
                entry = (sections.get(candidate) or {}).get(key)
                if entry:
                    adapters.append(entry[0])
                    break
        if not adapters:
            continue
        value, where = llama_server.preset_value(sections, section, llama_server.CACHE_RAM)
        if router_cache is not None:
            value, where = router_cache[1], ('command line of router pid %d' % router_cache[0], 0)
        value = value if value is not None else llama_server.CACHE_RAM.default
        cache_ram = llama_server.as_int(value)
        name = 'preset %s [%s]' % (path, section)
        cache_ram_from = '[%s] line %d' % where if where and where[1] else (where[0] if where else 'default')
        caching, caching_from = _preset_caching(sections, section, routers)
        evidence = {'file': path, 'section': section, 'adapters': adapters, 'cache_ram': cache_ram,
                    'cache_ram_from': cache_ram_from, 'cache_prompt': caching, 'cache_prompt_from': caching_from,
                    'used_by': [r.pid for r in routers]}
        if cache_ram is None:
            found.append(instance(name, 'error', '%s: cache-ram = %r is not a number.' % (name, value), evidence))
            continue
        risks = evidence['paths_at_risk'] = evidence['exposed_paths'] = paths_at_risk(cache_ram, caching or forced)
        summary = _risk_summary(name, adapters, cache_ram, cache_ram_from, caching_from, risks, forced and not caching)
        found.append(instance(name, 'at_risk' if risks else 'ok', summary, evidence))
    return found


def judge(ctx, settings):
    instances, evidence = llama_server.collect(ctx, settings.get('preset_paths'), _process_instance, _preset_instances)
    evidence['probe_requested'] = 'lora_cache' in ctx.probes
    if not instances:
        return make_finding(DETECTION, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    if worst['status'] == 'ok':
        summary = 'No llama-server instance reuses KV across a LoRA scale change.'
    else:
        summary = worst['summary']
    return make_finding(DETECTION, 'ok', summary, evidence=evidence, instances=instances)
