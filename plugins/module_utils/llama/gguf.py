# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The speculative type a draft GGUF carries, read from its header as llama.cpp reads it.

common_speculative_types_from_gguf (common/speculative.cpp l.2351-2386, b11434): an architecture
"dflash" is draft-dspark when the tensor markov_w1.weight exists, else draft-dflash; any other
architecture is draft-mtp when blk.<block_count - 1>.nextn.eh_proj.weight exists, else nothing.
Only the header is read (key/value pairs and tensor names), within fixed bounds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import struct

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

MAX_HEADER_BYTES = 128 * 1024 * 1024
MAX_COUNT = 10 ** 7
MAX_KEY = 64 * 1024
# gguf_type sizes; 8 is a string, 9 an array
_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class GgufProblem(Exception):
    pass


class _Reader(object):
    def __init__(self, handle):
        self.handle = handle
        self.used = 0

    def take(self, size):
        self.used += size
        if self.used > MAX_HEADER_BYTES:
            raise GgufProblem('its header is larger than %d bytes' % MAX_HEADER_BYTES)
        data = self.handle.read(size)
        if len(data) != size:
            raise GgufProblem('it ends inside its header')
        return data

    def skip(self, size):
        self.used += size
        if self.used > MAX_HEADER_BYTES:
            raise GgufProblem('its header is larger than %d bytes' % MAX_HEADER_BYTES)
        self.handle.seek(size, os.SEEK_CUR)

    def u32(self):
        return struct.unpack('<I', self.take(4))[0]

    def u64(self):
        return struct.unpack('<Q', self.take(8))[0]

    def count(self, what):
        value = self.u64()
        if value > MAX_COUNT:
            raise GgufProblem('%s count %d is beyond %d' % (what, value, MAX_COUNT))
        return value

    def string(self, keep=True):
        size = self.u64()
        if not keep:
            self.skip(size)
            return None
        if size > MAX_KEY:
            raise GgufProblem('a name of %d bytes' % size)
        return self.take(size).decode('utf-8', 'replace')

    def skip_value(self, kind):
        if kind == 8:
            self.string(keep=False)
        elif kind == 9:
            inner, length = self.u32(), self.count('array')
            if inner in _SIZES:
                self.skip(_SIZES[inner] * length)
            else:
                for _i in range(length):
                    self.skip_value(inner)
        elif kind in _SIZES:
            self.skip(_SIZES[kind])
        else:
            raise GgufProblem('unknown value type %d' % kind)


def read_header(path):
    """({key: value} of the string and u32 keys, [tensor names]) of a GGUF file; GgufProblem or
    hostio.ReadProblem when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_CLOEXEC', 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise hostio.ReadProblem(path, 'cannot be opened: %s' % (exc.strerror or exc), 'unreadable')
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise hostio.ReadProblem(path, 'is not a regular file', 'special')
    with os.fdopen(fd, 'rb') as handle:
        reader = _Reader(handle)
        if reader.take(4) != b'GGUF':
            raise GgufProblem('it is not a GGUF file (no GGUF magic)')
        version = reader.u32()
        if version not in (2, 3):
            raise GgufProblem('GGUF version %d is not read here' % version)
        tensors, pairs = reader.count('tensor'), reader.count('key')
        values = {}
        for _i in range(pairs):
            key = reader.string()
            kind = reader.u32()
            if kind == 8:
                values[key] = reader.string()
            elif kind == 4:
                values[key] = reader.u32()
            else:
                reader.skip_value(kind)
        names = []
        for _i in range(tensors):
            names.append(reader.string())
            dims = reader.u32()
            if dims > 8:
                raise GgufProblem('a tensor with %d dimensions' % dims)
            reader.skip(8 * dims + 4 + 8)
        return values, names


def draft_kind(path):
    """(type or None, problem or None): the speculative type llama.cpp infers from a draft GGUF."""
    try:
        values, names = read_header(path)
    except (GgufProblem, hostio.ReadProblem) as exc:
        return None, str(exc)
    arch = values.get('general.architecture')
    if not isinstance(arch, str):
        return None, None
    names = set(names)
    if arch == 'dflash':
        return ('draft-dspark' if 'markov_w1.weight' in names else 'draft-dflash'), None
    blocks = values.get('%s.block_count' % arch)
    if not isinstance(blocks, int) or blocks < 1:
        return None, '%s.block_count is not a u32 (llama.cpp would stop on it)' % arch
    return ('draft-mtp' if 'blk.%d.nextn.eh_proj.weight' % (blocks - 1) in names else None), None
