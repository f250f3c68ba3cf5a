# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Raspberry Pi config.txt as the firmware reads it: one stream of lines, filters evaluated in order.

The rules and where they are written (raspberrypi/documentation, documentation/asciidoc/computers/):

- config_txt/what_is_config_txt.adoc, "include": "Causes the content of the specified file to be
  inserted into the current file." An include is text put in place of the include line: its lines
  carry the filters in force where it stands, a filter inside it changes the filters of what follows
  (in the file and after the include), and an ``[all]`` inside it ends a ``[none]`` or ``[pi3]`` that
  was open at the include line. The include line is inserted whatever the filters at it.
- config_txt/conditional.adoc: ``[all]`` "resets all previously set filters"; ``[none]`` "prevents any
  settings that follow from being applied to any hardware"; "Filters of the same type replace each
  other", "Filters of different types can be combined"; the model filters' table (which boards see
  which filters).
- configuration/device-tree.adoc, part 3.1: ``dtoverlay=acme-board`` makes the loader "look for
  ``overlays/acme-board.dtbo`` in the firmware partition"; part 3.2: ``dtparam=`` lines after a
  ``dtoverlay=`` line are that overlay's parameters, "Overlay parameters are only in scope until the
  next overlay is loaded", a parameter the overlay does not define goes to the base device tree
  ("the parameter in the overlay takes precedence"), and ``dtoverlay=`` ends the scope.

Case: the documentation says nothing about the case of overlay or include names. The firmware reads
both from the FAT boot partition, and FAT matches names without regard to ASCII case, so
``dtoverlay=PWM-IR-TX`` loads ``overlays/pwm-ir-tx.dtbo`` and ``include Extra.txt`` reads
``extra.txt``: both are folded here (a folded name we read that the firmware would not is a false
alarm; one we skip that it reads would be a false ok). Keys (``DTOVERLAY=``) are folded too, as
Raspberry Pi's own config reader does (raspberrypi/utils dtapply/dtapply, ``re.IGNORECASE``).
Parameter names are device-tree property names, which the firmware compares exactly; they are not folded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
from collections import namedtuple

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
# An include is text inserted in place, so a file included twice is read twice; a few files that each
# include the next many times would multiply without end. Both far beyond any real config.
MAX_LINES = 200000
MAX_SETTINGS = 100000

_ASCII_FOLD = dict((ord(c), ord(c) + 32) for c in 'ABCDEFGHIJKLMNOPQRSTUVWXYZ')


def fold(name):
    """A name as FAT compares it: ASCII letters without case, everything else as is."""
    return name.translate(_ASCII_FOLD)


def board_from_model(model):
    """'Raspberry Pi 4 Model B Rev 1.4' -> 'pi4'; None when it is not a Pi we know."""
    if not model:
        return None
    for pattern, board in _BOARD_PATTERNS:
        if re.search(pattern, model):
            return board
    return None


class Conditions(object):
    """The filters in force at one point of the stream, each with the line that set it."""

    __slots__ = ('disabled', 'model', 'others')

    def __init__(self, disabled=None, model=None, others=()):
        self.disabled = disabled    # the location of the [none] in force, or None
        self.model = model          # (filter, location) or None
        self.others = tuple(others)  # ((type, text, location), ...): runtime conditions we cannot evaluate offline

    def with_section(self, section, location):
        name = section.strip()
        lowered = name.lower()
        if lowered == 'all':
            return Conditions()
        if lowered == 'none':
            return Conditions(location, self.model, self.others)
        if lowered in MODEL_FILTERS:
            return Conditions(self.disabled, (lowered, location), self.others)
        if lowered.startswith('hdmi:'):
            return self  # selects an HDMI port for hdmi_* settings; not a condition on other lines
        if '=' in name:
            ftype = name.split('=', 1)[0].strip().lower()
        elif lowered.startswith('0x'):
            ftype = 'serial'
        else:
            ftype = lowered
        others = tuple(o for o in self.others if o[0] != ftype) + ((ftype, name, location),)
        return Conditions(self.disabled, self.model, others)

    def describe(self):
        if self.disabled:
            return '[none]'
        parts = []
        if self.model:
            parts.append('[%s]' % self.model[0])
        parts.extend('[%s]' % text for _ftype, text, _where in self.others)
        return ' '.join(parts) or '[all]'

    def origins(self):
        """Where each filter in force was set: ['[pi4] at /boot/firmware/config.txt:3', ...]."""
        if self.disabled:
            return ['[none] at %s' % self.disabled]
        found = []
        if self.model:
            found.append('[%s] at %s' % self.model)
        found.extend('[%s] at %s' % (text, where) for _ftype, text, where in self.others)
        return found

    def evaluate(self, board):
        """'yes', 'no' or 'maybe' for a board key (None: the board is not known)."""
        if self.disabled:
            return 'no'
        result = 'yes'
        if self.model:
            if board is None:
                result = 'maybe'
            elif self.model[0] not in BOARD_FILTERS.get(board, frozenset()):
                return 'no'
        if self.others:
            result = 'maybe'
        return result


