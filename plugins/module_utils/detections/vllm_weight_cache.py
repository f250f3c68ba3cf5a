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

import json
import os
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance, make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import checkpoint as vllm_checkpoint
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import install as vllm_install
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import safetensors

ID = 'vllm_weight_cache'
GROUP = 'vllm'
APPLIES = {'image': False, 'binary': None, 'root': None}
TITLE = "vLLM's weight cache serves an engine the weights of another checkpoint"
REFERENCES = [
    'vllm/model_executor/model_loader/weight_cache/protocol.py hash_checkpoint and WeightCacheKey '
    '(PyPI 0.30.0 to 0.33.0: basename + safetensors header per shard, no weight bytes)',
    'vllm/model_executor/model_loader/weight_cache/ipc_loader.py: "Mapped %d tensors from the weight cache daemon"',
    'vllm/entrypoints/cli/preload.py (vllm preload, from 0.31.0)',
]
REMEDIATION = make_remediation(
    manual=[
        'Stop the engine from mapping the daemon\'s weights: start it without --load-format ipc_cache, or run '
        'a daemon (vllm preload) for its own checkpoint and stop the one for the other checkpoint.',
        'Give fine-tunes a layout of their own only as a stopgap (for example another shard name): the key '
        'still hashes headers, not weights.',
    ],
    disruption='restart',
)
PROBES = ()
SETTINGS = {
    'content_check': {'type': 'str', 'default': 'sample', 'choices': ['sample', 'full', 'off'],
                      'description': 'Compare tensor bytes of daemon and engine checkpoints: 3 x 4 KiB per tensor '
                                     '(sample), every byte (full), or not at all (off: matching keys are at_risk).'},
    'max_tensors': {'type': 'int', 'default': 20000, 'min': 1, 'max': 1000000,
                    'description': 'Tensors compared per checkpoint at most.'},
    'max_listed': {'type': 'int', 'default': 10, 'min': 1, 'max': 1000,
                   'description': 'Differing tensors listed in the evidence.'},
    'journal_lines': {'type': 'int', 'default': 20000, 'min': 0, 'max': 1000000,
                      'description': 'Lines of the engine unit\'s journal searched for the "Mapped N tensors" line '
                                     '(0: do not read the journal).'},
}

_SELF = sys.modules[__name__]
MAPPED_LINE = 'tensors from the weight cache daemon'
DTYPE_NAMES = {'half': 'float16', 'float16': 'float16', 'bfloat16': 'bfloat16', 'float': 'float32',
               'float32': 'float32'}
KEY_OPTIONS = (('--dtype', 'auto'), ('--tensor-parallel-size', '1'), ('--pipeline-parallel-size', '1'),
               ('--quantization', None), ('--revision', None), ('--kv-cache-dtype', 'auto'))


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


def _key(ctx, entry, settings):
    """The parts of the WeightCacheKey that can be read without vLLM, with the checkpoint fingerprints."""
    model, real = _model_dir(ctx, entry)
    key = {'model': model, 'vllm_version': vllm_install.version_of(ctx, entry.process)[0], 'uid': _uid(entry.process),
           'socket_dir': entry.value('--weight-cache-socket-dir')}
    for option, default in KEY_OPTIONS:
        key[option.lstrip('-').replace('-', '_')] = entry.value(option, default)
    key['dtype'] = DTYPE_NAMES.get(key['dtype'], key['dtype'])
    headers = []
    if real and os.path.isdir(real):
        key['header_fingerprint'], headers = vllm_checkpoint.header_fingerprint(real)
        try:
            config = json.loads(hostio.read_text(os.path.join(real, 'config.json'), limit=4 * 1024 * 1024))
        except (hostio.ReadProblem, ValueError):
            config = {}
        architectures = config.get('architectures') if isinstance(config, dict) else None
        key['architecture'] = ','.join(a for a in architectures or [] if isinstance(a, str))
        key['config_dtype'] = (config.get('torch_dtype') or config.get('dtype')) if isinstance(config, dict) else None
        if key['dtype'] == 'auto' and isinstance(key['config_dtype'], str):
            # vLLM resolves auto from config.json; two processes on one host resolve it alike.
            key['dtype'] = 'auto (%s)' % key['config_dtype']
    else:
        # An undownloaded repo id: vLLM falls back to the model string itself.
        key['header_fingerprint'] = None
    return key, headers


COMPARED = ('header_fingerprint', 'architecture', 'dtype', 'tensor_parallel_size',
            'pipeline_parallel_size', 'quantization', 'revision', 'kv_cache_dtype', 'vllm_version', 'uid', 'socket_dir')


def _checkpoint_id(key):
    return key.get('header_fingerprint') or key.get('model')


