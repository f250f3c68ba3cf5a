# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PEFT LoRA adapters on disk: found, read and judged module by module. Shared by the
vllm_lora_patterns detection and the vllm_lora_fold module.

Every path an adapter tree holds is resolved the way the audited system resolves it (``ctx.path``:
in an image, a link to ``/srv/...`` is the image's /srv, and a way out of the image is a problem, not
a read of the auditing machine's file); directories reached through links are walked once each.
adapter_config.json goes through bounded_json, the weights' header through safetensors.read_header.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import safetensors

CONFIG = 'adapter_config.json'
WEIGHTS = 'adapter_model.safetensors'
MAX_CONFIG_BYTES = 4 * 1024 * 1024
# PEFT's deepest field (eva_config, corda_config, arrow_config ...) nests 3 levels below the top.
MAX_CONFIG_NESTING = 16
MAX_DEPTH = 4
# Directory entries one search looks at, at most (a root that holds a whole filesystem ends, and says so).
MAX_ENTRIES = 200000
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
    """(adapter directories, problems, skipped) under ``roots`` (paths of the audited system, as are the
    directories returned); at most ``limit`` adapters. Links are followed inside the audited system
    (an image's own paths); a directory reached twice (a link loop) is walked once."""
    walk = _Walk(ctx, limit)
    for root in roots:
        walk.directory(root, 0, top=True)
    if walk.entries > MAX_ENTRIES:
        walk.problems.append('stopped after %d directory entries under %s' % (MAX_ENTRIES, ', '.join(roots)))
    return walk.found, walk.problems, walk.skipped


class _Walk(object):
    def __init__(self, ctx, limit):
        self.ctx = ctx
        self.limit = limit
        self.found, self.problems, self.skipped = [], [], 0
        self.seen = set()
        self.entries = 0

    def directory(self, path, depth, top=False):
        try:
            real = self.ctx.path(path)
            info = os.stat(real)
        except hostio.ReadProblem as problem:
            # A link out of the image or a loop is named wherever it is; a plain file is no directory to walk.
            if top or problem.kind in ('escape', 'loop'):
                self.problems.append('%s: %s' % (path, problem.reason))
            return
        except OSError as exc:
            if top:
                self.problems.append('%s is not a directory' % path if exc.errno == errno.ENOENT
                                     else '%s: %s' % (path, exc.strerror or exc))
            return
        if not os.path.isdir(real):
            if top:
                self.problems.append('%s is not a directory' % path)
            return
        if (info.st_dev, info.st_ino) in self.seen:
            return
        self.seen.add((info.st_dev, info.st_ino))
        try:
            names = sorted(os.listdir(real))
        except OSError as exc:
            self.problems.append('%s: %s' % (path, exc.strerror or exc))
            return
        self.entries += len(names)
        if CONFIG in names:
            if len(self.found) >= self.limit:
                self.skipped += 1
            else:
                self.found.append(path)
            return  # an adapter's own subfolders hold checkpoints, not more adapters
        if depth >= MAX_DEPTH:
            return
        for name in names:
            if self.entries > MAX_ENTRIES:
                return
            self.directory(os.path.join(path, name), depth + 1)


def load(path, resolve=None):
    """An Adapter read from ``path``; AdapterProblem names the file and what is wrong.

    ``resolve``: a path of the audited system -> the path to open (``ctx.path``, for an image); the
    files are opened as the running host's own files when None (the fold module)."""
    resolve = resolve or (lambda p: p)
    config_path = os.path.join(path, CONFIG)
    try:
        text = hostio.read_text(resolve(config_path), limit=MAX_CONFIG_BYTES)
        raw = bounded_json.loads(text, config_path, max_depth=MAX_CONFIG_NESTING, max_bytes=MAX_CONFIG_BYTES)
    except hostio.ReadProblem as problem:
        raise AdapterProblem('%s %s' % (config_path, problem.reason))
    except bounded_json.JsonInputError as exc:
        raise AdapterProblem(str(exc))
    config, why = lora_scale.parse_config(raw)
    if config is None:
        raise AdapterProblem('%s: %s' % (config_path, why))
    try:
        weights = resolve(os.path.join(path, WEIGHTS))
        exists = os.path.lexists(weights)
        pickle = not exists and os.path.lexists(resolve(os.path.join(path, 'adapter_model.bin')))
    except hostio.ReadProblem as problem:
        raise AdapterProblem('%s: %s' % (problem.path, problem.reason))
    if not exists:
        if pickle:
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
                raise AdapterProblem('%s: %s has shape %s, not a matrix'
                                     % (weights, safetensors.shown(name), safetensors.shown(tensor.shape)))
            entry['rank'] = tensor.shape[0]
    incomplete = sorted(m for m, e in modules.items() if 'A' not in e or 'B' not in e)
    if incomplete:
        raise AdapterProblem('%s: %s has lora_A without lora_B or the other way round'
                             % (weights, safetensors.shown(incomplete[0])))
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
                                 'factor': _factor(served, trained)})
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


def _factor(served, trained):
    """served / trained; 1 when both are 0 (lora_alpha 0: trained and served as nothing), None (off)
    when only the trained scale is 0."""
    if trained:
        return round(served / trained, 8)
    return 1.0 if served == 0 else None


def _off(factor):
    return factor is None or abs(factor - 1) > TOLERANCE