class ConfigLine(namedtuple('ConfigLine', 'path lineno text key value conditions included_from')):
    """One setting of the stream the firmware reads: where it is written and what is in force there.
    ``included_from``: 'file:line' of each include that inserted this text, outermost first. Lines are
    told apart by identity (a file included twice gives equal lines at two places in the stream)."""

    __slots__ = ()

    def applies(self, board):
        return self.conditions.evaluate(board)

    def boards(self):
        """Boards this line can apply to (when the board is not known)."""
        return sorted(b for b in BOARD_FILTERS if self.applies(b) != 'no')

    def section(self):
        return self.conditions.describe()

    def location(self):
        return '%s:%d' % (self.path, self.lineno)

    def physical(self):
        """The line in its file; a file included twice gives one physical line two places in the stream."""
        return (self.path, self.lineno)

    def where(self):
        """'file:line', with the includes that put it in the stream."""
        if not self.included_from:
            return self.location()
        return '%s (inserted by include at %s)' % (self.location(), ' -> '.join(self.included_from))


class Param(object):
    __slots__ = ('key', 'value', 'line')

    def __init__(self, key, value, line):
        self.key = key
        self.value = value  # None for a bare flag ('invert')
        self.line = line

    def text(self):
        return self.key if self.value is None else '%s=%s' % (self.key, self.value)


class Overlay(object):
    """A dtoverlay= line and the parameters in its scope (its own and those of the dtparam= lines after it)."""

    def __init__(self, name, line, written=None, comment=None):
        self.name = name                  # as the firmware looks it up (folded)
        self.written = written or name    # as the line writes it
        self.comment = comment            # text after a '#' in the value, or None
        self.line = line
        self.params = []                  # [Param], in the order the firmware applies them
        self.param_lines = []             # dtparam= lines in scope, in order

    def last(self, key):
        """The Param that sets ``key`` last (the effective one), or None."""
        found = None
        for param in self.params:
            if param.key == key:
                found = param
        return found

    def param(self, key, default=None):
        found = self.last(key)
        return default if found is None else found.value

    def setting(self, key, default, default_source):
        """(effective value, where it is set) of parameter ``key``: the last one in scope, else the default."""
        found = self.last(key)
        if found is None:
            return default, default_source
        return found.value, found.line.location()

    def near_misses(self, names):
        """[(Param, the name it misspells)] for parameters in scope that near_miss() one of ``names``."""
        return [(p, near_miss(p.key, names)) for p in self.params if near_miss(p.key, names)]


def near_miss(key, names):
    """The one of ``names`` that ``key`` writes in another case or with '-'/'_' changed, else None: for the
    firmware, which compares parameter names exactly, it is not that parameter."""
    squashed = key.lower().replace('-', '').replace('_', '')
    for name in names:
        if key != name and squashed == name.lower().replace('-', '').replace('_', ''):
            return name
    return None


def split_params(text):
    """'a=1,b' or 'a=1:b' -> [('a', '1'), ('b', None)]."""
    params = []
    for part in re.split(r'[,:]', text):
        part = part.strip()
        if not part:
            continue
        if '=' in part:
            key, val = part.split('=', 1)
            params.append((key.strip(), val.strip()))
        else:
            params.append((part, None))
    return params


def split_overlay(value):
    """'pwm-ir-tx,gpio_pin=17,func=2' -> ('pwm-ir-tx', [('gpio_pin', '17'), ('func', '2')])."""
    parts = re.split(r'[,:]', value.strip(), 1)
    return parts[0].strip(), split_params(parts[1] if len(parts) > 1 else '')


class BootConfig(object):
    def __init__(self, top_path):
        self.top_path = top_path
        self.lines = []    # ConfigLine per setting, in the order the firmware reads them
        self.files = []    # every file read, in order (a file included twice is listed twice)
        self.notes = []

    def overlays(self, board=None):
        """Each dtoverlay= the firmware loads on ``board`` (None: the board is not known), with its scope.

        A dtparam= line belongs to the overlay loaded before it among the lines that apply to the same
        board (device-tree.adoc part 3.2); with the board unknown every line that can apply to some
        board counts, and overlays_by_board() gives the per-board scopes."""
        result, current = [], None
        for line in self.lines:
            if line.applies(board) == 'no':
                continue
            key = fold(line.key)
            if key == 'dtoverlay':
                current = None
                value, comment = line.value, None
                if '#' in value:
                    value, comment = value.split('#', 1)
                written, params = split_overlay(value)
                if written and fold(written) != 'none':
                    current = Overlay(fold(written), line, written, comment)
                    current.params.extend(Param(k, v, line) for k, v in params)
                    result.append(current)
            elif key == 'dtparam' and current is not None:
                current.params.extend(Param(k, v, line) for k, v in split_params(line.value))
                current.param_lines.append(line)
        return result

    def overlays_by_board(self, boards=None):
        """{board: overlays(board)} for each board (all known boards by default)."""
        return dict((board, self.overlays(board)) for board in (boards or sorted(BOARD_FILTERS)))