def _mismatch(engine, daemon):
    fields = [f for f in COMPARED if f != 'header_fingerprint' and engine.get(f) != daemon.get(f)]
    if _checkpoint_id(engine) != _checkpoint_id(daemon):
        fields.insert(0, 'checkpoint')
    return fields


def _journal(ctx, entry, settings):
    """The engine unit's last "Mapped N tensors from the weight cache daemon" line, or None."""
    if not settings['journal_lines']:
        return None
    unit, scope = hostio.systemd_unit_from_cgroup(entry.process.cgroup_lines())
    try:
        lines, _problem = hostio.read_journal(ctx.run_command, ctx.which('journalctl'), unit,
                                              settings['journal_lines'], scope)
    except HostInputError:
        return None  # the journal is extra evidence, never the verdict
    found = [line for line in lines or [] if MAPPED_LINE in line]
    return found[-1][:300] if found else None


def _compare(ctx, settings, engine, daemon, engine_key, daemon_key, engine_headers, daemon_headers):
    name = 'engine pid %d' % engine.pid
    evidence = {'engine': dict(engine_key, pid=engine.pid), 'daemon': dict(daemon_key, pid=daemon.pid)}
    if settings['content_check'] == 'off':
        return instance(name, 'at_risk', '%s maps the weights of daemon pid %d (%s); their tensors were not compared '
                        '(setting content_check off).' % (name, daemon.pid, daemon_key['model']), evidence)
    full = settings['content_check'] == 'full'
    engine_fp, engine_tensors, engine_read = vllm_checkpoint.content(engine_headers, full, settings['max_tensors'])
    daemon_fp, daemon_tensors, _read = vllm_checkpoint.content(daemon_headers, full, settings['max_tensors'])
    differing = sorted(t for t in engine_tensors if engine_tensors[t] != daemon_tensors.get(t))
    evidence.update(engine_content=engine_fp, daemon_content=daemon_fp, content_check=settings['content_check'],
                    tensors_compared=engine_read, tensors_differing=len(differing),
                    differing=differing[:settings['max_listed']])
    if engine_fp == daemon_fp:
        return instance(name, 'ok', '%s maps daemon pid %d\'s weights, and they are the same checkpoint content (%s).'
                        % (name, daemon.pid, settings['content_check']), evidence)
    line = _journal(ctx, engine, settings)
    if line:
        evidence['journal'] = line
    return instance(name, 'affected', (
        '%s (%s) is served the weights of %s by daemon pid %d: same vLLM cache key (header fingerprint %s), '
        'different weights in %d of %d tensors compared.' % (name, engine_key['model'], daemon_key['model'], daemon.pid,
                                                             (engine_key['header_fingerprint'] or '')[:12],
                                                             len(differing), engine_read)), evidence)


def detect(ctx):
    settings = ctx.settings_for(_SELF)
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
        return make_finding(_SELF, status, summary, evidence=evidence)
    keys, instances = {}, []
    for entry in daemons + engines:
        try:
            keys[entry.pid] = _key(ctx, entry, settings)
        except (safetensors.SafetensorsProblem, hostio.ReadProblem) as exc:
            keys[entry.pid] = None
            instances.append(instance('%s pid %d' % (entry.role, entry.pid), 'error', str(exc),
                                      {'pid': entry.pid, 'model': entry.model}))
    for engine in engines:
        if keys.get(engine.pid) is None:
            continue
        engine_key, engine_headers = keys[engine.pid]
        matching, near = [], []
        for daemon in daemons:
            if keys.get(daemon.pid) is None:
                continue
            daemon_key, daemon_headers = keys[daemon.pid]
            fields = _mismatch(engine_key, daemon_key)
            (matching if not fields else near).append((daemon, daemon_key, daemon_headers, fields))
        if not matching:
            instances.append(instance('engine pid %d' % engine.pid, 'ok', (
                'engine pid %d (%s) loads with ipc_cache but no daemon has its key, so it loads from disk%s.'
                % (engine.pid, engine_key['model'], ' (nearest daemon differs in %s)' % ', '.join(near[0][3])
                   if near else '')), {'engine': dict(engine_key, pid=engine.pid),
                                       'daemons_differ_in': dict((d.pid, f) for d, _k, _h, f in near)}))
            continue
        for daemon, daemon_key, daemon_headers, _fields in matching:
            instances.append(_compare(ctx, settings, engine, daemon, engine_key, daemon_key, engine_headers,
                                      daemon_headers))
    worst = sorted(instances, key=lambda i: STATUS_RANK[i['status']])[-1]
    summary = worst['summary'] if worst['status'] != 'ok' else (
        'Every ipc_cache engine gets the weights of its own checkpoint (%d engines).' % len(engines))
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
