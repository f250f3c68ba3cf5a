# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Raspberry Pi config.txt reader: conditional sections, include files, overlays.

Follows the firmware's documented rules (config.txt "Conditional filters"):
filters of the same type replace each other, different types combine, [all]
resets everything and [none] disables what follows until [all]. Lines inside
an included file also carry the conditions in force at the include line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

# Which model filters each board sees. Boards that see several filters are the
# ones the documentation lists with "also sees ... contents".
BOARD_FILTERS = {
    'pi1': frozenset(['pi1']),
    'pi2': frozenset(['pi2']),
    'pi3': frozenset(['pi3']),
    'pi3+': frozenset(['pi3', 'pi3+']),
    'cm3': frozenset(['pi3']),
    'pi4': frozenset(['pi4']),
    'pi400': frozenset(['pi4', 'pi400']),
    'cm4': frozenset(['pi4', 'cm4']),
    'cm4s': frozenset(['pi4', 'cm4s']),
    'pi0': frozenset(['pi0']),
    'pi0w': frozenset(['pi0', 'pi0w']),
    'pi02': frozenset(['pi0', 'pi0w', 'pi02']),
    'pi5': frozenset(['pi5']),
    'pi500': frozenset(['pi5', 'pi500']),
    'cm5': frozenset(['pi5', 'cm5']),
}
MODEL_FILTERS = frozenset(f for filters in BOARD_FILTERS.values() for f in filters)

# Device-tree model strings, most specific first.
_BOARD_PATTERNS = (
    (r'Compute Module 4S', 'cm4s'),
    (r'Compute Module 4', 'cm4'),
    (r'Compute Module 5', 'cm5'),
    (r'Compute Module 3', 'cm3'),
    (r'Compute Module', 'pi1'),
    (r'Raspberry Pi 400', 'pi400'),
    (r'Raspberry Pi 500', 'pi500'),
    (r'Raspberry Pi 5', 'pi5'),
    (r'Raspberry Pi 4', 'pi4'),
    (r'Raspberry Pi 3 Model [AB] Plus', 'pi3+'),
    (r'Raspberry Pi 3', 'pi3'),
    (r'Raspberry Pi 2', 'pi2'),
    (r'Raspberry Pi Zero 2', 'pi02'),
    (r'Raspberry Pi Zero W', 'pi0w'),
    (r'Raspberry Pi Zero', 'pi0'),
    (r'Raspberry Pi Model', 'pi1'),
)

MAX_INCLUDE_DEPTH = 16


def board_from_model(model):
    """'Raspberry Pi 4 Model B Rev 1.4' -> 'pi4'; None when it is not a Pi we know."""
    if not model:
        return None
    for pattern, board in _BOARD_PATTERNS:
        if re.search(pattern, model):
            return board
    return None


class Conditions(object):
    """The filters in force at one point of the file."""

    __slots__ = ('disabled', 'model', 'others')

    def __init__(self, disabled=False, model=None, others=()):
        self.disabled = disabled
        self.model = model
        self.others = tuple(others)  # ((type, text), ...): runtime conditions we cannot evaluate offline

    def with_section(self, section):
        name = section.strip()
        lowered = name.lower()
        if lowered == 'all':
            return Conditions()
        if lowered == 'none':
            return Conditions(True, self.model, self.others)
        if lowered in MODEL_FILTERS:
            return Conditions(self.disabled, lowered, self.others)
        if lowered.startswith('hdmi:'):
            return self  # selects an HDMI port for hdmi_* settings; not a condition on other lines
        if '=' in name:
            ftype = name.split('=', 1)[0].strip().lower()
        elif lowered.startswith('0x'):
            ftype = 'serial'
        else:
            ftype = lowered
        others = tuple(o for o in self.others if o[0] != ftype) + ((ftype, name),)
        return Conditions(self.disabled, self.model, others)

    def describe(self):
        if self.disabled:
            return '[none]'
        parts = []
        if self.model:
            parts.append('[%s]' % self.model)
        parts.extend('[%s]' % text for _ftype, text in self.others)
        return ' '.join(parts) or '[all]'

    def evaluate(self, board):
        """'yes', 'no' or 'maybe' for a board key (None: the board is not known)."""
        if self.disabled:
            return 'no'
        result = 'yes'
        if self.model:
            if board is None:
                result = 'maybe'
            elif self.model not in BOARD_FILTERS.get(board, frozenset()):
                return 'no'
        if self.others:
            result = 'maybe'
        return result


