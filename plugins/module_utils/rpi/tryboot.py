# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firmware's trial boot (tryboot) for a config.txt change: can this Pi do it, the trial files,
was this boot a trial.

Raspberry Pi documentation (raspberrypi/documentation, computers/raspberry-pi/bootflow-eeprom.adoc,
"Fail-safe OS updates (tryboot)"): "The bootloader/firmware provide a one-shot flag which, if set,
is cleared but causes tryboot.txt to be loaded instead of config.txt. [...] Since the flag is cleared
before starting the firmware, a crash or reset will cause the original config.txt file to be loaded
on the next reboot"; it is set with ``reboot '0 tryboot'``. "If the tryboot_a_b property in
autoboot.txt is set to 1 then config.txt is loaded instead of tryboot.txt" (same page): the trial
would try nothing, so it is refused. computers/configuration/device-tree.adoc: /chosen/bootloader
``tryboot`` ("Set to 1 if the tryboot flag was set at boot", one of the common bootloader
properties) and, on BCM2711, ``capabilities`` (bit 3: TRYBOOT).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import struct

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config

TRYBOOT_FILE = 'tryboot.txt'
AUTOBOOT_FILE = 'autoboot.txt'
MARK = '# homelab.postmortem pi_ir_tx: trial of config.txt; promoted to config.txt or removed by the pi_ir_tx role'
# Boards with the EEPROM bootloader whose trial boot this fix uses: Pi 4 and Pi 5 families.
TRYBOOT_BOARDS = frozenset(('pi4', 'pi400', 'cm4', 'pi5', 'pi500', 'cm5'))
CAPABILITY_TRYBOOT = 1 << 3


class Refused(Exception):
    """No trial boot here; the message says why."""


def read_u32(path):
    """A device-tree 32-bit cell (big-endian), or None when the property is absent or not 4 bytes."""
    try:
        with open(path, 'rb') as handle:
            data = handle.read(8)
    except (IOError, OSError):
        return None
    if len(data) != 4:
        return None
    return struct.unpack('>I', data)[0]


def is_trial_boot(device_tree):
    """True when the firmware booted with the tryboot flag (it then read tryboot.txt)."""
    return read_u32(os.path.join(device_tree, 'chosen', 'bootloader', 'tryboot')) == 1


def _autoboot_a_b(boot_dir):
    """The autoboot.txt line that sets tryboot_a_b=1, or None."""
    try:
        text = hostio.read_optional_text(os.path.join(boot_dir, AUTOBOOT_FILE)) or ''
    except hostio.ReadProblem as problem:
        return '%s %s' % (AUTOBOOT_FILE, problem.reason)
    for line in text.splitlines():
        key, _sep, value = line.strip().partition('=')
        if key.strip() == 'tryboot_a_b' and value.strip() not in ('', '0'):
            return line.strip()
    return None


def support(device_tree, boot_dir, board):
    """(True, description) when this Pi can boot tryboot.txt once; (False, why not) otherwise."""
    if board not in TRYBOOT_BOARDS:
        return False, ('board %s: the trial boot is used on Raspberry Pi 4 and 5 (EEPROM bootloader) only'
                       % (board or 'unknown (no device-tree model)'))
    bootloader = os.path.join(device_tree, 'chosen', 'bootloader')
    if read_u32(os.path.join(bootloader, 'tryboot')) is None:
        return False, ('%s has no tryboot property: this firmware does not report tryboot support; update the '
                       'bootloader (rpi-eeprom-update) to use a trial boot' % bootloader)
    capabilities = read_u32(os.path.join(bootloader, 'capabilities'))
    if capabilities is not None and not capabilities & CAPABILITY_TRYBOOT:
        return False, ('%s/capabilities is 0x%x, without the TRYBOOT bit (3): this bootloader cannot do a trial boot'
                       % (bootloader, capabilities))
    a_b = _autoboot_a_b(boot_dir)
    if a_b:
        return False, ('%s: %s: with tryboot_a_b the tryboot flag switches partitions and config.txt is read instead '
                       'of tryboot.txt, so a trial would try nothing' % (os.path.join(boot_dir, AUTOBOOT_FILE), a_b))
    return True, 'board %s, bootloader with tryboot' % board


def trial_name(path, top):
    """Where the trial copy of ``path`` goes: tryboot.txt for config.txt, <name>.tryboot<ext> beside others."""
    if path == top:
        return os.path.join(os.path.dirname(top), TRYBOOT_FILE)
    stem, ext = os.path.splitext(path)
    return '%s.tryboot%s' % (stem, ext)


def trial_files(top, changes):
    """{trial path: text} for a trial of ``changes`` ({path: (before, after)}, config.txt = ``top``).

    The trial carries the include tree: every file on the way from config.txt to a changed file is
    copied (tryboot.txt for config.txt, <name>.tryboot.txt for an include) with its include line
    pointing at the next copy, so the firmware reads each line from the same kind of file as it will
    after the promotion (settings the bootloader reads only from config.txt stay where they are).
    Unchanged includes are read as they are."""
    base_dir = os.path.dirname(top)
    texts = {}

    def text_of(path):
        if path not in texts:
            texts[path] = changes[path][1] if path in changes else hostio.read_text(path)
        return texts[path]

    needed = {}

    def needs_copy(path, stack):
        if path in needed:
            return needed[path]
        if path in stack or not os.path.isfile(path):
            return False
        result = path in changes
        for raw in text_of(path).splitlines():
            target = rpi_config.include_target(raw)
            if target is not None:
                child = rpi_config.fat_path(target if os.path.isabs(target) else os.path.join(base_dir, target))
                result = needs_copy(child, stack + [path]) or result
        needed[path] = result
        return result

    if not needs_copy(top, []):
        raise Refused('nothing to try: no change under %s' % top)
    files = {}
    for path in sorted(p for p, copy in needed.items() if copy):
        lines = text_of(path).splitlines(True)
        for index, raw in enumerate(lines):
            target = rpi_config.include_target(raw)
            if target is None:
                continue
            child = rpi_config.fat_path(target if os.path.isabs(target) else os.path.join(base_dir, target))
            if needed.get(child):
                copy = trial_name(child, top)
                new_target = copy if os.path.isabs(target) else os.path.relpath(copy, base_dir)
                lines[index] = raw.replace(target, new_target, 1)
        ending = '\r\n' if lines and lines[0].endswith('\r\n') else '\n'
        files[trial_name(path, top)] = MARK + ending + ''.join(lines)
    return files


def ours(path):
    """Whether ``path`` is a trial file this fix wrote (its first line is MARK; or empty, as a power cut
    while it was created can leave it on FAT); None when it does not exist."""
    try:
        text = hostio.read_optional_text(path)
    except hostio.ReadProblem:
        return False
    if text is None:
        return None
    return text == '' or text.startswith(MARK)
