# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PEFT LoRA adapters on disk: found, read and judged module by module. Shared by the
vllm_lora_patterns detection and the vllm_lora_fold module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import safetensors

CONFIG = 'adapter_config.json'
WEIGHTS = 'adapter_model.safetensors'
MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 4
TOLERANCE = 1e-6


class AdapterProblem(HostInputError):
    pass


class Adapter(object):
    def __init__(self, path, raw_config, config, header, modules, peft_range):
        self.path = path
        self.raw_config = raw_config
        self.config = config
        self.header = header
        self.modules = modules                  # module -> {'rank', 'A': tensor name, 'B': tensor name}
        self.peft_range = peft_range            # lora_scale.PeftRange: the releases that can have saved it
        self.candidates, self.rank_problem = _consistent_candidates(self)

    @property
    def peft_version_recorded(self):
        return self.peft_range.recorded

    def base_scale(self):
        """The one scale every module has when no pattern changes it (PEFT >= 0.8 rsLoRA form)."""
        return lora_scale.peft_scale(lora_scale.AdapterConfig(self.config.r, self.config.alpha, self.config.use_rslora,
                                                              {}, {}), '', lora_scale.NEWEST_PEFT)[1]

    def trained(self, module, version):
        """{(rank, scale)} PEFT ``version`` can have trained ``module`` with, given its tensor rank."""
        readings = lora_scale.peft_module_scales(self.config, module, version)
        fitting = set(r for r in readings if rank_fits(self, module, r[0]))
        return fitting or readings


def rank_fits(adapter, module, rank):
    """Whether a module's lora_A has the rank PEFT would have made it: r rows, or r x experts rows for
    a parameter wrapped through target_parameters (peft/tuners/lora/layer.py ParamWrapper.update_layer,
    0.21.2 l.2455: nn.Linear(in_features, r * num_experts))."""
    tensor_rank = adapter.modules[module].get('rank')
    if tensor_rank is None:
        return True
    if lora_scale.peft_match_names(adapter.config, module) != [module]:
        return tensor_rank % rank == 0
    return tensor_rank == rank


def _consistent_candidates(adapter):
    """The PEFT rule releases of the adapter's range that give every module the rank its tensors have.

    A PEFT release that would have made a module with another rank did not train it, so it is
    dropped; when none fits, all stay and the problem is returned to be reported.
    """
    candidates = adapter.peft_range.candidates()
    fitting = [v for v in candidates
               if all(any(rank_fits(adapter, m, r) for r, _s in lora_scale.peft_module_scales(adapter.config, m, v))
                      for m in adapter.modules)]
    if fitting:
        return fitting, None
    return candidates, 'no PEFT release in %s gives every module the rank its lora_A has' % adapter.peft_range.text()


def find(ctx, roots, limit):
    """(adapter directories, problems, skipped) under ``roots``; at most ``limit`` adapters."""
    found, problems, skipped = [], [], 0
    for root in roots:
        try:
            real = ctx.path(root)
        except hostio.ReadProblem as problem:
            problems.append('%s: %s' % (root, problem.reason))
            continue
        if not os.path.isdir(real):
            problems.append('%s is not a directory' % root)
            continue
        for directory, subdirs, files in os.walk(real, onerror=lambda exc: problems.append(
                '%s: %s' % (exc.filename, exc.strerror))):
            depth = directory[len(real):].count(os.sep)
            if depth >= MAX_DEPTH:
                subdirs[:] = []
            subdirs.sort()
            if CONFIG in files:
                if len(found) >= limit:
                    skipped += 1
                    subdirs[:] = []
                    continue
                found.append(directory)
                subdirs[:] = []  # an adapter's own subfolders hold checkpoints, not more adapters
    return found, problems, skipped


def load(path):
    """An Adapter read from ``path``; AdapterProblem names the file and what is wrong."""
    config_path = os.path.join(path, CONFIG)
    try:
        raw = json.loads(hostio.read_text(config_path, limit=MAX_CONFIG_BYTES))
    except hostio.ReadProblem as problem:
        raise AdapterProblem('%s %s' % (config_path, problem.reason))
    except ValueError as exc:
        raise AdapterProblem('%s is not JSON (%s)' % (config_path, str(exc)[:80]))
    config, why = lora_scale.parse_config(raw)
    if config is None:
        raise AdapterProblem('%s: %s' % (config_path, why))
    weights = os.path.join(path, WEIGHTS)
    if not os.path.exists(weights):
        if os.path.exists(os.path.join(path, 'adapter_model.bin')):
            raise AdapterProblem('%s has only adapter_model.bin (a pickle); its modules are not read without PyTorch'
                                 % path)
        raise AdapterProblem('%s has no %s' % (path, WEIGHTS))
    try:
        header = safetensors.read_header(weights)
    except safetensors.SafetensorsProblem as exc:
        raise AdapterProblem(str(exc))
    modules = {}
    for name, tensor in header.tensors.items():
        module, part = lora_scale.module_name(name)
        if module is None:
            continue
        entry = modules.setdefault(module, {})
        entry[part] = name
        if part == 'A':
            if len(tensor.shape) != 2:
                raise AdapterProblem('%s: %s has shape %r, not a matrix' % (weights, name, tensor.shape))
            entry['rank'] = tensor.shape[0]
    incomplete = sorted(m for m, e in modules.items() if 'A' not in e or 'B' not in e)
    if incomplete:
        raise AdapterProblem('%s: %s has lora_A without lora_B or the other way round' % (weights, incomplete[0]))
    recorded = raw.get('peft_version')
    version = hostio.version_tuple(recorded) if isinstance(recorded, str) else None
    return Adapter(path, raw, config, header, modules, lora_scale.infer_peft_range(raw, version))


def judge(adapter, vllm_version, max_lora_rank=None):
    """(rows, refusals) for vLLM ``vllm_version``.

    One row per module: its rank, the scale vLLM serves, and per PEFT rule release the adapter
    can have been saved with (``adapter.candidates``) the trained scale and the factor
    served / trained. ``off`` is 'all' when the module is off under every candidate, 'some' when
    only under some (the trained scale depends on which PEFT saved the adapter), None otherwise.
    """
    refusals = lora_scale.vllm_refusals(adapter.raw_config, adapter.config, vllm_version, max_lora_rank)
    rows = []
    for module in sorted(adapter.modules):
        served = lora_scale.vllm_scale(adapter.config, module, vllm_version)
        readings = []
        for version in adapter.candidates:
            for rank, trained in sorted(adapter.trained(module, version)):
                readings.append({'peft': lora_scale.dotted(version), 'rank': rank, 'trained_scale': round(trained, 8),
                                 'factor': round(served / trained, 8) if trained else None})
        offs = [_off(r['factor']) for r in readings]
        row = {'module': module, 'tensor_rank': adapter.modules[module].get('rank'),
               'served_scale': round(served, 8),
               'off': 'all' if all(offs) else 'some' if any(offs) else None}
        first = readings[0]
        if all((r['rank'], r['trained_scale']) == (first['rank'], first['trained_scale']) for r in readings):
            row.update(rank=first['rank'], trained_scale=first['trained_scale'], factor=first['factor'])
        else:
            row['by_peft'] = readings
        rows.append(row)
    return rows, refusals


def _off(factor):
    return factor is None or abs(factor - 1) > TOLERANCE
