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
  - With I(probes=[ir_tx_trace]) (root, C(ir-ctl) from v4l-utils) each registered transmitter is
    measured. A 30 ms test code is sent and the C(pwm/pwm_apply) or C(gpio/gpio_value) edges are
    read from a private tracefs instance, which is removed afterwards. Edges spanning less than
    half the code mean C(affected), whatever the kernel version says.
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Check the IR transmitter on every Pi
  homelab.postmortem.pi_ir_tx_facts:

- name: Measure what each transmitter really sends
  homelab.postmortem.pi_ir_tx_facts:
    probes: [ir_tx_trace]
  become: true

- name: Check an SD-card image mounted on the controller
  homelab.postmortem.pi_ir_tx_facts:
    root: /mnt/sdcard
  delegate_to: localhost
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(pi_ir_tx).
      returned: always
      type: complex
      contains:
        pi_ir_tx:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) holds C(config), C(files_read), C(board_model), C(board), C(running_kernel),
              C(installed_kernels), C(next_boot_kernel), whether each is in C(affected_kernels), and
              the C(transmitters) registered under C(/sys/class/rc) (C(rc), C(driver), C(lirc)).
            - C(evidence.instances) has one entry per transmitter and per C(dtoverlay=pwm-ir-tx) or
              C(gpio-ir-tx) line that applies to the board, with C(file), C(line), C(text),
              C(section), C(applies) (C(yes), or C(maybe) when it depends on a condition not known
              offline), C(pin) and C(params).
          returned: always
          type: dict
          sample:
            id: pi_ir_tx
            status: affected
            summary: "pwm-ir-tx transmitter runs on affected kernel 6.18.34+rpt-rpi-v8: IR codes are not sent."
            evidence:
              running_kernel: 6.18.34+rpt-rpi-v8
              affected_kernels: ">= 6.18"
              instances:
                - name: "dtoverlay=pwm-ir-tx at /boot/firmware/config.txt:47"
                  status: affected
                  evidence: {file: /boot/firmware/config.txt, line: 47, section: "[all]", pin: "18", applies: "yes"}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('pi_ir_tx')


if __name__ == '__main__':
    main()
