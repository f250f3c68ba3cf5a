# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM's weight cache as its own code decides it: which daemon socket an engine reaches, and which
fields of the WeightCacheKey each release compares (PyPI wheels 0.30.0 to 0.33.0).

The key (vllm/model_executor/model_loader/weight_cache/protocol.py ``WeightCacheKey``, its fields'
lines in tests/unit/fixtures/vllm/weight_cache_key_fields.json):
- 0.30.0 (l.264-272): checkpoint, model_arch, tp_size, tp_rank, dtype, quantization,
  quant_config_hash, revision, vllm_version;
- 0.31.0 (l.292-295): + is_draft, dp_size, dp_rank;
- 0.32.0 (l.298-299): + pp_size, pp_rank; quant_config_hash also hashes the runtime
  ``--quantization-config`` (``_hash_quant_config`` l.231-242);
- 0.33.0 (l.322-324, l.333-339): + rope_parameters_hash, kv_cache_dtype, kv_cache_dtype_skip_layers,
  enable_expert_parallel, expert_placement_strategy, moe_backend, linear_backend,
  linear_backend_per_quant.
The daemon answers "mismatch" when any field differs (daemon.py ``_handle_get_state``) and the
engine falls back to disk ("Weight cache unusable (...); falling back to disk loading",
ipc_loader.py l.139-141 in 0.30.0).

