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
# The rule of the newest PEFT, for adapters that do not record the PEFT that saved them.
CURRENT_PEFT = (0, 21, 2)
TOLERANCE = 1e-6


class AdapterProblem(HostInputError):
    pass


class Adapter(object):
    def __init__(self, path, raw_config, config, header, modules, peft_version, peft_version_recorded):
        self.path = path
        self.raw_config = raw_config
        self.config = config
        self.header = header
        self.modules = modules                  # module -> {'rank', 'A': tensor name, 'B': tensor name}
        self.peft_version = peft_version
        self.peft_version_recorded = peft_version_recorded

    def base_scale(self):
        """The one scale every module has when no pattern changes it (PEFT >= 0.8 rsLoRA form)."""
        return lora_scale.peft_scale(lora_scale.AdapterConfig(self.config.r, self.config.alpha, self.config.use_rslora,
                                                              {}, {}), '', CURRENT_PEFT)[1]


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
    return Adapter(path, raw, config, header, modules, version or CURRENT_PEFT, version is not None)


def judge(adapter, vllm_version):
    """Per module: rank, trained scale (the saving PEFT's rule), served scale (``vllm_version``), factor."""
    rows, refused = [], None
    for module in sorted(adapter.modules):
        rank, trained = lora_scale.peft_scale(adapter.config, module, adapter.peft_version)
        served, why = lora_scale.vllm_scale(adapter.config, module, vllm_version)
        if served is None:
            refused = why
            continue
        rows.append({'module': module, 'rank': rank, 'tensor_rank': adapter.modules[module].get('rank'),
                     'trained_scale': round(trained, 8), 'served_scale': round(served, 8),
                     'factor': round(served / trained, 8) if trained else None})
    return rows, refused


def off(row):
    return row['factor'] is None or abs(row['factor'] - 1) > TOLERANCE
