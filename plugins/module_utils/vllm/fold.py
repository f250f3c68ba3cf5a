# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fold each LoRA module's own scale into its lora_B, so every vLLM and PEFT version serves it right.

Every module ends up with the base scale S0 = lora_alpha / r (or / sqrt(r) with rsLoRA): its
lora_B is multiplied by trained_scale / S0. The ranks the tensors need stay in rank_pattern
(clearing it, as the write-up suggests, makes PEFT refuse the adapter: the tensor ranks no longer
match r), keyed by each module's full name, and alpha_pattern gets the alpha that gives S0 at
that rank. The plan is checked under every PEFT pattern rule and under vLLM before and after
0.32.0 before anything is written.

What it refuses, and what a failure leaves (the module's message says which):
- a destination that is the source, inside it, or holds it (through links and bind mounts too:
  directories are compared by device and inode), so the source is only ever read;
- lora_alpha 0 (every module's base scale 0: no factor on lora_B gives a module its trained scale);
- a source file safetensors itself refuses (safetensors.read_header), or that changed between the
  plan and the write;
- a failure while writing (a read-only or full filesystem) removes the working directory; a failure
  while moving it into place puts the old destination back, or says where it is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import math
import os
import shutil
import tempfile

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, treewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import safetensors

PROVENANCE_KEY = 'homelab.postmortem.folded_from'
TOLERANCE = 1e-9
# One release per PEFT pattern rule (0.6-0.13 read as 0.8, the first with rsLoRA), and vLLM with one
# scale (before 0.32.0) and with the patterns: the folded adapter must read the same under each.
CHECKED_PEFT_RULES = ((0, 8, 0), (0, 14, 0), (0, 15, 0))
CHECKED_VLLM = ((0, 31, 0), (0, 32, 0))


class FoldProblem(vllm_adapters.AdapterProblem):
    pass


def _directory_ids(path):
    """(st_dev, st_ino) of ``path`` and of each directory above it, from its real path; missing
    parts (a destination not created yet) are skipped."""
    ids = []
    current = os.path.realpath(path)
    while True:
        try:
            info = os.stat(current)
            ids.append((info.st_dev, info.st_ino))
        except OSError:
            pass
        parent = os.path.dirname(current)
        if parent == current:
            return ids
        current = parent


def check_paths(src, dest):
    """FoldProblem when writing ``dest`` could touch ``src``: the same directory, one inside the other
    (also through a link or a bind mount, which give the same device and inode)."""
    try:
        source = os.stat(src)
    except OSError as exc:
        raise FoldProblem('%s cannot be read: %s' % (src, exc.strerror or exc))
    source_id = (source.st_dev, source.st_ino)
    above_dest = _directory_ids(dest)
    if above_dest and above_dest[0] == source_id and os.path.lexists(dest):
        raise FoldProblem('dest %s is src %s: the original adapter is never modified' % (dest, src))
    if source_id in above_dest:
        raise FoldProblem('dest %s is inside src %s: the fold would write into the original adapter' % (dest, src))
    try:
        target = os.stat(dest)
    except OSError:
        return
    if (target.st_dev, target.st_ino) in _directory_ids(src):
        raise FoldProblem('src %s is inside dest %s: replacing dest would move the original adapter away'
                          % (src, dest))


class Plan(object):
    def __init__(self, adapter, config, factors, base_scale, fingerprint):
        self.adapter = adapter
        self.config = config            # the new adapter_config.json (dict)
        self.factors = factors          # module -> factor for lora_B
        self.base_scale = base_scale
        self.fingerprint = fingerprint  # of the source: config + weights header


def plan(adapter, peft_version=None):
    """The folded config and per-module factors; FoldProblem when the trained scales cannot be known or
    no pattern set reads the same everywhere.

    The trained scale of each module is the one every PEFT release that can have saved the adapter
    gives it (``adapter.candidates``: ``peft_version`` in the config, else the releases its fields
    allow); ``peft_version`` (a version tuple) says which PEFT trained it when they disagree.
    """
    config = adapter.config
    base = adapter.base_scale()
    if not base:
        raise FoldProblem('%s: lora_alpha is 0, so every module\'s base scale is 0 and no factor on lora_B can give a '
                          'module its trained scale; nothing to fold' % adapter.path)
    versions = [peft_version] if peft_version else adapter.candidates
    factors, ranks = {}, {}
    for module in sorted(adapter.modules):
        readings = dict((lora_scale.dotted(v), adapter.trained(module, v)) for v in versions)
        distinct = set(r for found in readings.values() for r in found)
        if len(distinct) != 1:
            raise FoldProblem('%s: the trained scale of module %s depends on the PEFT that saved the adapter (%s; '
                              'PEFT %s possible: %s); say which with peft_version' % (
                                  adapter.path, module, ', '.join('PEFT %s: %s' % (v, ' or '.join(
                                      'rank %d scale %s' % (r, round(s, 8)) for r, s in sorted(found)))
                                      for v, found in sorted(readings.items())),
                                  adapter.peft_range.text(), adapter.peft_range.why))
        rank, trained = distinct.pop()
        tensor_rank = adapter.modules[module].get('rank')
        if not vllm_adapters.rank_fits(adapter, module, rank):
            raise FoldProblem('%s: module %s has rank %d in its tensors but %d by the PEFT %s rule; the trained '
                              'scale cannot be known' % (adapter.path, module, tensor_rank, rank,
                                                         ' / '.join(sorted(readings))))
        factors[module] = trained / base
        ranks[module] = rank
    for module, factor in factors.items():
        dtype = adapter.header.tensors[adapter.modules[module]['B']].dtype
        if abs(factor - 1) > TOLERANCE and dtype not in safetensors.SCALABLE:
            raise FoldProblem('%s: %s is %s, which cannot be scaled (F32, F16 and BF16 can)'
                              % (adapter.path, adapter.modules[module]['B'], dtype))
    new = copy.deepcopy(adapter.raw_config)
    keyed = {}
    for module, rank in ranks.items():
        if rank != config.r:
            # PEFT matches a wrapped parameter as <module>.<parameter>, vLLM 0.32+ by its own mapping.
            for name in set(lora_scale.peft_match_names(config, module) + [lora_scale.vllm_pattern_name(module)]):
                keyed[name] = rank
    rank_pattern, alpha_pattern = {}, {}
    for name in sorted(keyed, key=lambda m: (-len(m), m)):
        rank_pattern[name] = keyed[name]
        alpha_pattern[name] = base * (math.sqrt(keyed[name]) if config.use_rslora else keyed[name])
    new['rank_pattern'] = rank_pattern
    new['alpha_pattern'] = alpha_pattern
    _check(adapter, new, ranks, base)
    return Plan(adapter, new, factors, base, source_fingerprint(adapter))


def _check(adapter, new, ranks, base):
    parsed, why = lora_scale.parse_config(new)
    if parsed is None:
        raise FoldProblem('%s: the folded config would be invalid: %s' % (adapter.path, why))
    for module, rank in ranks.items():
        readings = [('PEFT %s' % lora_scale.dotted(v),) + reading
                    for v in CHECKED_PEFT_RULES for reading in sorted(lora_scale.peft_module_scales(parsed, module, v))]
        for version in CHECKED_VLLM:
            readings.append(('vLLM %s' % lora_scale.dotted(version), rank, lora_scale.vllm_scale(parsed, module, version)))
        for label, got_rank, got_scale in readings:
            if got_rank != rank or abs(got_scale - base) > 1e-9 * max(1.0, abs(base)):
                raise FoldProblem('%s: %s would read module %s of the folded adapter as rank %s scale %s instead of '
                                  'rank %d scale %s (module names overlap, so a key for one matches another); '
                                  'fold by hand' % (adapter.path, label, module, got_rank, got_scale, rank, base))


def source_fingerprint(adapter):
    digest = hashlib.sha256()
    digest.update(json.dumps(adapter.raw_config, sort_keys=True).encode('utf-8'))
    digest.update(adapter.header.raw)
    return digest.hexdigest()


def up_to_date(dest, fingerprint):
    """Whether ``dest`` already holds the fold of a source with this fingerprint."""
    try:
        header = safetensors.read_header(os.path.join(dest, vllm_adapters.WEIGHTS))
    except safetensors.SafetensorsProblem:
        return False
    return header.metadata.get(PROVENANCE_KEY, '').endswith(fingerprint)


def _new_file(path):
    """A file created new (never through a link or over something already there), for writing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0)
    return os.fdopen(os.open(path, flags, 0o644), 'wb')


def write(plan_, dest):
    """Write the folded adapter next to ``dest`` and move it into place; returns the backup path or None.

    FoldProblem says what failed and what is left: nothing (the working directory is removed and
    ``dest`` is unchanged), or, once the new directory is in place, where the old one's backup is."""
    parent = os.path.dirname(os.path.abspath(dest)) or '.'
    try:
        work = tempfile.mkdtemp(prefix='.%s.fold-' % os.path.basename(dest), dir=parent)
    except OSError as exc:
        raise FoldProblem('could not create a working directory in %s: %s; nothing was written, %s is unchanged'
                          % (parent, exc.strerror or exc, dest))
    try:
        _fill(plan_, work)
    except (IOError, OSError, safetensors.SafetensorsProblem) as exc:
        shutil.rmtree(work, ignore_errors=True)
        reason = (getattr(exc, 'strerror', None) or exc)
        raise FoldProblem('could not write the folded adapter in %s: %s; it was removed, %s is unchanged'
                          % (work, reason, dest))
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    # The backup (hard links, backup_path names) is durable before dest is touched, and dest is never
    # missing: the directories swap names in one step (treewrite.replace_directory).
    try:
        return treewrite.replace_directory(work, dest)
    except treewrite.ReplaceFailed as exc:
        raise FoldProblem(str(exc))


def _fill(plan_, work):
    """The folded adapter's files in the new directory ``work``."""
    adapter = plan_.adapter
    # mkdtemp makes the directory 0700; the server that loads the adapter may run as another user,
    # so it gets the source directory's mode (0755 when that cannot be read).
    try:
        os.chmod(work, os.stat(adapter.path).st_mode & 0o7777 or 0o755)
    except OSError:
        os.chmod(work, 0o755)
    for name in sorted(os.listdir(adapter.path)):
        source = os.path.join(adapter.path, name)
        if name in (vllm_adapters.CONFIG, vllm_adapters.WEIGHTS) or not os.path.isfile(source):
            continue
        filewrite.copy_file(source, os.path.join(work, name))
    with _new_file(os.path.join(work, vllm_adapters.CONFIG)) as handle:
        handle.write((json.dumps(plan_.config, indent=2, sort_keys=True) + '\n').encode('utf-8'))
        handle.flush()
        os.fsync(handle.fileno())
    _write_weights(plan_, os.path.join(work, vllm_adapters.WEIGHTS))
    for name in (vllm_adapters.CONFIG, vllm_adapters.WEIGHTS):
        os.chmod(os.path.join(work, name), 0o644)


def _write_weights(plan_, target):
    adapter = plan_.adapter
    header = adapter.header
    scaled = dict((adapter.modules[m]['B'], f) for m, f in plan_.factors.items() if abs(f - 1) > TOLERANCE)
    order = sorted(header.tensors.values(), key=lambda t: t.begin)
    metadata = dict(header.metadata)
    metadata[PROVENANCE_KEY] = '%s sha256:%s' % (adapter.path, plan_.fingerprint)
    with _new_file(target) as out, safetensors.open_regular(header.path) as source:
        # The plan was made from this header: a file changed since then is not folded half old, half new.
        if source.read(len(header.raw)) != header.raw or os.fstat(source.fileno()).st_size != header.size:
            raise safetensors.SafetensorsProblem('%s changed after it was read; fold again' % header.path)
        out.write(safetensors.header_bytes([(t.name, t.dtype, t.shape, t.nbytes) for t in order], metadata))
        for tensor in order:
            source.seek(header.data_start + tensor.begin)
            if tensor.name in scaled:
                data = source.read(tensor.nbytes)
                if len(data) != tensor.nbytes:
                    raise safetensors.SafetensorsProblem('%s: tensor %s is cut short' % (header.path, tensor.name))
                out.write(safetensors.scale(data, tensor.dtype, scaled[tensor.name]))
                continue
            remaining = tensor.nbytes
            while remaining:
                chunk = source.read(min(remaining, safetensors.COPY_CHUNK))
                if not chunk:
                    raise safetensors.SafetensorsProblem('%s: tensor %s is cut short' % (header.path, tensor.name))
                out.write(chunk)
                remaining -= len(chunk)
        out.flush()
        os.fsync(out.fileno())