def _find_folded(directory, name):
    """The entry of ``directory`` that FAT would open for ``name``, or None. ``name`` itself when it
    exists; else the one entry equal to it without ASCII case. Two such entries cannot exist on FAT: a
    tree copied elsewhere that has them is ambiguous, and says so."""
    if os.path.lexists(os.path.join(directory, name)):
        return name
    try:
        entries = os.listdir(directory)
    except OSError:
        return None
    matches = sorted(e for e in entries if fold(e) == fold(name))
    if len(matches) > 1:
        raise DetectionError('%s: %s could be %s (FAT does not tell names apart by case)'
                             % (directory, name, ' or '.join(matches)))
    return matches[0] if matches else None


def include_target(raw):
    """The file an include line names, or None: ``include <file>``, the keyword in any case."""
    words = raw.strip().split(None, 1)
    if len(words) == 2 and fold(words[0]) == 'include':
        return words[1].strip()
    return None


def fat_path(path):
    """``path`` as the FAT boot partition opens it: itself when it exists, else the one entry of its
    directory equal to it without case, else itself (missing)."""
    if os.path.lexists(path):
        return path
    parent, name = os.path.split(path)
    other = _find_folded(parent, name) if name else None
    return os.path.join(parent, other) if other else path


class _Reader(object):
    """One reading of config.txt and its includes: the files read, the section in force, the lines counted."""

    def __init__(self, top_path, root):
        self.top_path = top_path
        self.root = root
        self.base_dir = os.path.dirname(top_path)
        self.conditions = Conditions()
        self.counted = 0
        self.texts = {}
        self.config = BootConfig(self.host_path(top_path))

    def host_path(self, image_path):
        if self.root in ('', '/'):
            return image_path
        try:
            return hostio.resolve_under(self.root, image_path)
        except hostio.ReadProblem as problem:
            raise DetectionError('%s %s' % (image_path, problem.reason))

    def include_file(self, target, where):
        """The image path of an include's file: the name as written, else the one FAT would open."""
        image_path = target if os.path.isabs(target) else os.path.join(self.base_dir, target)
        if os.path.lexists(self.host_path(image_path)):
            return image_path
        parent, name = os.path.split(image_path)
        other = _find_folded(self.host_path(parent), name) if name else None
        if other and other != name:
            self.config.notes.append('include %s at %s opens %s: FAT matches names without case'
                                     % (target, where, os.path.join(parent, other)))
            return os.path.join(parent, other)
        return image_path

    def _lines(self, path, real, stack):
        """The file's lines, or None for a missing include (the firmware skips it; so do we, and say so)."""
        if real in stack:
            chain = ' -> '.join(os.path.basename(p) for p in stack + [real])
            raise DetectionError('include loop in %s: %s' % (self.top_path, chain))
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise DetectionError('includes nested deeper than %d levels at %s' % (MAX_INCLUDE_DEPTH, path))
        try:
            if real not in self.texts:
                self.texts[real] = hostio.read_text(path).splitlines()
            return self.texts[real]
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing' and stack:
                self.config.notes.append('include %s does not exist (the firmware ignores it)' % path)
                return None
            raise DetectionError('%s %s' % (path, problem.reason))

    def read_file(self, image_path, included_from, stack):
        path = self.host_path(image_path)
        real = os.path.realpath(path)
        lines = self._lines(path, real, stack)
        if lines is None:
            return
        self.config.files.append(path)
        for lineno, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith('#'):
                continue
            self.counted += 1
            if self.counted > MAX_LINES or len(self.config.lines) >= MAX_SETTINGS:
                raise DetectionError('%s with its includes is more than %d lines or %d settings (files included '
                                     'over and over?)' % (self.top_path, MAX_LINES, MAX_SETTINGS))
            where = '%s:%d' % (path, lineno)
            if line.startswith('[') and line.endswith(']'):
                self.conditions = self.conditions.with_section(line[1:-1], where)
                continue
            target = include_target(line)
            if target is not None:
                self.read_file(self.include_file(target, where), included_from + (where,), stack + [real])
                continue
            if '=' not in line:
                continue  # initramfs and other space-separated commands carry no overlay
            key, value = line.split('=', 1)
            self.config.lines.append(ConfigLine(path, lineno, raw, key.strip(), value.strip(),
                                                self.conditions, included_from))


def parse(top_path, root='/'):
    """Read config.txt as the firmware does, includes inserted; raise DetectionError for input we cannot trust.

    ``top_path`` is the file's path on the audited system. With an image ``root``
    every file, include and symbolic link resolves inside the image (an absolute
    include is an image path) and a path that would leave it is an error.
    """
    reader = _Reader(top_path, root)
    reader.read_file(top_path, (), [])
    return reader.config
