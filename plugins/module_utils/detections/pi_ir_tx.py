# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pi_ir_tx: an IR transmitter on dtoverlay=pwm-ir-tx sends nothing on kernel 6.18+.

From 6.18 the driver's hrtimer callback applies every edge of a code at once
(4 PWM edges within 7 microseconds for a 300 ms code) while ir-ctl exits 0 and
takes the right time. This detection reads the boot config, the kernels and the
transmitters the kernel registered; it changes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    DetectionError, make_finding, make_remediation)


CONFIG_CANDIDATES = ('/boot/firmware/config.txt', '/boot/config.txt')


def parse_range(settings):
    first = hostio.version_tuple(str(settings.get('affected_from') or ''))
    if first is None:
        raise DetectionError('setting affected_from=%r is not a kernel version' % (settings.get('affected_from'),))
    fixed = settings.get('fixed_in')
    fixed_tuple = None
    if fixed not in (None, ''):
        fixed_tuple = hostio.version_tuple(str(fixed))
        if fixed_tuple is None:
            raise DetectionError('setting fixed_in=%r is not a kernel version' % (fixed,))
    return first, fixed_tuple


def registered_transmitters(ctx):
    """IR devices the running kernel registered, with the driver behind each."""
    rc_dir = ctx.sys_path('class/rc')
    try:
        entries = sorted(os.listdir(rc_dir))
    except OSError:
        return [], None
    devices, problems = [], []
    for entry in entries:
        base = os.path.join(rc_dir, entry)
        try:
            uevent = hostio.read_optional_text(os.path.join(base, 'uevent')) or ''
        except hostio.ReadProblem as problem:
            problems.append('%s: %s' % (entry, problem.reason))
            continue
        values = dict(line.split('=', 1) for line in uevent.splitlines() if '=' in line)
        driver = values.get('DRV_NAME')
        if not driver:
            link = os.path.join(base, 'device', 'driver')
            driver = os.path.basename(os.path.realpath(link)) if os.path.islink(link) else None
        lirc = sorted(name for name in _listdir(base) if name.startswith('lirc'))
        devices.append({
            'rc': entry,
            'driver': driver,
            'device_name': values.get('DEV_NAME'),
            'lirc': ['/dev/%s' % name for name in lirc],
        })
    return devices, problems or None


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def read_model(ctx):
    """The board's model string from the device tree ('' when the files are empty), or None (an image
    has no running board, or neither file can be read)."""
    if not ctx.live:
        return None
    model = None
    for candidate in (ctx.sys_path('firmware/devicetree/base/model'), os.path.join(ctx.proc_root, 'device-tree/model')):
        try:
            model = hostio.read_optional_text(candidate)
        except hostio.ReadProblem:
            model = None
        if model:
            return model.rstrip('\x00')
    return model


def find_config(ctx):
    """The boot config's path on the audited system. A config.txt that is a dangling or looping
    link counts as present, so reading it reports the problem instead of "no boot config"."""
    for candidate in CONFIG_CANDIDATES:
        parent = ctx.path(os.path.dirname(candidate))
        if os.path.lexists(os.path.join(parent, os.path.basename(candidate))):
            return candidate
    return None


def _first_question(ctx, detection, settings):
    kernel_range = parse_range(settings)  # a setting that is no kernel version is an error on every host, Pi or not
    config_rel = find_config(ctx)
    model = read_model(ctx)
    transmitters, tx_problems = registered_transmitters(ctx) if ctx.live else ([], None)
    if not config_rel and not transmitters:
        # Not a Pi: kernel ranges would only suggest it is affected by something it cannot have.
        return make_finding(
            detection, 'not_applicable',
            'No Raspberry Pi boot config (%s) and no IR transmitter registered.' % ' or '.join(CONFIG_CANDIDATES),
            evidence={'root': ctx.root, 'config': None, 'board_model': model})
    return Found(kernel_range=kernel_range, config_rel=config_rel, model=model, transmitters=transmitters,
                 tx_problems=tx_problems)


def _verdict():
    # A boot config or a transmitter: the config parser and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import pi_ir_tx as verdict
    return verdict


DETECTION = Detection(
    'pi_ir_tx',
    group='pi',
    title='Raspberry Pi IR transmitter on pwm-ir-tx sends nothing on kernel 6.18+',
    # Reads config.txt and /lib/modules, so an SD-card image can be audited too.
    applies={'image': True, 'binary': None, 'root': None},
    references=[
        'https://github.com/raspberrypi/linux/issues/7678',
        'media: pwm-ir-tx: Avoid direct access to hrtimer clockbase (commit 44d7fb8acdf8, first in v6.18)',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.pi_ir_tx',
        role_vars={'pi_ir_tx_reboot': True},
        manual=[
            'Where config.txt loads it (the file and line the finding names; include files too), replace '
            'dtoverlay=pwm-ir-tx[,gpio_pin=N][,func=F] with dtoverlay=gpio-ir-tx,gpio_pin=N (same pin; both default '
            'to 18) and remove func from dtparam= lines after it.',
            'Reboot, then check that the transmitter is registered by gpio-ir-tx (/sys/class/rc/rc*/uevent).',
        ],
        disruption='reboot',
    ),
    # ir_tx_trace sends a 30 ms test code through each transmitter and reads the
    # kernel trace of what the hardware was told to do (see ir_trace.py).
    probes=('ir_tx_trace',),
    # The upper bound is not known until a fixed kernel ships; users can set it
    # (or narrow the range) without a new release of the collection.
    settings={
        'affected_from': {'type': 'version', 'default': '6.18',
                          'description': 'First kernel version whose pwm-ir-tx sends nothing.'},
        'fixed_in': {'type': 'version', 'default': None,
                     'description': 'First kernel version with the fix; unset while upstream has none.'},
    },
    question=_first_question,
    verdict=_verdict,
)
