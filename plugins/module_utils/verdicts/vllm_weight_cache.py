# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vllm_weight_cache's verdict: the code that judges what the detection's first question found.

detections/vllm_weight_cache.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import weight_cache


def _uid(process):
    try:
        for line in hostio.read_text(os.path.join(process.proc_dir, 'status'), limit=64 * 1024).splitlines():
            if line.startswith('Uid:'):
                return int(line.split()[1])
    except (hostio.ReadProblem, ValueError, IndexError):
        return None
    return None


def _model_dir(ctx, entry):
    model = entry.model
    if not model:
        return None, None
    if not os.path.isabs(model):
        try:
            model = os.path.join(os.readlink(os.path.join(ctx.proc_root, str(entry.pid), 'cwd')), model)
        except OSError:
            return entry.model, None
    return model, ctx.path(model)


def _side(ctx, entry):
    """(weight_cache.Side, safetensors headers, problems) of one engine or daemon."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import checkpoint as vllm_checkpoint
    problems = []
    model, real = _model_dir(ctx, entry)
    config, fingerprint, headers = {}, None, []
    if real and os.path.isdir(real):
        fingerprint, headers = vllm_checkpoint.header_fingerprint(real)
        try:
            config = bounded_json.loads(hostio.read_text(os.path.join(real, 'config.json'), limit=4 * 1024 * 1024),
                                        'config.json of %s' % model)
        except hostio.ReadProblem as problem:
            problems.append('config.json of %s: %s' % (model, problem.reason))
            config = {}
        except bounded_json.JsonInputError as exc:
            problems.append(str(exc))
            config = {}
    # hash_checkpoint returns None without local shards, and the key then holds the model string.
    extra, problem = weight_cache.loader_extra_config(entry) if entry.role == 'engine' else ({}, None)
    if problem:
        problems.append(problem)
    if entry.config_problem:
        problems.append(entry.config_problem)
    side = weight_cache.Side(entry, entry.role, vllm_install.version_of(ctx, entry.process)[0], _uid(entry.process),
                             model, real, config, fingerprint, extra)
    return side, headers, problems


def _summary_of(rows):
    return dict((part, {'verdict': verdict, 'why': why}) for part, verdict, why in rows)


def _journal(ctx, entry, engines, settings):
    """(what the engine's last load did per its log, the line, why it was not read)."""
    if not settings['journal_lines']:
        return None, None, 'not read (journal_lines 0)'
    unit, scope = hostio.systemd_unit_from_cgroup(entry.process.cgroup_lines())
    if not unit:
        return None, None, 'not read (the engine runs in no systemd unit)'
    sharing = [e.pid for e in engines if e.pid != entry.pid
               and hostio.systemd_unit_from_cgroup(e.process.cgroup_lines())[0] == unit]
    if sharing:
        return None, None, 'not used: unit %s also runs engine pid %s' % (unit, sharing[0])
    try:
        lines, problem = hostio.read_journal(ctx.run_command, ctx.which('journalctl'), unit,
                                             settings['journal_lines'], scope)
    except HostInputError as exc:
        return None, None, 'not read: %s' % exc
    if lines is None:
        return None, None, problem
    outcome, line = weight_cache.last_load(lines)
    return outcome, line, None if outcome else 'no weight cache line in the last %d lines of %s' % (
        settings['journal_lines'], unit)


def _content(settings, engine_headers, daemon_headers):
    from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import checkpoint as vllm_checkpoint
    full = settings['content_check'] == 'full'
    engine_fp, engine_tensors, engine_read = vllm_checkpoint.content(engine_headers, full, settings['max_tensors'])
    daemon_fp, daemon_tensors, _read = vllm_checkpoint.content(daemon_headers, full, settings['max_tensors'])
    differing = sorted(t for t in engine_tensors if engine_tensors[t] != daemon_tensors.get(t))
    return engine_fp == daemon_fp, {
        'engine_content': engine_fp, 'daemon_content': daemon_fp, 'content_check': settings['content_check'],
        'tensors_compared': engine_read, 'tensors_differing': len(differing),
        'differing': differing[:settings['max_listed']]}


def _judge_pair(ctx, settings, engines, engine, daemon, engine_headers, daemon_headers):
    """(status, summary, evidence) for one engine against one daemon."""
    name = 'engine pid %d' % engine.entry.pid
    key_rows = weight_cache.compare_keys(engine, daemon)
    socket_rows = weight_cache.compare_socket(ctx, engine, daemon)
    draft_group = engine.is_draft and weight_cache.serves_draft(daemon)
    if draft_group:
        # is_draft sends the engine to the daemon's draft group (its own socket and key, daemon.py 0.31.0),
        # whose fields are the draft model's: only the socket decides here.
        key_rows = [row for row in key_rows if row[0] in ('vllm_version', 'is_draft')]
        key_rows = [(field, weight_cache.SAME if field == 'is_draft' else verdict, why) for field, verdict, why in key_rows]
    key, reach = weight_cache.overall(key_rows), weight_cache.overall(socket_rows)
    evidence = {'daemon_pid': daemon.entry.pid, 'daemon_model': daemon.model,
                'daemon_header_fingerprint': daemon.fingerprint, 'key': _summary_of(key_rows),
                'socket': _summary_of(socket_rows)}
    if weight_cache.DIFFERS in (key, reach):
        rows = [r for r in socket_rows + key_rows if r[1] == weight_cache.DIFFERS]
        return 'ok', '%s does not get daemon pid %d\'s weights: %s' % (
            name, daemon.entry.pid, '; '.join('%s differs (%s)' % (r[0], r[2]) for r in rows[:3])), evidence
    if draft_group:
        return 'at_risk', ('%s asks for the draft group (is_draft) of daemon pid %d, which caches %s; the draft '
                           'model\'s key is not compared here' % (name, daemon.entry.pid, draft_group)), evidence
    if settings['content_check'] == 'off':
        status = 'at_risk'
        summary = ('%s maps the weights of daemon pid %d (%s); their tensors were not compared (setting content_check '
                   'off).' % (name, daemon.entry.pid, daemon.model))
        return status, summary, evidence
    same, details = _content(settings, engine_headers, daemon_headers)
    evidence.update(details)
    if same:
        return 'ok', '%s maps daemon pid %d\'s weights, and they are the same checkpoint content (%s).' % (
            name, daemon.entry.pid, settings['content_check']), evidence
    outcome, line, why = _journal(ctx, engine.entry, engines, settings)
    evidence['journal'] = line or why
    if outcome == 'fell_back':
        return 'ok', ('%s\'s log says its last load fell back to disk loading, so nothing of daemon pid %d (%s) was '
                      'mapped.' % (name, daemon.entry.pid, daemon.model)), evidence
    differing = (details['tensors_differing'], details['tensors_compared'])
    if key == reach == weight_cache.SAME or outcome == 'mapped':
        how = ('same vLLM cache key (header fingerprint %s)' % (engine.fingerprint or '')[:12]
               if key == reach == weight_cache.SAME else 'its log says it mapped tensors from the weight cache daemon, '
               'and nothing rules this daemon out')
        return 'affected', ('%s (%s) is served the weights of %s by daemon pid %d: %s, different weights in %d of %d '
                            'tensors compared.' % ((name, engine.model, daemon.model, daemon.entry.pid, how)
                                                   + differing)), evidence
    unknown = [r for r in socket_rows + key_rows if r[1] == weight_cache.UNKNOWN]
    return 'at_risk', ('%s may be served the weights of %s by daemon pid %d (different weights in %d of %d tensors): '
                       'everything else in the key matches, but %s.' % (
                           name, daemon.model, daemon.entry.pid, differing[0], differing[1],
                           '; '.join('%s cannot be compared (%s)' % (r[0], r[2]) for r in unknown[:3]))), evidence


def judge(ctx, detection, settings, daemons, engines, evidence):
    sides, instances = {}, []
    for entry in daemons + engines:
        try:
            sides[entry.pid] = _side(ctx, entry)
        except HostInputError as exc:
            # A shard or config that cannot be used (a named pipe, a header safetensors refuses): this process only.
            sides[entry.pid] = None
            instances.append(instance('%s pid %d' % (entry.role, entry.pid), 'error', str(exc),
                                      {'pid': entry.pid, 'model': entry.model}))
    for entry in engines:
        if sides.get(entry.pid) is None:
            continue
        engine, engine_headers, engine_problems = sides[entry.pid]
        name = 'engine pid %d' % entry.pid
        base = {'engine': {'pid': entry.pid, 'model': engine.model, 'vllm_version': engine.version_text,
                           'uid': engine.uid, 'header_fingerprint': engine.fingerprint,
                           'loader_extra_config': dict((k, v) for k, v in engine.extra.items()
                                                       if k in weight_cache.EXTRA_KEYS)}}
        if engine_problems:
            base['problems'] = engine_problems
        judged = []
        for daemon_entry in daemons:
            if sides.get(daemon_entry.pid) is None:
                continue
            daemon, daemon_headers, _daemon_problems = sides[daemon_entry.pid]
            judged.append(_judge_pair(ctx, settings, engines, engine, daemon, engine_headers, daemon_headers))
        if not judged:
            instances.append(instance(name, 'ok', '%s (%s) loads with ipc_cache but no weight cache daemon runs, so '
                                      'it loads from disk.' % (name, engine.model), base))
            continue
        worst = sorted(judged, key=lambda j: STATUS_RANK[j[0]])[-1]
        evidence_ = dict(base, daemons=[j[2] for j in judged])
        evidence_.update((k, v) for k, v in worst[2].items() if k not in ('key', 'socket'))
        instances.append(instance(name, worst[0], worst[1], evidence_))
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    summary = worst['summary'] if worst['status'] != 'ok' else (
        'Every ipc_cache engine gets the weights of its own checkpoint (%d engines).' % len(engines))
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
