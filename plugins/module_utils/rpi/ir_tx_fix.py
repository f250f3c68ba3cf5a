# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pi_ir_tx fix as a plan: which config.txt lines change, and to what.

Pure computation on the config as the firmware reads it (rpi/config.py), so that check mode, the diff
and the write all come from one plan, and the lines it changes are the ones the detection judged: the
same stream (includes inserted), the same filters, the same folded overlay names. Each line is edited
in its own file. Only those lines change: line endings, comments, sections and every other line stay
byte for byte.

Every parameter keeps the meaning it had. The overlays' own parameters (their ``__overrides__``,
raspberrypi/linux arch/arm/boot/dts/overlays/):

- pwm-ir-tx-overlay.dts: ``gpio_pin`` (default 18, ``brcm,pins = <18>``) and ``func`` (the pin's
  alternate function for the PWM, default 2);
- gpio-ir-tx-overlay.dts: ``gpio_pin`` (default 18) and ``invert``.

``gpio_pin`` means the same pin in both, so it stays where it is written (on the overlay line, or on a
``dtparam=`` line after it, which then sets gpio-ir-tx's pin as it set pwm-ir-tx's). ``func`` has no
meaning for a bit-banged GPIO: it is dropped, from the overlay line and from ``dtparam=`` lines in the
overlay's scope. Any other parameter is not pwm-ir-tx's, so the firmware resolves it against the base
device tree (device-tree.adoc part 3.2) and keeps doing so after the switch, unless gpio-ir-tx defines
it (``invert``), where its meaning would change: the fix refuses then, and for a name that looks like
one of the overlay parameters misspelt (``gpiopin``, ``GPIO_PIN``: not the pin for the firmware, which
compares parameter names exactly), for an inline ``#`` (undocumented), and for a ``dtparam=`` line whose
``func`` belongs to another overlay too. A refusal changes no file and names the line and the reason.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi.ir_overlays import (
    GPIO_OVERLAY, GPIO_PARAMS, PWM_DEFAULT_PIN, PWM_OVERLAY, PWM_PARAMS, PWM_PIN_DEFAULT_SOURCE, is_gpio_number)

DROPPED_PARAMS = ('func',)
EMPTIED_MARK = '# homelab.postmortem: pwm-ir-tx parameter, no meaning for gpio-ir-tx: '
_NO_CHANGE = '; no file was changed'


def check_param(param, where):
    """Why ``param`` in a pwm-ir-tx scope stops the fix, or None."""
    meant = rpi_config.near_miss(param.key, PWM_PARAMS + GPIO_PARAMS)
    if meant:
        return ('%s: %s is not a parameter of pwm-ir-tx (gpio_pin, func) nor of gpio-ir-tx (gpio_pin, invert): '
                'the firmware compares parameter names exactly, so it did not set %s; which pin the transmitter '
                'uses is not known. Write %s=... by hand' % (where, param.text(), meant, meant))
    if param.key in GPIO_PARAMS and param.key not in PWM_PARAMS:
        return ('%s: %s is not a pwm-ir-tx parameter, so the firmware gives it to the base device tree; '
                'gpio-ir-tx has %s, so after the switch it would %s' % (where, param.text(), param.key,
                                                                        'invert the output' if param.key == 'invert'
                                                                        else 'take effect'))
    if param.key == 'gpio_pin' and not is_gpio_number(param.value):
        return '%s: gpio_pin=%r is not a pin number' % (where, param.value)
    return None


class Replacement(object):
    """One pwm-ir-tx line (in its file) and what it becomes, with the dtparam= lines its switch edits."""

    def __init__(self, overlay, kept, dropped, pin_on_line, pins, dtparam_edits):
        self.overlay = overlay            # one occurrence (rpi_config.Overlay)
        self.kept = kept                  # parameter texts kept on the new line
        self.dropped = dropped            # parameter texts dropped (func)
        self.pin_on_line = pin_on_line    # gpio_pin written on the new line
        self.pins = pins                  # {board or None: (effective pin, where it is set)}
        self.dtparam_edits = dtparam_edits  # {(path, lineno): (ConfigLine, [kept param texts])}

    @property
    def pin(self):
        values = sorted(set(pin for pin, _where in self.pins.values()))
        return values[0] if len(values) == 1 else ', '.join(values)

    @property
    def new_value(self):
        return 'dtoverlay=%s' % ','.join([GPIO_OVERLAY, 'gpio_pin=%s' % self.pin_on_line] + self.kept)

    def as_dict(self):
        line = self.overlay.line
        return {
            'file': line.path,
            'line': line.lineno,
            'included_from': list(line.included_from),
            'section': line.section(),
            'filters': line.conditions.origins(),
            'before': line.text.strip(),
            'after': self.new_value,
            'pin': self.pin,
            'pin_set_at': sorted(set(where for _pin, where in self.pins.values())),
            'dropped_params': self.dropped,
            'dtparam_lines': [{'line': cl.location(), 'before': cl.text.strip(),
                               'after': _dtparam_text(cl, kept)} for cl, kept in
                              (self.dtparam_edits[k] for k in sorted(self.dtparam_edits))],
        }


