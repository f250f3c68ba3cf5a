# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""safetensors files read and written with the standard library only, with bounded reads.

A file is an 8-byte little-endian header length, a JSON header (tensor name -> dtype, shape,
data_offsets relative to the end of the header; ``__metadata__`` -> str map), then the data.
Everything the header claims is checked before it is used, with the rules safetensors itself
applies when it loads a file (safetensors/src/tensor.rs @ v0.8.0-rc.0, ``read_metadata`` l.382-417
and ``Metadata::validate`` l.619-656; the same since v0.4.0): the header at most 100,000,000 bytes
and inside the file, UTF-8 JSON, a known dtype, ``__metadata__`` a map of strings, the tensors
sorted by their offsets covering the data exactly (each starts where the one before it ends, no
overlap, no gap, nothing after the last one), and each tensor's size its shape times its dtype.
A file safetensors refuses to load is a SafetensorsProblem naming the file, never a traceback, a
huge read or a hang: files are opened without blocking and must be regular files (a named pipe
where a shard should be would block an open() forever).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import array
import json
import math
import os
import stat
import struct
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# safetensors refuses headers above 100 MB (safetensors/src/tensor.rs MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100 * 1000 * 1000
# A header is {name: {dtype, shape: [...], data_offsets: [...]}, __metadata__: {str: str}}: three levels.
# Anything deeper is refused by safetensors' typed parse anyway; the bound keeps json.loads from recursing.
MAX_HEADER_DEPTH = 8
# Bits per element of every dtype safetensors knows (tensor.rs Dtype::bitsize, l.859-884); any other
# dtype is an "unknown variant" it refuses.
ITEM_BITS = {'F4': 4, 'F6_E3M2': 6, 'F6_E2M3': 6, 'BOOL': 8, 'U8': 8, 'I8': 8, 'F8_E5M2': 8, 'F8_E4M3': 8,
             'F8_E8M0': 8, 'F8_E4M3FNUZ': 8, 'F8_E5M2FNUZ': 8, 'I16': 16, 'U16': 16, 'I32': 32, 'U32': 32, 'I64': 64,
             'U64': 64, 'F16': 16, 'BF16': 16, 'F32': 32, 'F64': 64, 'C64': 64}
# safetensors computes sizes in usize (checked_mul): a product beyond 64 bits is ValidationOverflow.
USIZE_LIMIT = 2 ** 64
SCALABLE = ('F32', 'F16', 'BF16')
COPY_CHUNK = 1 << 20


class SafetensorsProblem(HostInputError):
    pass


def open_regular(path):
    """A binary file object for ``path``, opened without blocking and only when it is a regular file.
    SafetensorsProblem names the file and what it is otherwise (a named pipe, a directory...)."""
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0)
    try:
        fd = os.open(path, flags)
    except (IOError, OSError) as exc:
        raise SafetensorsProblem('%s: %s' % (path, exc.strerror or exc))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SafetensorsProblem('%s is %s, not a regular file; not read' % (path, hostio.file_kind(mode)))
        return os.fdopen(fd, 'rb')
    except BaseException:
        os.close(fd)
        raise


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
        with open_regular(path) as handle:
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
    if len(body) != length:
        raise SafetensorsProblem('%s: the header is cut short (%d of %d bytes)' % (path, len(body), length))
    try:
        text = body.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise SafetensorsProblem('%s: the header is not UTF-8 (byte %d)' % (path, exc.start))
    try:
        parsed = bounded_json.loads(text, 'the header', max_depth=MAX_HEADER_DEPTH, max_bytes=MAX_HEADER_BYTES)
    except bounded_json.JsonInputError as exc:
        raise SafetensorsProblem('%s: %s' % (path, exc))
    if not isinstance(parsed, dict):
        raise SafetensorsProblem('%s: the header is not a JSON object' % path)
    data_start = 8 + length
    data_size = size - data_start
    metadata = parsed.pop('__metadata__', None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsProblem('%s: __metadata__ is not a map of strings' % path)
    tensors = {}
    for name, entry in parsed.items():
        tensors[name] = _tensor(path, name, entry, data_size)
    _check_layout(path, tensors, data_size)
    return Header(path, prefix + body, tensors, metadata, data_start, size)


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < USIZE_LIMIT


def _tensor(path, name, entry, data_size):
    if not isinstance(entry, dict):
        raise SafetensorsProblem('%s: tensor %s is not an object' % (path, name))
    dtype, shape, offsets = entry.get('dtype'), entry.get('shape'), entry.get('data_offsets')
    if not isinstance(dtype, str) or dtype not in ITEM_BITS:
        raise SafetensorsProblem('%s: tensor %s has dtype %s, which safetensors does not know'
                                 % (path, name, shown(dtype)))
    if not isinstance(shape, list) or not all(_whole(d) for d in shape):
        raise SafetensorsProblem('%s: tensor %s has shape %s, not a list of whole numbers' % (path, name, shown(shape)))
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_whole(o) for o in offsets)
            and offsets[0] <= offsets[1] <= data_size):
        raise SafetensorsProblem('%s: tensor %s points outside the file (data_offsets %s, %d data bytes)'
                                 % (path, name, shown(offsets), data_size))
    bits = ITEM_BITS[dtype]
    for dim in shape:
        bits *= dim
        if bits >= USIZE_LIMIT:
            raise SafetensorsProblem('%s: tensor %s has shape %s, too large for safetensors to size'
                                     % (path, name, shown(shape)))
    if bits % 8:
        raise SafetensorsProblem('%s: tensor %s is %s %s, which does not end on a byte boundary'
                                 % (path, name, dtype, shown(shape)))
    if bits // 8 != offsets[1] - offsets[0]:
        raise SafetensorsProblem('%s: tensor %s is %s %s (%d bytes) but its data is %d bytes'
                                 % (path, name, dtype, shown(shape), bits // 8, offsets[1] - offsets[0]))
    return Tensor(name, dtype, shape, offsets[0], offsets[1])


def _check_layout(path, tensors, data_size):
    """safetensors' Metadata::validate: sorted by (start, end), each tensor starts where the one before
    ends (so none overlaps another and no bytes lie between them), and the last one ends the file."""
    end = 0
    for tensor in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if tensor.begin != end:
            raise SafetensorsProblem('%s: tensor %s starts at byte %d of the data, not at %d where the tensor before it '
                                     'ends (%s); safetensors refuses the file' % (
                                         path, tensor.name, tensor.begin, end,
                                         'they overlap' if tensor.begin < end else 'a gap'))
        end = tensor.end
    if end != data_size:
        raise SafetensorsProblem('%s: the tensors cover %d of the %d data bytes; safetensors refuses a file they do '
                                 'not cover exactly' % (path, end, data_size))


def shown(value):
    """A value for a message, at most 60 characters (a header may hold a million-element shape)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def read_bytes(header, tensor, offset=0, length=None):
    """Up to ``length`` bytes of a tensor's data from ``offset`` (bounded by the tensor)."""
    length = tensor.nbytes - offset if length is None else min(length, tensor.nbytes - offset)
    with open_regular(header.path) as handle:
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
