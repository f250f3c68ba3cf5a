#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pi_ir_tx_fix
short_description: Replace dtoverlay=pwm-ir-tx with gpio-ir-tx on the same pin in config.txt
version_added: 0.1.0
description:
  - Rewrites every C(dtoverlay=pwm-ir-tx[,params]) line of C(/boot/firmware/config.txt) (else
    C(/boot/config.txt)) and its C(include) files that applies to this board as
    C(dtoverlay=gpio-ir-tx,gpio_pin=N), where N is the pin the old line used (C(gpiopin), default 18).
  - The line stays in its file and conditional section. C(invert) is carried over; parameters
    gpio-ir-tx does not have (C(func)) are dropped and listed in C(replacements) and a warning.
    C(dtparam=) lines that belonged to the old overlay are folded into the new line and commented out.
  - Only the changed lines change; line endings, a missing final newline, comments and every
    other line are kept byte for byte. Each file is backed up first and written atomically.
  - A C(gpiopin) that is not a number, a config that is not text, an unreadable include or an
    include loop fails the task and changes no file.
  - Nothing takes effect until the next boot; see the C(homelab.postmortem.pi_ir_tx) role for
    reboot handling.
options:
  root:
    description: Alternate filesystem root, for a mounted SD-card image.
    type: path
    default: /
  board:
    description:
      - Board to evaluate conditional sections for.
      - By default the running board's device-tree model; when it is not known (an image, a
        container), every line that applies to some board is replaced.
    type: str
    choices: [cm3, cm4, cm4s, cm5, pi0, pi02, pi0w, pi1, pi2, pi3, pi3+, pi4, pi400, pi5, pi500]
extends_documentation_fragment:
  - homelab.postmortem.remediation
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.pi_ir_tx_facts
'''

EXAMPLES = r'''
- name: Switch the IR transmitter to gpio-ir-tx
  homelab.postmortem.pi_ir_tx_fix:
  register: ir_fix

- name: Fix a mounted SD-card image before flashing it
  homelab.postmortem.pi_ir_tx_fix:
    root: /mnt/sdcard
'''

RETURN = r'''
replacements:
  description: One entry per replaced line.
  returned: always
  type: list
  elements: dict
  sample:
    - file: /boot/firmware/config.txt
      line: 47
      section: "[all]"
      before: dtoverlay=pwm-ir-tx,gpiopin=17,func=2
      after: dtoverlay=gpio-ir-tx,gpio_pin=17
      pin: "17"
      dropped_params: [func=2]
      folded_dtparam_lines: []
files:
  description: Files that were (or in check mode would be) changed.
  returned: always
  type: list
  elements: str
backups:
  description: Backup copies made before writing.
  returned: when changed and not in check mode
  type: list
  elements: str
reboot_required:
  description: Whether the change needs a reboot to take effect (true whenever a file changed).
  returned: always
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_tx_fix as pi_ir_tx_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError
from ansible_collections.homelab.postmortem.plugins.module_utils.hostio import ReadProblem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            board=dict(type='str', choices=sorted(rpi_config.BOARD_FILTERS)),
            backup=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    ctx = AuditContext(root=module.params['root'])
    config_rel = pi_ir_tx.find_config(ctx)
    if not config_rel:
        module.exit_json(changed=False, replacements=[], files=[], reboot_required=False,
                         msg='no config.txt under %s' % ctx.root)
    board = module.params['board'] or rpi_config.board_from_model(pi_ir_tx.read_model(ctx))
    try:
        _config, replacements = pi_ir_tx_fix.plan(config_rel, board, ctx.root)
        changes = pi_ir_tx_fix.rewrite(replacements)
    except (DetectionError, ReadProblem) as exc:
        module.fail_json(msg=str(exc))

    for replacement in replacements:
        if replacement.dropped:
            module.warn('%s: dropped %s: gpio-ir-tx has no such parameter'
                        % (replacement.overlay.line.location(), ', '.join(replacement.dropped)))
    result = dict(
        changed=bool(changes),
        replacements=[r.as_dict() for r in replacements],
        files=sorted(changes),
        reboot_required=bool(changes),
        diff=[dict(before_header=path, after_header=path, before=before, after=after)
              for path, (before, after) in sorted(changes.items())],
    )
    if changes and not module.check_mode:
        result['backups'] = filewrite.write_all(
            module, [(path, before, after) for path, (before, after) in sorted(changes.items())], module.params['backup'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
