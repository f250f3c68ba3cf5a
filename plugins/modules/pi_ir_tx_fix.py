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
  - Rewrites every C(dtoverlay=pwm-ir-tx[,params]) line that applies to this board as
    C(dtoverlay=gpio-ir-tx,gpio_pin=N), N being the line's C(gpio_pin) (both overlays default to 18).
    C(config.txt) (C(/boot/firmware/config.txt), else C(/boot/config.txt)) is read as the firmware
    reads it, the lines the C(pi_ir_tx) detection judges, each edited in its own file, C(include)
    files too - an C(include) is its file's text inserted in place, filters evaluated in order - and
    overlay and include names without case (the FAT boot partition has none).
  - Every parameter keeps its meaning. C(gpio_pin) means the same pin for both overlays and stays
    where it is written, C(dtparam=gpio_pin=...) lines after the overlay included. C(func), the
    pin's PWM function, has no meaning for gpio-ir-tx and is dropped from the line and from the
    C(dtparam=) lines in its scope (a line left empty is commented out); dropped parameters are
    listed in RV(replacements) and a warning. Other parameters go to the base device tree before and
    after, and stay.
  - The task fails and changes no file, naming the line and the reason, where a change would alter
    what a line means or the pin is not known - C(invert) (gpio-ir-tx has it, pwm-ir-tx does not, so
    it would start inverting), a misspelt parameter (C(gpiopin), C(GPIO_PIN) - never the pin for the
    firmware), a C(#) after the overlay name, a C(dtparam=func) line that also belongs to another
    overlay or the base device tree, a C(gpio_pin) that is not a number - and for a config that is not
    text, an unreadable include or an include loop.
  - Only the changed lines change; line endings, a missing final newline, comments and every
    other line are kept byte for byte. Each file is backed up first and written atomically.
  - Nothing takes effect until the next boot; see the P(homelab.postmortem.pi_ir_tx#role) role for
    reboot handling.
  - "With O(trial) on a Raspberry Pi 4 or 5 whose bootloader reports tryboot support, the change is
    written as C(tryboot.txt) instead (included files it changes as C(<name>.tryboot.txt), with the
    include lines on the way pointing at them), for one boot with C(reboot '0 tryboot'):
    C(config.txt) is not touched. O(step=verify) then says whether this boot is that trial boot
    (C(/chosen/bootloader/tryboot) is 1) and runs gpio-ir-tx, O(step=promote) writes the same change
    to C(config.txt) and removes the trial files, O(step=discard) only removes them."
  - Every file is written through the collection's crash-safe path (docs/crash-safety.md).
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
  step:
    description:
      - V(write) plans and writes the change (to C(config.txt), or to the trial files, see O(trial)).
      - V(verify) changes nothing and returns RV(trial_boot), RV(transmitters) and RV(problems) (empty when this
        boot is the trial boot and a gpio-ir-tx transmitter and no pwm-ir-tx one is registered).
      - V(promote) fails unless V(verify) finds no problem and the trial files are what the change gives now;
        then writes the change to C(config.txt) and its includes and removes the trial files.
      - V(discard) removes the trial files this module wrote (never another program's C(tryboot.txt)).
    type: str
    choices: [write, verify, promote, discard]
    default: write
  trial:
    description:
      - For O(step=write) on a live host (O(root=/)). V(never) writes C(config.txt).
      - V(auto) writes the trial files where the trial boot is supported (Raspberry Pi 4 or 5 by the device
        tree's model, C(/chosen/bootloader/tryboot) present and, where the bootloader reports
        C(capabilities), its TRYBOOT bit; no C(tryboot_a_b=1) in C(autoboot.txt)) and C(config.txt) on a
        board without the trial boot (a Pi 3, a Zero), saying why in RV(trial_reason). A Raspberry Pi 4 or 5
        that cannot do the trial (an old bootloader, C(tryboot_a_b=1)) fails, changing nothing; set V(never)
        there to write C(config.txt) directly.
      - V(always) fails, changing nothing, where it is not supported.
      - A C(tryboot.txt) this module did not write (another updater's pending trial) fails the task.
    type: str
    choices: [never, auto, always]
    default: never
  device_tree:
    description: The running device tree (the board's model, /chosen/bootloader); a test fixture elsewhere.
    type: path
    default: /proc/device-tree
  sysfs:
    description: Where sysfs is mounted, for the transmitters O(step=verify) reads; a test fixture elsewhere.
    type: path
    default: /sys
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.diff
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

- name: Write the change as tryboot.txt where the Pi can boot it once (config.txt elsewhere)
  homelab.postmortem.pi_ir_tx_fix:
    trial: auto
  register: ir_fix

- name: After "reboot '0 tryboot'", make it permanent (fails, changing nothing, unless the trial boot runs gpio-ir-tx)
  homelab.postmortem.pi_ir_tx_fix:
    step: promote
  when: ir_fix.trial
'''

RETURN = r'''
replacements:
  description: One entry per replaced line.
  returned: always
  type: list
  elements: dict
  sample:
    - file: /boot/firmware/ir.txt
      line: 2
      included_from: [/boot/firmware/config.txt:51]
      section: "[pi4]"
      filters: ["[pi4] at /boot/firmware/config.txt:50"]
      before: dtoverlay=pwm-ir-tx,gpio_pin=17,func=2
      after: dtoverlay=gpio-ir-tx,gpio_pin=17
      pin: "17"
      pin_set_at: [/boot/firmware/ir.txt:2]
      dropped_params: [func=2]
      dtparam_lines: []
files:
  description: Files that were (or in check mode would be) changed.
  returned: always
  type: list
  elements: str
reboot_required:
  description: Whether the change needs a reboot to take effect (true whenever a file changed).
  returned: always
  type: bool
trial:
  description: Whether the change was written as trial files (C(tryboot.txt)) instead of C(config.txt).
  returned: always
  type: bool
trial_reason:
  description: Why the trial boot is or is not used on this host.
  returned: always
  type: str
  sample: "board pi3: the trial boot is used on Raspberry Pi 4 and 5 (EEPROM bootloader) only"
trial_files:
  description: The trial files written (or, in check mode, that would be written) or removed.
  returned: always
  type: list
  elements: str
trial_boot:
  description: Whether this boot is a trial boot (C(/chosen/bootloader/tryboot) is 1).
  returned: always
  type: bool
transmitters:
  description: With O(step=verify) or O(step=promote), the IR transmitters the running kernel registered.
  returned: when step is verify or promote
  type: list
  elements: dict
problems:
  description: With O(step=verify) or O(step=promote), why the trial boot cannot be promoted (empty when it can).
  returned: when step is verify or promote
  type: list
  elements: str
diff:
  description:
    - One entry per file written or removed, with its path as C(before_header) and C(after_header) and its whole
      text before and after (empty for a file created or removed). Only the replaced lines, and the C(dtparam=)
      lines that lose C(func), differ.
    - With O(step=write), C(config.txt) and the C(include) files that have a replaced line or, with a trial,
      C(tryboot.txt) and the C(<name>.tryboot.txt) files. With O(step=promote), C(config.txt) and its includes, and
      the trial files removed. With O(step=discard), the trial files removed. Empty with O(step=verify).
  returned: always
  type: list
  elements: dict
  sample:
    - before_header: /boot/firmware/config.txt
      after_header: /boot/firmware/config.txt
      before: "[pi4]\ndtoverlay=pwm-ir-tx,gpio_pin=17,func=2\n"
      after: "[pi4]\ndtoverlay=gpio-ir-tx,gpio_pin=17\n"
backups:
  description:
    - With O(step=write) without a trial, and with O(step=promote), the copy of each C(config.txt) and include file
      that was changed, written beside it on the boot partition before it was replaced and named
      C(<name>.<UTC time>.bak).
    - The trial files are this module's own and are never backed up, neither when written nor when O(step=promote)
      or O(step=discard) removes them. Empty with O(backup=false), in check mode and when no file changed.
  returned: always
  type: list
  elements: str
  sample: [/boot/firmware/config.txt.20261201T131512Z.bak]
verified:
  description:
    - With O(step=write), O(step=promote) and O(step=discard), whether every file written reads back with exactly the
      planned text and every file removed is gone. False in check mode and when no file needed a change.
    - With O(step=verify), whether this boot passed every check (RV(problems) is empty), that is, it is the trial
      boot, the running kernel registered a gpio-ir-tx transmitter and no pwm-ir-tx one, and the trial files are
      still what the change gives now.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When a file did not read back as planned, whether every file of the run was put back. C(config.txt), its
      includes and the trial files are written again with the text they had, trial files the run removed are
      written back, and trial files it created are removed. Nothing takes effect before a reboot either way.
    - When a write fails part way, the files it had already replaced are put back; true when there were any and every
      one is back, and RV(msg) names them.
    - False on every other failure. A line that cannot be replaced, a promotion with RV(problems) or another
      updater's C(tryboot.txt) fails before any file is touched.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - "C(no config.txt under) and O(root) when there is none. Otherwise C(changed, and read back as planned),
      C(nothing to change) (no line to replace, and always with O(step=verify)), or in check mode
      C(check mode: the diff is what would change; nothing was changed)."
    - On a failure, the line or file and the reason, or why the trial boot cannot be promoted.
    - "When C(config.txt), an include or a trial file is on a read-only mount (a write-protected boot partition),
      check mode adds C(; it cannot be written now: mounted read-only: <mount> (<files>)) and what to do, and a run
      fails with that text and C(; nothing was changed) before any file is touched."
  returned: always
  type: str
  sample: changed, and read back as planned
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_tx_fix as pi_ir_tx_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import tryboot
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError
from ansible_collections.homelab.postmortem.plugins.module_utils.hostio import ReadProblem

FixFailed = fix_protocol.FixFailed


def _trial_problems(ctx, device_tree, trial_paths, expected):
    """Why this boot cannot be promoted; the transmitters it registered."""
    problems = []
    if not tryboot.is_trial_boot(device_tree):
        problems.append('this boot is not a trial boot (%s/chosen/bootloader/tryboot is not 1): the firmware read '
                        'config.txt, not tryboot.txt' % device_tree)
    transmitters, tx_problems = pi_ir_tx.registered_transmitters(ctx)
    problems.extend(tx_problems or [])
    drivers = [t.get('driver') for t in transmitters]
    if 'pwm-ir-tx' in drivers:
        problems.append('a pwm-ir-tx transmitter is registered on the trial boot')
    if 'gpio-ir-tx' not in drivers:
        problems.append('no gpio-ir-tx transmitter is registered on the trial boot')
    for path in trial_paths:
        try:
            current = hostio.read_text(path)
        except ReadProblem as problem:
            problems.append('%s %s' % (path, problem.reason))
            continue
        if expected is not None and current != expected.get(path):
            problems.append('%s is not the trial of the change config.txt needs now (config.txt changed since the '
                            'trial?)' % path)
    return problems, transmitters


def _removals(paths):
    """[(path, its text, None)]: the files to remove, with what a roll back writes back."""
    removals = []
    for path in paths:
        try:
            removals.append((path, hostio.read_text(path), None))
        except ReadProblem as problem:
            if problem.kind != 'missing':
                raise FixFailed('%s %s; nothing was changed' % (path, problem.reason))
    return removals


# Where Raspberry Pi OS mounts the boot partition (Bookworm and later; before).
BOOT_MOUNTS = ('/boot/firmware', '/boot')


class PiIrTxFix(fix_protocol.Fix):
    """One step of the fix (write, verify, promote, discard) as a plan of files to write and remove; the
    protocol writes them (config.txt and its includes backed up), reads them back and puts them back."""

    def __init__(self, ctx, step, trial, board=None, device_tree='/proc/device-tree', backup=True, check_mode=False):
        self.ctx = ctx
        # Only for the words: check mode says what would be written (the protocol writes nothing then).
        self.check_mode = check_mode
        self.step = step
        self.trial_mode = trial
        self.board = board
        self.device_tree = device_tree
        self.backup = backup
        self.live = ctx.root == '/'

    def read_only_hint(self, mount):
        hint = 'remount it read-write for this run (mount -o remount,rw %s) and run again' % mount
        if self.live and mount in BOOT_MOUNTS:
            # raspi-config (RPi-Distro/raspi-config 9c55e7b, raspi-config l.3080-3094): enable_bootro adds ",ro"
            # to the boot partition's /etc/fstab line, disable_bootro removes it and refuses while the overlay is on.
            hint += ("; Raspberry Pi OS write-protects it when raspi-config's boot partition protection is on "
                     "(',ro' in /etc/fstab: raspi-config nonint disable_bootro and a reboot turn it off, "
                     "refused while its overlay file system is on)")
        return hint

    def plan(self):
        ctx = self.ctx
        config_rel = pi_ir_tx.find_config(ctx)
        if not config_rel:
            return fix_protocol.Plan(result=dict(replacements=[], files=[], reboot_required=False, trial=False,
                                                 trial_reason='no config.txt', trial_files=[], trial_boot=False),
                                     msg='no config.txt under %s' % ctx.root)
        model = pi_ir_tx.read_model(ctx) if self.live else None
        tree_model = os.path.join(self.device_tree, 'model')
        if self.live and os.path.exists(tree_model):
            model = (hostio.read_optional_text(tree_model) or '').rstrip('\x00')
        board = self.board or rpi_config.board_from_model(model)
        try:
            _config, replacements = pi_ir_tx_fix.plan(config_rel, board, ctx.root)
            changes = pi_ir_tx_fix.rewrite(replacements)
        except (DetectionError, ReadProblem) as exc:
            raise FixFailed(str(exc))
        top = ctx.path(config_rel)
        boot_dir = os.path.dirname(top)
        supported, reason = tryboot.support(self.device_tree, boot_dir, board) if self.live else (
            False, 'an image is never booted here')
        trial_boot = self.live and tryboot.is_trial_boot(self.device_tree)
        result = dict(replacements=[r.as_dict() for r in replacements], files=[], reboot_required=False,
                      trial=False, trial_reason=reason, trial_files=[], trial_boot=trial_boot)
        try:
            expected = tryboot.trial_files(top, changes) if changes else {}
        except tryboot.Refused:
            expected = {}
        except (ReadProblem, DetectionError) as exc:
            raise FixFailed('cannot build the trial configuration: %s' % exc, **result)
        ours = [p for p in sorted(set(list(expected) + [os.path.join(boot_dir, tryboot.TRYBOOT_FILE)]))
                if tryboot.ours(p)]
        writes = [(path, before, after) for path, (before, after) in sorted(changes.items())]
        if self.step in ('verify', 'promote'):
            return self._promote(result, writes, expected, ours)
        if self.step == 'discard':
            result.update(trial_files=ours)
            return fix_protocol.Plan(writes=_removals(ours), result=result, backup=False)
        dropped = 'would drop' if self.check_mode else 'dropped'
        warnings = ['%s: %s %s: gpio-ir-tx has no such parameter'
                    % (r.overlay.line.where(), dropped, ', '.join(r.dropped)) for r in replacements if r.dropped]
        return self._write(result, writes, expected, supported, config_rel, warnings, board)

    def _promote(self, result, writes, expected, ours):
        problems, transmitters = _trial_problems(self.ctx, self.device_tree, sorted(expected), expected)
        if not expected:
            problems.append('config.txt needs no change: there is nothing to promote')
        result.update(problems=problems, transmitters=transmitters, trial_files=sorted(expected))
        if self.step == 'verify':
            result['verified'] = not problems
            return fix_protocol.Plan(result=result)
        if problems:
            raise FixFailed('not promoted, nothing was changed: %s' % '; '.join(problems), **result)
        # The change itself (config.txt and its includes, backed up), then the trial files, this fix's own.
        result.update(files=[path for path, _b, _a in writes], reboot_required=False)
        return fix_protocol.Plan(writes=writes + _removals(ours), result=result, backup=self.backup)

    def _write(self, result, writes, expected, supported, config_rel, warnings, board):
        reason = result['trial_reason']
        written = 'would be written' if self.check_mode else 'is written'
        if self.trial_mode != 'never' and not self.live:
            reason = 'an image is never booted here: %s %s directly' % (config_rel, written)
        use_trial = bool(writes) and self.live and self.trial_mode != 'never' and supported
        if writes and self.trial_mode == 'always' and not use_trial:
            raise FixFailed('no trial boot on this host (trial: always), nothing was changed: %s' % reason, **result)
        if writes and self.trial_mode == 'auto' and self.live and not supported and board in tryboot.TRYBOOT_BOARDS:
            # A Pi 4 or 5 is the board that should try a new config.txt once; one that cannot (an old bootloader,
            # tryboot_a_b) is where an untested config is most dangerous, so auto refuses as docs/pi_ir_tx.md says (#45).
            raise FixFailed('no trial boot on this %s (trial: auto), nothing was changed: %s; update the bootloader '
                            '(rpi-eeprom-update) or, to change config.txt directly and reboot into it untried, set the '
                            'trial to never' % (board, reason), **result)
        if not use_trial:
            if self.trial_mode == 'auto' and writes and not supported:
                reason += '; config.txt %s directly' % written
            result.update(trial_reason=reason, files=[path for path, _b, _a in writes], reboot_required=bool(writes))
            return fix_protocol.Plan(writes=writes, result=result, backup=self.backup, warnings=warnings)
        trial_writes = []
        for path, text in sorted(expected.items()):
            if tryboot.ours(path) is False:
                raise FixFailed('%s exists and was not written by this fix (another updater\'s pending trial?); '
                                'nothing was changed' % path, **result)
            try:
                before = hostio.read_text(path) if os.path.exists(path) else None
            except ReadProblem as exc:
                raise FixFailed(str(exc), **result)
            trial_writes.append((path, before, text))
        result.update(trial=True, trial_files=sorted(expected), reboot_required=True,
                      files=[path for path, before, after in trial_writes if before != after])
        # Trial files are this fix's own: nothing of the user's to back up.
        return fix_protocol.Plan(writes=trial_writes, result=result, backup=False, warnings=warnings)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            board=dict(type='str', choices=sorted(rpi_config.BOARD_FILTERS)),
            backup=dict(type='bool', default=True),
            step=dict(type='str', default='write', choices=['write', 'verify', 'promote', 'discard']),
            trial=dict(type='str', default='never', choices=['never', 'auto', 'always']),
            device_tree=dict(type='path', default='/proc/device-tree'),
            sysfs=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['step'] != 'write' and params['root'] != '/':
        module.fail_json(msg='step=%s is for the running Pi (root /); an image is never booted here' % params['step'])
    ctx = AuditContext(root=params['root'], sys_root=params['sysfs'])
    fix_protocol.run(module, PiIrTxFix(ctx, params['step'], params['trial'], params['board'], params['device_tree'],
                                       params['backup'], check_mode=module.check_mode))


if __name__ == '__main__':
    main()