def combine(results):
    if 'no' in results:
        return 'no'
    if 'maybe' in results:
        return 'maybe'
    return 'yes'


class ConfigLine(object):
    __slots__ = ('path', 'lineno', 'text', 'key', 'value', 'conditions', 'gates')

    def __init__(self, path, lineno, text, key, value, conditions, gates):
        self.path = path
        self.lineno = lineno
        self.text = text
        self.key = key
        self.value = value
        self.conditions = conditions
        self.gates = gates  # Conditions at each enclosing include line

    def applies(self, board):
        return combine([g.evaluate(board) for g in self.gates] + [self.conditions.evaluate(board)])

    def boards(self):
        """Boards this line can apply to (when the board is not known)."""
        return sorted(b for b in BOARD_FILTERS if self.applies(b) != 'no')

    def section(self):
        return ' '.join([g.describe() for g in self.gates if g.describe() != '[all]'] + [self.conditions.describe()])

    def location(self):
        return '%s:%d' % (self.path, self.lineno)


class Overlay(object):
    """A dtoverlay= line, with the dtparam= lines that follow it."""

    def __init__(self, name, params, line):
        self.name = name
        self.params = params  # [(key, value or None)], in order
        self.line = line
        self.param_lines = []

    def param(self, key, default=None):
        value = default
        for pkey, pvalue in self.params:
            if pkey == key:
                value = pvalue
        return value


class BootConfig(object):
    def __init__(self, top_path):
        self.top_path = top_path
        self.lines = []
        self.files = []
        self.notes = []

    def overlays(self):
        result, current = [], None
        for line in self.lines:
            if line.key == 'dtoverlay':
                current = None
                name, params = split_overlay(line.value)
                if name:
                    current = Overlay(name, params, line)
                    result.append(current)
            elif line.key == 'dtparam' and current is not None:
                _name, params = split_overlay('x,' + line.value)
                current.params.extend(params)
                current.param_lines.append(line)
        return result


def split_overlay(value):
    """'pwm-ir-tx,gpiopin=17,invert' -> ('pwm-ir-tx', [('gpiopin', '17'), ('invert', None)])."""
    parts = re.split(r'[,:]', value.strip())
    name = parts[0].strip()
    params = []
    for part in parts[1:]:
        part = part.strip()
        if not part:
            continue
        if '=' in part:
            key, val = part.split('=', 1)
            params.append((key.strip(), val.strip()))
        else:
            params.append((part, None))
    return name, params


def parse(top_path, root='/'):
    """Read config.txt and its includes; raise DetectionError for input we cannot trust.

    ``top_path`` is the file's path on the audited system. With an image ``root``
    every file, include and symbolic link resolves inside the image (an absolute
    include is an image path) and a path that would leave it is an error.
    """
    def host_path(image_path):
        if root in ('', '/'):
            return image_path
        try:
            return hostio.resolve_under(root, image_path)
        except hostio.ReadProblem as problem:
            raise DetectionError('%s %s' % (image_path, problem.reason))

    config = BootConfig(host_path(top_path))
    base_dir = os.path.dirname(top_path)
    state = {'conditions': Conditions()}

    def read_file(image_path, gates, stack):
        path = host_path(image_path)
        real = os.path.realpath(path)
        if real in stack:
            chain = ' -> '.join(os.path.basename(p) for p in stack + [real])
            raise DetectionError('include loop in %s: %s' % (top_path, chain))
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise DetectionError('includes nested deeper than %d levels at %s' % (MAX_INCLUDE_DEPTH, path))
        try:
            text = hostio.read_text(path)
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing' and stack:
                # The firmware skips a missing include; so do we, and say so.
                config.notes.append('include %s does not exist (the firmware ignores it)' % path)
                return
            raise DetectionError('%s %s' % (path, problem.reason))
        config.files.append(path)
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('[') and line.endswith(']'):
                state['conditions'] = state['conditions'].with_section(line[1:-1])
                continue
            if line.startswith('include ') or line.startswith('include\t'):
                target = line.split(None, 1)[1].strip()
                include_path = target if os.path.isabs(target) else os.path.join(base_dir, target)
                read_file(include_path, gates + [state['conditions']], stack + [real])
                continue
            if '=' not in line:
                continue  # initramfs and other space-separated commands carry no overlay
            key, value = line.split('=', 1)
            config.lines.append(ConfigLine(path, lineno, raw, key.strip(), value.strip(),
                                           state['conditions'], list(gates)))

    read_file(top_path, [], [])
    return config