The socket (protocol.py ``get_socket_dir``/``get_socket_path``, ipc_loader.py ``_resolve_socket_path``):
the engine's ``--model-loader-extra-config`` ``socket_path``, else ``socket_dir`` (or
``tempfile.gettempdir()``/vllm_weight_cache_<uid>) / vllm_weight_cache_<GPU uuid>.sock (0.31.0 and
later: md5 of the uuid, ``_draft`` for the draft group); the daemon binds the same name under its
``--weight-cache-socket-dir`` or its own default directory. Directory and socket must belong to
the engine's user (``verify_private_dir``), and the daemon's GPU must be the engine's
(``_check_gpu_uuid``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json
from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import weight_cache_socket as socket_view

SAME, DIFFERS, UNKNOWN = 'same', 'differs', 'unknown'
DP_SINCE = (0, 31, 0)
PP_SINCE = (0, 32, 0)
RUNTIME_QUANT_SINCE = (0, 32, 0)
V033_FIELDS_SINCE = (0, 33, 0)
# The daemon keys a dense model's data parallel size as 1 from 0.33.0 (daemon.py get_engine_dp_placement,
# l.628-637); 0.31.0 and 0.32.0 key the daemon's own --data-parallel-size.
DAEMON_DENSE_DP_AS_ONE_SINCE = (0, 33, 0)
# vllm/transformers_utils/config.py CONFIG_FIELD_ALIASES["num_experts"] (0.33.0 l.64-69).
EXPERT_COUNT_FIELDS = ('num_experts', 'moe_num_experts', 'n_routed_experts', 'num_local_experts')
# vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE and _FLOAT16_NOT_SUPPORTED_MODELS (0.33.0 l.2384-2403).
DTYPE_NAMES = {'half': 'float16', 'float16': 'float16', 'bfloat16': 'bfloat16', 'float': 'float32',
               'float32': 'float32'}
NO_FLOAT16_MODELS = ('gemma2', 'gemma3', 'gemma3_text', 'glm4')
ROPE_FIELDS = ('rope_parameters', 'rope_scaling', 'rope_theta', 'max_position_embeddings', 'partial_rotary_factor')
# ipc_loader.py's extra config keys (0.31.0 l.82-99); socket_dir/socket_path exist from 0.30.0.
EXTRA_KEYS = ('socket_path', 'socket_dir', 'is_draft', 'mode', 'fallback', 'connect_timeout_s', 'state_timeout_s')


def loader_extra_config(entry):
    """(dict, problem) of --model-loader-extra-config: a JSON value, or dotted --model-loader-extra-config.KEY
    values (vllm/utils/argparse_utils.py FlexibleArgumentParser, 0.33.0 l.462-497: the dotted ones are
    merged and passed after the others, so they replace a JSON value)."""
    dotted, problem = {}, None
    prefix = '--model-loader-extra-config.'
    for name, values in entry.options.items():
        if name.startswith(prefix) and values:
            key = name[len(prefix):].replace('-', '_')
            dotted[key] = _json_or_text(values[-1])
    if dotted:
        return dotted, None
    raw = entry.value('--model-loader-extra-config')
    if not raw:
        return {}, None
    try:
        value = bounded_json.loads(raw, '--model-loader-extra-config')
    except bounded_json.JsonInputError as exc:
        return {}, str(exc)
    if not isinstance(value, dict):
        return {}, '--model-loader-extra-config is not a JSON object'
    return value, problem


def _json_or_text(text):
    """A command-line value as vLLM's argparse types read it: JSON when it parses, else the text. A value
    too deep or too large for bounded_json stays text (compared as such, never walked)."""
    try:
        return bounded_json.loads(text, 'a command-line value')
    except bounded_json.JsonInputError:
        return text


def _truthy(value):
    return value is True or (isinstance(value, str) and value.lower() in ('1', 'true', 'yes'))


class Side(object):
    """What one process (engine or daemon) brings to the key and the socket, read from /proc and its files."""

    def __init__(self, entry, role, version_text, uid, model, model_dir, config, fingerprint, extra):
        self.entry = entry
        self.role = role
        self.version_text = version_text
        self.version = hostio.version_tuple(version_text) if version_text else None
        self.uid = uid
        self.model = model
        self.model_dir = model_dir
        self.config = config if isinstance(config, dict) else {}
        self.fingerprint = fingerprint
        self.extra = extra or {}

    def value(self, name, default=None):
        return self.entry.value(name, default)

    def flag(self, *names):
        for name in names:
            value = self.entry.value(name)
            if value is not None:
                return value.lower() not in ('false', '0', 'no')
        return False

    def int_value(self, name, default):
        value = self.entry.value(name, str(default))
        return int(value) if value.isdigit() and len(value) < 7 else value

    def text_config(self):
        text = self.config.get('text_config')
        return text if isinstance(text, dict) else {}

    def config_value(self, name):
        if name in self.config:
            return self.config[name]
        return self.text_config().get(name)

    @property
    def is_moe(self):
        for name in EXPERT_COUNT_FIELDS:
            value = self.config_value(name)
            if isinstance(value, list):
                value = value[0] if value else 0
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return True
        return False

    @property
    def is_draft(self):
        return self.role == 'engine' and _truthy(self.extra.get('is_draft'))


def _canonical(value):
    def normalize(item):
        if isinstance(item, dict):
            return dict((k, normalize(v)) for k, v in item.items())
        if isinstance(item, (list, tuple)):
            return [normalize(v) for v in item]
        if isinstance(item, float) and item.is_integer():
            return int(item)
        return item
    return json.dumps(normalize(value), sort_keys=True)


def _plain(engine_value, daemon_value):
    return SAME if engine_value == daemon_value else DIFFERS


def _auto_dtype(config_dtype, model_type, ampere):
    """What ``--dtype auto`` resolves to on a CUDA GPU (config/model.py _resolve_auto_dtype, 0.33.0 l.2423-2464;
    cuda.py supported_dtypes l.257-266: bfloat16 from compute capability 8.0)."""
    supported = ['bfloat16', 'float16', 'float32'] if ampere else ['float16', 'float32']
    supported = [d for d in supported if not (d == 'float16' and model_type in NO_FLOAT16_MODELS)]
    if config_dtype == 'float32':
        config_dtype = supported[0]
    return config_dtype if config_dtype in supported else supported[0]


def _dtype(side):
    """('explicit', name) or ('auto', config dtype name or None, model_type)."""
    value = (side.value('--dtype', 'auto') or 'auto').lower()
    if value != 'auto':
        return ('explicit', DTYPE_NAMES.get(value, value))
    raw = side.config.get('torch_dtype') or side.config.get('dtype') or side.text_config().get('torch_dtype') \
        or side.text_config().get('dtype')
    return ('auto', DTYPE_NAMES.get(raw, raw) if isinstance(raw, str) else None, side.config.get('model_type'))


def compare_dtype(engine, daemon):
    """(verdict, why): the key's ``str(model_config.dtype)`` of both sides, on a GPU of either generation."""
    ours, theirs = _dtype(engine), _dtype(daemon)
    if ours[0] == theirs[0] == 'explicit':
        return _plain(ours[1], theirs[1]), '--dtype %s / %s' % (ours[1], theirs[1])
    if ours == theirs:
        return SAME, 'auto with the same config.json dtype %s' % ours[1]
    if (ours[0] == 'auto' and ours[1] is None) or (theirs[0] == 'auto' and theirs[1] is None):
        return UNKNOWN, 'auto without a dtype in config.json (vLLM then reads the safetensors dtypes)'
    results = set()
    # An explicit bfloat16 engine or daemon runs only from compute capability 8.0 (cuda.py
    # check_if_supports_dtype, 0.33.0 l.638-656): that settles the GPU generation.
    generations = (True,) if ('explicit', 'bfloat16') in (ours[:2], theirs[:2]) else (True, False)
    for ampere in generations:
        resolved = [side[1] if side[0] == 'explicit' else _auto_dtype(side[1], side[2], ampere) for side in (ours, theirs)]
        results.add(_plain(*resolved))
    if len(results) == 1:
        return results.pop(), 'auto resolves from config.json the same way on every GPU: %s / %s' % (ours[1], theirs[1])
    return UNKNOWN, ('auto resolves to bfloat16 or float16 depending on the GPU (compute capability 8.0), which '
                     'decides whether %s and %s match' % (ours[1:], theirs[1:]))


def compare_quantization(engine, daemon):
    """(verdict, why) over ``quantization`` and ``quant_config_hash``."""
    ours, theirs = engine.config.get('quantization_config'), daemon.config.get('quantization_config')
    if _canonical(ours) != _canonical(theirs):
        return DIFFERS, 'quantization_config in config.json differs (quant_config_hash)'
    if engine.version and engine.version >= RUNTIME_QUANT_SINCE:
        runtime = [side.value('--quantization-config') for side in (engine, daemon)]
        if runtime[0] != runtime[1]:
            parsed = [_json_or_text(r) if r else None for r in runtime]
            if all(isinstance(p, dict) or p is None for p in parsed) and _canonical(parsed[0]) != _canonical(parsed[1]):
                return DIFFERS, '--quantization-config differs (hashed from 0.32.0)'
            return UNKNOWN, '--quantization-config %s / %s' % tuple(runtime)
    cli = [side.value('--quantization') for side in (engine, daemon)]
    if cli[0] == cli[1]:
        return SAME, '--quantization %s on both, same quantization_config' % cli[0]
    if None not in cli:
        return DIFFERS, '--quantization %s / %s' % tuple(cli)
    if not isinstance(ours, dict):
        return DIFFERS, '--quantization %s / %s on an unquantized checkpoint' % tuple(cli)
    return UNKNOWN, ('--quantization %s / %s: vLLM picks a method for the unset side from quantization_config, '
                     'which may be a kernel variant' % tuple(cli))


def _dp_key(side, version):
    dp = side.int_value('--data-parallel-size', 1)
    if side.role == 'engine' or version >= DAEMON_DENSE_DP_AS_ONE_SINCE:
        # vllm/v1/engine/core.py (0.31.0 l.1386-1395): dense DP ranks run as independent DP=1 engines.
        return dp if side.is_moe else 1
    return dp


def compare_rope(engine, daemon):
    """(verdict, why) for rope_parameters_hash: transformers' rope_parameters and max_position_embeddings
    (protocol.py hash_rope_parameters, 0.33.0 l.249-268), from the config.json fields they come from."""
    if engine.value('--hf-overrides') != daemon.value('--hf-overrides'):
        return UNKNOWN, '--hf-overrides differ and may change the RoPE parameters'
    unknown = []
    for name in ROPE_FIELDS:
        ours, theirs = engine.config_value(name), daemon.config_value(name)
        if ours is None and theirs is None:
            continue
        if ours is None or theirs is None:
            unknown.append(name)
        elif _canonical(ours) != _canonical(theirs):
            return DIFFERS, '%s in config.json differs' % name
    if unknown:
        return UNKNOWN, 'only one config.json sets %s' % ', '.join(unknown)
    return SAME, 'same RoPE fields in config.json'


def _kernel(side, name):
    value = (side.value('--' + name.replace('_', '-')) or 'auto').lower().replace('-', '_')
    if value != 'auto':
        return value
    kernel = _json_or_text(side.value('--kernel-config') or '{}')
    found = kernel.get(name) if isinstance(kernel, dict) else None
    return found if found is not None else 'auto'


def _architectures(value):
    """config.json's ``architectures`` as the key's text: the names of a list, else what the value is (a
    config transformers would refuse: both sides holding it is still the same value)."""
    if isinstance(value, list):
        return ','.join(a for a in value if isinstance(a, str))
    return '' if value is None else 'not a list: %s' % json.dumps(value, sort_keys=True)[:80]


def compare_keys(engine, daemon):
    """[(field, verdict, why)] for every field of the engine's release's WeightCacheKey."""
    # Without a version the fields of the newest release are compared (a superset of the older ones).
    version = engine.version or daemon.version or V033_FIELDS_SINCE
    if engine.version_text and daemon.version_text:
        rows = [('vllm_version', _plain(engine.version_text, daemon.version_text),
                 '%s / %s' % (engine.version_text, daemon.version_text))]
    else:
        rows = [('vllm_version', UNKNOWN, 'no vllm dist-info next to the %s\'s Python' % (
            'engine' if not engine.version_text else 'daemon'))]
    ours, theirs = engine.fingerprint or engine.model, daemon.fingerprint or daemon.model
    rows.append(('checkpoint', _plain(ours, theirs), 'header fingerprint %s / %s' % (
        (engine.fingerprint or engine.model or '')[:12], (daemon.fingerprint or daemon.model or '')[:12])))
    arch = [_architectures(side.config.get('architectures')) for side in (engine, daemon)]
    rows.append(('model_arch', _plain(*arch), '%s / %s' % tuple(arch)))
    tp = [side.int_value('--tensor-parallel-size', 1) for side in (engine, daemon)]
    rows.append(('tp_size', _plain(*tp), '%s / %s' % tuple(tp)))
    rows.append(('dtype',) + compare_dtype(engine, daemon))
    rows.append(('quantization',) + compare_quantization(engine, daemon))
    revision = [side.value('--revision') for side in (engine, daemon)]
    rows.append(('revision', _plain(*revision), '%s / %s' % tuple(revision)))
    if version >= DP_SINCE:
        rows.append(('is_draft', _plain(engine.is_draft, False), 'is_draft %s in the engine\'s extra config'
                     % engine.is_draft))
        dp = [_dp_key(engine, version), _dp_key(daemon, version)]
        rows.append(('dp_size', _plain(*dp), '%s / %s as keyed (a dense model keys 1)' % tuple(dp)))
    if version >= PP_SINCE:
        pp = [side.int_value('--pipeline-parallel-size', 1) for side in (engine, daemon)]
        rows.append(('pp_size', _plain(*pp), '%s / %s' % tuple(pp)))
    if version >= V033_FIELDS_SINCE:
        rows.append(('rope_parameters_hash',) + compare_rope(engine, daemon))
        kv = [side.value('--kv-cache-dtype', 'auto') for side in (engine, daemon)]
        rows.append(('kv_cache_dtype', _plain(*kv), '%s / %s' % tuple(kv)))
        skip = [sorted(side.entry.options.get('--kv-cache-dtype-skip-layers') or []) for side in (engine, daemon)]
        rows.append(('kv_cache_dtype_skip_layers', _plain(*skip), '%s / %s' % tuple(skip)))
        ep = [side.flag('--enable-expert-parallel', '-ep') for side in (engine, daemon)]
        rows.append(('enable_expert_parallel', _plain(*ep), '%s / %s' % tuple(ep)))
        placement = [side.value('--expert-placement-strategy', 'linear') for side in (engine, daemon)]
        rows.append(('expert_placement_strategy', _plain(*placement), '%s / %s' % tuple(placement)))
        for name in ('moe_backend', 'linear_backend'):
            values = [_kernel(side, name) for side in (engine, daemon)]
            rows.append((name, _plain(*values), '%s / %s' % tuple(values)))
        per_quant = [_json_or_text(side.value('--kernel-config') or '{}') for side in (engine, daemon)]
        per_quant = [_canonical(p.get('linear_backend_per_quant') or {}) if isinstance(p, dict) else p for p in per_quant]
        rows.append(('linear_backend_per_quant', _plain(*per_quant), '%s / %s' % tuple(per_quant)))
    return rows


# weight_cache/utils.py WEIGHT_CACHE_DRAFT_METHODS (0.31.0 l.17): the drafts a daemon caches in a group of its own.
DRAFT_METHODS = ('mtp', 'eagle', 'eagle3')


def serves_draft(daemon):
    """The draft model a daemon's draft group caches (``vllm preload --speculative-config``, 0.31.0 and
    later), or None."""
    if not daemon.version or daemon.version < DP_SINCE:
        return None
    spec = _json_or_text(daemon.value('--speculative-config') or '')
    if not isinstance(spec, dict) or spec.get('method') not in DRAFT_METHODS:
        return None
    return spec.get('model') or daemon.model


def overall(rows):
    verdicts = set(row[1] for row in rows)
    if DIFFERS in verdicts:
        return DIFFERS
    return UNKNOWN if UNKNOWN in verdicts else SAME


# --- the socket (where each process's is: weight_cache_socket.py) --------------------------------------


def _first_gpu(side):
    """(first visible device as CUDA names it, CUDA_DEVICE_ORDER) of the process (local rank 0's GPU)."""
    environ = side.entry.process.environ() or {}
    visible = environ.get('CUDA_VISIBLE_DEVICES')
    order = environ.get('CUDA_DEVICE_ORDER') or 'FASTEST_FIRST'
    if visible is None:
        return '0', order
    first = visible.split(',')[0].strip()
    return first, order


def compare_gpu(engine, daemon):
    """(verdict, why): is the engine's first GPU the daemon's? The socket is named by it, and the
    daemon's GPU uuid must be the engine's (ipc_loader.py _check_gpu_uuid)."""
    for side in (engine, daemon):
        if side.entry.process.environ() is None:
            return UNKNOWN, 'the %s\'s environment (CUDA_VISIBLE_DEVICES) is unreadable' % side.role
    (ours, our_order), (theirs, their_order) = _first_gpu(engine), _first_gpu(daemon)
    if ours == '' or theirs == '':
        return DIFFERS, 'CUDA_VISIBLE_DEVICES is empty for %s' % ('the engine' if ours == '' else 'the daemon')
    why = 'CUDA_VISIBLE_DEVICES first device %s / %s' % (ours, theirs)
    if ours.isdigit() and theirs.isdigit():
        if our_order != their_order:
            return UNKNOWN, why + ' with CUDA_DEVICE_ORDER %s / %s' % (our_order, their_order)
        return _plain(int(ours), int(theirs)), why
    if ours.isdigit() or theirs.isdigit():
        return UNKNOWN, why + ' (an index and a uuid cannot be compared without the driver)'
    if ours.startswith(theirs) or theirs.startswith(ours):
        return SAME, why
    return DIFFERS, why


def compare_socket(ctx, engine, daemon):
    """[(part, verdict, why)]: does the engine's socket path lead to this daemon's socket?"""
    uid_why = 'engine uid %s / daemon uid %s (sockets are per user)' % (engine.uid, daemon.uid)
    rows = [('uid', UNKNOWN if None in (engine.uid, daemon.uid) else _plain(engine.uid, daemon.uid), uid_why)]
    ours, name, how = socket_view.socket_dir(ctx, engine)
    theirs, _none, their_how = socket_view.socket_dir(ctx, daemon)
    why = 'engine %s (%s) / daemon %s (%s)' % (ours, how, theirs, their_how)
    unread = [side.role for side, chosen in ((engine, how), (daemon, their_how))
              if chosen.startswith('gettempdir') and side.entry.process.environ() is None]
    if unread:
        # gettempdir() follows TMPDIR, TEMP and TMP, which an unreadable environment hides.
        rows.append(('socket_dir', UNKNOWN, why + ': the %s\'s environment is unreadable (%s)' % (
            unread[0], getattr(engine.entry.process if unread[0] == 'engine' else daemon.entry.process,
                               'environ_problem', None))))
        rows.append(('gpu',) + compare_gpu(engine, daemon))
        return rows
    if name is not None and not (name.startswith(socket_view.SOCKET_PREFIX) and name.endswith('.sock')
                                 and name.endswith('_draft.sock') == engine.is_draft):
        rows.append(('socket', DIFFERS, 'socket_path %s is not a name this daemon binds' % name))
    engine_id, engine_problem = socket_view.stat(ctx, engine.entry.pid, ours)
    daemon_id, _problem = socket_view.stat(ctx, daemon.entry.pid, theirs)
    if engine_id is not None and daemon_id is not None:
        rows.append(('socket_dir', _plain(engine_id, daemon_id), why + ', compared as each process sees it'))
    elif engine_id is None and getattr(engine_problem, 'errno', None) == 2 and socket_view.stat(ctx, engine.entry.pid, '/')[0]:
        rows.append(('socket_dir', DIFFERS, why + ': the engine\'s directory does not exist where it looks'))
    elif os.path.normpath(ours) != os.path.normpath(theirs):
        rows.append(('socket_dir', DIFFERS, why))
    elif socket_view.mount_ns(ctx, engine.entry.pid) and socket_view.mount_ns(ctx, engine.entry.pid) == socket_view.mount_ns(ctx, daemon.entry.pid):
        rows.append(('socket_dir', SAME, why + ', same mount namespace'))
    else:
        private = socket_view.private_tmp(ctx, engine, daemon, ours)
        if private:
            rows.append(('socket_dir', DIFFERS, why + ': ' + private))
        else:
            rows.append(('socket_dir', UNKNOWN, why + ': same path, but whether it is the same directory (PrivateTmp, '
                         'containers) could not be read'))
    rows.append(('gpu',) + compare_gpu(engine, daemon))
    return rows


# --- the engine's log ---------------------------------------------------------------------------------

MAPPED = 'tensors from the weight cache daemon'
FELL_BACK = 'falling back to disk loading'


def last_load(lines):
    """('mapped' | 'fell_back', line) from the last weight cache line of an engine's log, or (None, None).

    ipc_loader.py logs "Mapped %d tensors from the weight cache daemon (%s mode)" when it mapped,
    and "Weight cache unusable (%s); falling back to disk loading" or "Weight cache IPC loading
    failed; falling back to disk loading" when it did not (0.30.0 l.136-159, 0.33.0 l.250-265)."""
    for line in reversed(lines or []):
        if MAPPED in line and 'Mapped' in line:
            return 'mapped', line[:300]
        if FELL_BACK in line:
            return 'fell_back', line[:300]
    return None, None
