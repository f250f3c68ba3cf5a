# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A checkpoint directory fingerprinted the way vLLM's weight cache does it, and by its content.

``header_fingerprint`` is vLLM's ``hash_checkpoint`` (vllm/model_executor/model_loader/
weight_cache/protocol.py, 0.30.0 to 0.33.0): md5 (``safe_hash``) over, for each ``*.safetensors``
shard sorted by base name (shards not in ``model.safetensors.index.json`` left out when it
exists), the base name and the raw header (8-byte length + JSON). No weight bytes: two
checkpoints with the same layout get the same fingerprint. ``content`` hashes tensor bytes:
samples at the start, middle and end of each tensor by default, every byte when asked.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import safetensors

INDEX = 'model.safetensors.index.json'
SAMPLE_BYTES = 4096
MAX_INDEX_BYTES = 64 * 1024 * 1024


def _md5():
    try:
        return hashlib.md5(usedforsecurity=False)  # pylint: disable=unexpected-keyword-arg
    except (TypeError, ValueError):
        return hashlib.sha256()


def shards(model_dir):
    """The shard paths vLLM would hash, sorted by base name; [] when there are none."""
    files = glob.glob(os.path.join(model_dir, '*.safetensors'))
    index = os.path.join(model_dir, INDEX)
    if os.path.isfile(index):
        try:
            data = bounded_json.loads(hostio.read_text(index, limit=MAX_INDEX_BYTES), index, max_bytes=MAX_INDEX_BYTES)
        except hostio.ReadProblem as problem:
            raise safetensors.SafetensorsProblem('%s cannot be read: %s' % (index, problem.reason))
        except bounded_json.JsonInputError as exc:
            raise safetensors.SafetensorsProblem(str(exc))
        weight_map = data.get('weight_map') if isinstance(data, dict) else None
        if not isinstance(weight_map, dict):
            raise safetensors.SafetensorsProblem('%s has no weight_map' % index)
        listed = set(os.path.join(model_dir, name) for name in weight_map.values() if isinstance(name, str))
        missing = listed - set(files)
        if missing:
            raise safetensors.SafetensorsProblem('%s names shards that are missing: %s' % (index, sorted(missing)[:3]))
        files = [f for f in files if f in listed]
    return sorted(files, key=os.path.basename)


def header_fingerprint(model_dir):
    """(fingerprint, headers) as vLLM's hash_checkpoint; (None, []) when there is no local shard."""
    if not os.path.isdir(model_dir):
        return None, []
    files = shards(model_dir)
    if not files:
        return None, []
    digest = _md5()
    headers = []
    for path in files:
        header = safetensors.read_header(path)
        digest.update(os.path.basename(path).encode('utf-8'))
        digest.update(header.raw)
        headers.append(header)
    return digest.hexdigest(), headers


def tensor_digest(header, tensor, full):
    digest = hashlib.sha256()
    if full or tensor.nbytes <= 3 * SAMPLE_BYTES:
        offset = 0
        while offset < tensor.nbytes:
            chunk = safetensors.read_bytes(header, tensor, offset, safetensors.COPY_CHUNK)
            digest.update(chunk)
            offset += len(chunk)
    else:
        for offset in (0, (tensor.nbytes - SAMPLE_BYTES) // 2, tensor.nbytes - SAMPLE_BYTES):
            digest.update(safetensors.read_bytes(header, tensor, offset, SAMPLE_BYTES))
    return digest.hexdigest()


def content(headers, full=False, max_tensors=100000):
    """(fingerprint, {shard/tensor: digest}, tensors read) over the tensors' bytes."""
    digest = hashlib.sha256()
    per_tensor = {}
    count = 0
    for header in headers:
        for name in sorted(header.tensors):
            if count >= max_tensors:
                break
            value = tensor_digest(header, header.tensors[name], full)
            per_tensor['%s/%s' % (os.path.basename(header.path), name)] = value
            digest.update(name.encode('utf-8'))
            digest.update(value.encode('ascii'))
            count += 1
    return digest.hexdigest(), per_tensor, count
