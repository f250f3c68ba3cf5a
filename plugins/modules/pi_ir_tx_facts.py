#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pi_ir_tx_facts
short_description: Find Raspberry Pi IR transmitters on pwm-ir-tx that send nothing on kernel 6.18+
version_added: 0.1.0
description:
  - Reads C(/boot/firmware/config.txt) (else C(/boot/config.txt)) with its conditional sections
    and C(include) files for C(dtoverlay=pwm-ir-tx), the running kernel and the newest kernel
    under C(/lib/modules) (the one after the next reboot), and the IR devices the kernel
    registered under C(/sys/class/rc).
  - Status C(affected) when a pwm-ir-tx transmitter runs on an affected kernel, C(at_risk) when
    it will after the next reboot, C(ok) for gpio-ir-tx or kernels outside the range.
  - Returns C(ansible_facts.postmortem.pi_ir_tx); the same detection runs in
    M(homelab.postmortem.audit_facts).
  - "Settings: C(affected_from) (default C(6.18)) and C(fixed_in) (default none: no fixed
    kernel is known yet)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem contributors
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Check the IR transmitter on every Pi
  homelab.postmortem.pi_ir_tx_facts:

- name: Check an SD-card image mounted on the controller
  homelab.postmortem.pi_ir_tx_facts:
    root: /mnt/sdcard
  delegate_to: localhost
'''

RETURN = r'''
# See the homelab.postmortem.detection doc fragment.
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('pi_ir_tx')


if __name__ == '__main__':
    main()
