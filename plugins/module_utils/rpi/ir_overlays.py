# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two IR transmitter overlays as the firmware declares them: names, parameters, default pin.

pi_ir_tx's verdict judges config.txt by them and the fix (rpi/ir_tx_fix.py) rewrites one into the
other; the detection's first question needs none of it, so neither is loaded on a host that is no Pi.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

PWM_OVERLAY = 'pwm-ir-tx'
GPIO_OVERLAY = 'gpio-ir-tx'
# The overlays' parameters, their __overrides__ (raspberrypi/linux arch/arm/boot/dts/overlays/
# pwm-ir-tx-overlay.dts and gpio-ir-tx-overlay.dts); both default to pin 18 (brcm,pins = <18>).
PWM_PARAMS = ('gpio_pin', 'func')
GPIO_PARAMS = ('gpio_pin', 'invert')
PWM_DEFAULT_PIN = '18'
PWM_PIN_DEFAULT_SOURCE = "pwm-ir-tx's default (pwm-ir-tx-overlay.dts: brcm,pins = <18>)"
GPIO_PIN_DEFAULT_SOURCE = "gpio-ir-tx's default (gpio-ir-tx-overlay.dts: brcm,pins = <18>)"


def is_gpio_number(pin):
    text = pin if isinstance(pin, str) else ''
    return 0 < len(text) <= 3 and all(c in '0123456789' for c in text)
