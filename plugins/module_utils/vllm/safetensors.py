# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""safetensors files read and written with the standard library only, with bounded reads.

A file is an 8-byte little-endian header length, a JSON header (tensor name -> dtype, shape,
data_offsets relative to the end of the header; ``__metadata__`` -> str map), then the data.
Everything the header claims is checked against the file before it is used, so a truncated
or hostile file is a SafetensorsProblem naming the file, never a traceback or a huge read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import array
import json
import math
import os
import struct
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# safetensors refuses headers above 100 MB (safetensors/src/tensor.rs MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100 * 1000 * 1000
ITEM_SIZES = {'BOOL': 1, 'U8': 1, 'I8': 1, 'F8_E4M3': 1, 'F8_E5M2': 1, 'I16': 2, 'U16': 2, 'F16': 2, 'BF16': 2,
              'I32': 4, 'U32': 4, 'F32': 4, 'I64': 8, 'U64': 8, 'F64': 8}
SCALABLE = ('F32', 'F16', 'BF16')
COPY_CHUNK = 1 << 20


class SafetensorsProblem(HostInputError):
    pass


class Tensor(object):
    def __init__(self, name, dtype, shape, begin, end):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.begin = begin
        self.end = end

    @property
    def nbytes(self):
        return self.end - self.begin


class Header(object):
    """The parsed header of one file: ``raw`` is the 8 length bytes plus the JSON, as vLLM hashes it."""

    def __init__(self, path, raw, tensors, metadata, data_start, size):
        self.path = path
        self.raw = raw
        self.tensors = tensors          # name -> Tensor, in header order
        self.metadata = metadata
        self.data_start = data_start
        self.size = size


def read_header(path):
    """Parse and check the header of ``path``; SafetensorsProblem says what is wrong."""
    try:
        with open(path, 'rb') as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise SafetensorsProblem('%s: %d bytes, shorter than the 8-byte header length' % (path, len(prefix)))
            (length,) = struct.unpack('<Q', prefix)
            if length > MAX_HEADER_BYTES or length > size - 8:
                raise SafetensorsProblem('%s: header length %d is larger than %s' % (
                    path, length, 'the file' if length > size - 8 else 'safetensors allows'))
            body = handle.read(length)
    except (IOError, OSError) as exc:
        raise SafetensorsProblem('%s: %s' % (path, exc.strerror or exc))
    try:
        parsed = json.loads(body.decode('utf-8'))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SafetensorsProblem('%s: the header is not JSON (%s)' % (path, str(exc)[:80]))
    if not isinstance(parsed, dict):
        raise SafetensorsProblem('%s: the header is not a JSON object' % path)
    data_start = 8 + length
    data_size = size - data_start
    metadata = parsed.pop('__metadata__', None) or {}
    if not isinstance(metadata, dict):
        raise SafetensorsProblem('%s: __metadata__ is not an object' % path)
    tensors = {}
    for name, entry in parsed.items():
        tensors[name] = _tensor(path, name, entry, data_size)
    return Header(path, prefix + body, tensors, metadata, data_start, size)


def _tensor(path, name, entry, data_size):
    if not isinstance(entry, dict):
        raise SafetensorsProblem('%s: tensor %s is not an object' % (path, name))
    dtype, shape, offsets = entry.get('dtype'), entry.get('shape'), entry.get('data_offsets')
    if not isinstance(dtype, str) or not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise SafetensorsProblem('%s: tensor %s has no valid dtype and shape' % (path, name))
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_size):
        raise SafetensorsProblem('%s: tensor %s points outside the file (data_offsets %r, %d data bytes)'
                                 % (path, name, offsets, data_size))
    count = 1
    for dim in shape:
        count *= dim
    if dtype in ITEM_SIZES and count * ITEM_SIZES[dtype] != offsets[1] - offsets[0]:
        raise SafetensorsProblem('%s: tensor %s is %s %r (%d bytes) but its data is %d bytes'
                                 % (path, name, dtype, shape, count * ITEM_SIZES[dtype], offsets[1] - offsets[0]))
    return Tensor(name, dtype, shape, offsets[0], offsets[1])


def read_bytes(header, tensor, offset=0, length=None):
    """Up to ``length`` bytes of a tensor's data from ``offset`` (bounded by the tensor)."""
    length = tensor.nbytes - offset if length is None else min(length, tensor.nbytes - offset)
    with open(header.path, 'rb') as handle:
        handle.seek(header.data_start + tensor.begin + offset)
        data = handle.read(max(0, length))
    if len(data) != max(0, length):
        raise SafetensorsProblem('%s: tensor %s is cut short' % (header.path, tensor.name))
    return data


def _swap(values):
    if sys.byteorder == 'big':
        values.byteswap()
    return values


def scale(data, dtype, factor):
    """The little-endian bytes of a F32/F16/BF16 tensor multiplied by ``factor`` (rounded to nearest even)."""
    if dtype == 'F32':
        values = _swap(array.array('f', data))
        return _swap(array.array('f', (v * factor for v in values))).tobytes()
    if dtype == 'F16':
        count = len(data) // 2
        values = struct.unpack('<%de' % count, data)
        return struct.pack('<%de' % count, *(_f16(v * factor) for v in values))
    if dtype == 'BF16':
        halves = _swap(array.array('H', data))
        out = array.array('H', (_to_bf16(_from_bf16(h) * factor) for h in halves))
        return _swap(out).tobytes()
    raise SafetensorsProblem('tensors of dtype %s cannot be scaled' % dtype)


def _f16(value):
    # struct refuses values beyond float16's range; they become infinities, as a cast would.
    if math.isnan(value) or abs(value) < 65520.0:
        return value
    return math.copysign(float('inf'), value)


def _from_bf16(half):
    return struct.unpack('<f', struct.pack('<I', half << 16))[0]


def _to_bf16(value):
    (bits,) = struct.unpack('<I', struct.pack('<f', value))
    if (bits & 0x7f800000) == 0x7f800000 and bits & 0x007fffff:
        return (bits >> 16) | 0x40  # keep NaN a NaN
    rounding = 0x7fff + ((bits >> 16) & 1)
    return ((bits + rounding) >> 16) & 0xffff


def header_bytes(tensors, metadata):
    """The 8-byte length and JSON header for ``tensors`` [(name, dtype, shape, nbytes)] in that order."""
    body, offset = {}, 0
    if metadata:
        body['__metadata__'] = metadata
    for name, dtype, shape, nbytes in tensors:
        body[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(body, separators=(',', ':')).encode('utf-8')
    text += b' ' * (-len(text) % 8)  # safetensors pads the header to 8 bytes
    return struct.pack('<Q', len(text)) + text
