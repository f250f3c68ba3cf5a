# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_lora_cache: the RAM prompt cache restores KV computed under another LoRA scale.

Cache entries are keyed by tokens only. A prompt computed under scale A, pushed
out of its slot, and asked for again under scale B comes back from the cache
with A's KV: the answer is neither A's nor B's, and nothing says so but
cache_n. Servers that load adapters with --cache-ram on (the default) are
at_risk; the lora_cache probe measures it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import probes as llama_probes
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding, make_remediation

ID = 'llama_lora_cache'
GROUP = 'llama'
# Preset files can be read in an image; processes only on a live host.
APPLIES = {'image': True, 'binary': None, 'root': None}
TITLE = "llama-server's prompt cache reuses KV computed under a different LoRA scale"
REFERENCES = [
    'https://github.com/ggml-org/llama.cpp/issues/26207',
    'llama.cpp tools/server/server-task.h (server_prompt has no adapter field) and launch_slot_with_task',
]
REMEDIATION = make_remediation(
    role='homelab.postmortem.llama_server',
    role_vars={'llama_server_cache_ram_off': True, 'llama_server_restart': True},
    manual=[
        'Start llama-server with --cache-ram 0 when it serves more than one LoRA setting.',
        'Or send "cache_prompt": false on every request (entries are written whatever the flag says).',
        'Clients that change scales with POST /lora-adapters: send "cache_prompt": false as well; '
        'measured here, the global path mixes up KV even with --cache-ram 0.',
    ],
    disruption='restart',
)
PROBES = ('lora_cache',)
SETTINGS = {
    'preset_paths': {'type': 'list', 'elements': 'str', 'default': [],
                     'description': 'Router preset INI files to read besides those named by running routers.'},
}

_SELF = sys.modules[__name__]
LORA_KEYS = ('lora', 'lora-scaled')


def _process_instance(ctx, process):
    environ = process.environ() or {}
    evidence = llama_server.process_evidence(process)
    adapters = llama_server.lora_adapters(process.argv)
    value, source = llama_server.resolve(llama_server.CACHE_RAM, process.argv, environ)
    cache_ram = llama_server.as_int(value)
    init_without_apply = llama_server.has_flag(process.argv, '--lora-init-without-apply')
    evidence.update(adapters=adapters, cache_ram=cache_ram if cache_ram is not None else value,
                    cache_ram_source=source, lora_init_without_apply=init_without_apply)
    name = llama_server.describe_process(process)
    if not adapters:
        return instance(name, 'ok', '%s loads no LoRA adapter.' % name, evidence)
    if cache_ram is None:
        return instance(name, 'error', '%s: --cache-ram %r is not a number.' % (name, value), evidence)
    evidence['supervisor'] = llama_server.supervisor(ctx, process)
    if cache_ram == 0:
        status, summary = 'ok', ('%s serves %d LoRA adapter(s) with the RAM cache off (--cache-ram 0).'
                                 % (name, len(adapters)))
    else:
        status, summary = 'at_risk', ('%s serves %d LoRA adapter(s) with the RAM cache on (--cache-ram %d, %s): '
                                      'a prompt can come back from the cache computed under another scale.'
                                      % (name, len(adapters), cache_ram, source))
    if 'lora_cache' in ctx.probes:
        status, summary = _probe(process, status, summary, evidence, init_without_apply)
    return instance(name, status, summary, evidence)


def _probe(process, status, summary, evidence, init_without_apply):
    base, key, reason = llama_server.probe_target(process)
    if not base:
        evidence['probe'] = {'verdict': 'unknown', 'reason': reason}
        return status, '%s (probe: %s)' % (summary, reason)
    measured = llama_probes.lora_cache(base, key, global_path=not init_without_apply)
    evidence['probe'] = measured
    verdict = measured.get('verdict')
    per_request = measured.get('per_request') or {}
    glob = measured.get('global') or {}
    if verdict == 'affected':
        paths = [label for label, part in (('per-request lora', per_request), ('POST /lora-adapters', glob))
                 if part.get('verdict') == 'affected']
        hit = per_request if per_request.get('verdict') == 'affected' else glob
        return 'affected', ('Measured (%s): cache_n=%s, the answer %r instead of the uncached %r.'
                            % (', '.join(paths), hit.get('cache_n'), hit.get('answer'), hit.get('uncached_answer')))
    if verdict == 'ok':
        return 'ok', 'Measured: %s.' % (per_request.get('reason') or 'no mix-up')
    return status, '%s (probe: %s)' % (summary, measured.get('reason') or per_request.get('reason') or glob.get('reason'))


def _preset_instances(ctx, path, routers):
    sections, problem = llama_server.read_preset(path, routers)
    if problem:
        return problem
    found = []
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
        evidence = {'file': path, 'section': section, 'adapters': adapters, 'cache_ram': cache_ram,
                    'cache_ram_from': '[%s] line %d' % where if where and where[1] else (where[0] if where else 'default'),
                    'used_by': [r.pid for r in routers]}
        if cache_ram is None:
            found.append(instance(name, 'error', '%s: cache-ram = %r is not a number.' % (name, value), evidence))
        elif cache_ram == 0:
            found.append(instance(name, 'ok', '%s: LoRA with the RAM cache off.' % name, evidence))
        else:
            found.append(instance(name, 'at_risk', '%s loads LoRA adapters with the RAM cache on (cache-ram %d).'
                                  % (name, cache_ram), evidence))
    return found


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    instances, evidence = llama_server.collect(ctx, settings.get('preset_paths'), _process_instance, _preset_instances)
    evidence['probe_requested'] = 'lora_cache' in ctx.probes
    if not instances:
        return make_finding(_SELF, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    if worst['status'] == 'ok':
        summary = 'No llama-server instance mixes LoRA adapters with the RAM prompt cache.'
    else:
        summary = worst['summary']
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