def _dtparam_text(config_line, kept):
    if not kept:
        return EMPTIED_MARK + config_line.text.strip()
    return '%s=%s' % (config_line.key, ','.join(kept))


def _scopes(config, board):
    """{board: overlays} for the boards the fix is for: the board, or every board when it is not known."""
    if board is not None:
        return {board: config.overlays(board)}
    return config.overlays_by_board()


def _dtparam_owners(config, scopes):
    """{physical dtparam line: set of owners} over every board and place in the stream, where an owner is
    the physical dtoverlay line whose scope it is in, or None for the base device tree."""
    owners = {}
    for board, overlays in scopes.items():
        attached = {}
        for overlay in overlays:
            for param_line in overlay.param_lines:
                attached[id(param_line)] = overlay.line.physical()
        for line in config.lines:
            if rpi_config.fold(line.key) == 'dtparam' and line.applies(board) != 'no':
                owners.setdefault(line.physical(), set()).add(attached.get(id(line)))
    return owners


def plan(config_path, board, root='/'):
    """Replacements for every pwm-ir-tx line that can apply to ``board`` (None: any board).

    ``config_path`` is the path on the audited system (under ``root`` for an image). Raises
    DetectionError, naming the line and the reason, where a change would alter what a line means."""
    config = rpi_config.parse(config_path, root)
    scopes = _scopes(config, board)
    found = {}   # physical line -> [(board, overlay)]
    order = []
    for each_board, overlays in sorted(scopes.items()):
        for overlay in overlays:
            if overlay.name != PWM_OVERLAY:
                continue
            key = overlay.line.physical()
            if key not in found:
                found[key] = []
                order.append(key)
            found[key].append((each_board, overlay))
    owners = _dtparam_owners(config, scopes) if found else {}
    position = dict((id(line), index) for index, line in enumerate(config.lines))
    replacements = []
    for key in sorted(order, key=lambda k: min(position[id(o.line)] for _b, o in found[k])):
        replacements.append(_replacement(found[key], owners, set(order), board))
    return config, replacements


def _replacement(occurrences, owners, replaced, board):
    overlay = occurrences[0][1]
    line = overlay.line
    where = line.where()
    if overlay.comment is not None:
        raise DetectionError('%s: %r has a "#" after the overlay name; whether the firmware reads it as part of '
                             'the value is not documented. Edit the line by hand%s'
                             % (where, line.text.strip(), _NO_CHANGE))
    kept, dropped, pin_on_line = [], [], PWM_DEFAULT_PIN
    for param in overlay.params:
        if param.line is not line:
            continue
        problem = check_param(param, where)
        if problem:
            raise DetectionError(problem + _NO_CHANGE)
        if param.key == 'gpio_pin':
            pin_on_line = param.value
        elif param.key in DROPPED_PARAMS:
            dropped.append(param.text())
        else:
            kept.append(param.text())
    edits, pins = {}, {}
    for each_board, occurrence in occurrences:
        pins[each_board] = occurrence.setting('gpio_pin', PWM_DEFAULT_PIN, PWM_PIN_DEFAULT_SOURCE)
        for param_line in occurrence.param_lines:
            params = [p for p in occurrence.params if p.line is param_line]
            for param in params:
                problem = check_param(param, param_line.where())
                if problem:
                    raise DetectionError(problem + _NO_CHANGE)
            if not any(p.key in DROPPED_PARAMS for p in params):
                continue
            physical = param_line.physical()
            others = sorted((o for o in owners.get(physical, ()) if o not in replaced), key=str)
            if others:
                owner = ('the base device tree' if others[0] is None else 'the dtoverlay= line at %s:%d' % others[0])
                raise DetectionError('%s: %s sets func for pwm-ir-tx at %s and, %s, for %s; dropping it would change '
                                     'that too. Edit it by hand%s'
                                     % (param_line.where(), param_line.text.strip(), line.location(),
                                        'on another board' if board is None else 'elsewhere in the stream',
                                        owner, _NO_CHANGE))
            if physical not in edits:
                edits[physical] = (param_line, [p.text() for p in params if p.key not in DROPPED_PARAMS])
                dropped.extend(p.text() for p in params if p.key in DROPPED_PARAMS)
    return Replacement(overlay, kept, dropped, pin_on_line, pins, edits)


def _line_ending(raw_line):
    for ending in ('\r\n', '\n', '\r'):
        if raw_line.endswith(ending):
            return ending
    return ''


def rewrite(replacements):
    """{path: (before_text, after_text)} for every file the replacements touch."""
    per_file = {}
    for replacement in replacements:
        line = replacement.overlay.line
        per_file.setdefault(line.path, {})[line.lineno] = replacement.new_value
        for (path, lineno), (param_line, kept) in replacement.dtparam_edits.items():
            per_file.setdefault(path, {})[lineno] = _dtparam_text(param_line, kept)
    result = {}
    for path, changes in per_file.items():
        before = hostio.read_text(path)
        lines = before.splitlines(True)
        for lineno, new_text in changes.items():
            raw = lines[lineno - 1]
            indent = raw[:len(raw) - len(raw.lstrip())]
            lines[lineno - 1] = indent + new_text + _line_ending(raw)
        after = ''.join(lines)
        if after != before:
            result[path] = (before, after)
    return result
