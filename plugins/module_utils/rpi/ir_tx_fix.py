# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pi_ir_tx fix as a plan: which config.txt lines change, and to what.

Pure computation on the parsed config (rpi_config), so that check mode, the
diff and the write all come from one plan. Only the lines that need it change:
line endings, comments, sections and every other line stay byte for byte.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

PWM_OVERLAY = 'pwm-ir-tx'
GPIO_OVERLAY = 'gpio-ir-tx'
DEFAULT_PIN = '18'
# pwm-ir-tx parameter -> gpio-ir-tx parameter. gpiopin becomes gpio_pin; invert
# exists in both; anything else (func: the pin's alt function for the PWM) has
# no meaning for a bit-banged GPIO and is dropped, and said so.
CARRIED_PARAMS = {'invert': 'invert'}
FOLDED_MARK = '# homelab.postmortem: folded into the gpio-ir-tx line above: '


class Replacement(object):
    def __init__(self, overlay, pin, carried, dropped):
        self.overlay = overlay
        self.pin = pin
        self.carried = carried
        self.dropped = dropped

    @property
    def new_value(self):
        text = 'dtoverlay=%s,gpio_pin=%s' % (GPIO_OVERLAY, self.pin)
        for key, value in self.carried:
            text += ',%s' % key if value is None else ',%s=%s' % (key, value)
        return text

    def as_dict(self):
        line = self.overlay.line
        return {
            'file': line.path,
            'line': line.lineno,
            'section': line.section(),
            'before': line.text.strip(),
            'after': self.new_value,
            'pin': self.pin,
            'dropped_params': self.dropped,
            'folded_dtparam_lines': [p.location() for p in self.overlay.param_lines],
        }


def plan(config_path, board, root='/'):
    """Replacements for every pwm-ir-tx line that can apply to ``board`` (None: any board).

    ``config_path`` is the path on the audited system (under ``root`` for an image)."""
    config = rpi_config.parse(config_path, root)
    replacements = []
    for overlay in config.overlays():
        if overlay.name != PWM_OVERLAY or overlay.line.applies(board) == 'no':
            continue
        pin = overlay.param('gpiopin', DEFAULT_PIN)
        if pin is None or not pin.isdigit():
            raise DetectionError('%s: gpiopin=%r is not a pin number; no file was changed'
                                 % (overlay.line.location(), pin))
        carried, dropped = [], []
        for key, value in overlay.params:
            if key == 'gpiopin':
                continue
            if key in CARRIED_PARAMS:
                carried = [c for c in carried if c[0] != CARRIED_PARAMS[key]] + [(CARRIED_PARAMS[key], value)]
            else:
                dropped.append(key if value is None else '%s=%s' % (key, value))
        replacements.append(Replacement(overlay, pin, carried, dropped))
    return config, replacements


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
        for param_line in replacement.overlay.param_lines:
            per_file.setdefault(param_line.path, {})[param_line.lineno] = FOLDED_MARK + param_line.text.strip()
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
