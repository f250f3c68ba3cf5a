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
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_trace
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    DetectionError, instance, make_finding)

ID = 'pi_ir_tx'
TITLE = 'Raspberry Pi IR transmitter on pwm-ir-tx sends nothing on kernel 6.18+'
REFERENCES = [
    'https://github.com/raspberrypi/linux/issues/7678',
    'media: pwm-ir-tx: Avoid direct access to hrtimer clockbase (commit 44d7fb8acdf8, first in v6.18)',
]
REMEDIATION = {
    'role': 'homelab.postmortem.pi_ir_tx',
    'vars': {'pi_ir_tx_reboot': True},
    'manual': [
        'In the config.txt section that loads it, replace dtoverlay=pwm-ir-tx[,gpiopin=N] '
        'with dtoverlay=gpio-ir-tx,gpio_pin=N (same pin; pwm-ir-tx defaults to 18).',
        'Reboot, then check that the transmitter is registered by gpio-ir-tx (/sys/class/rc/rc*/uevent).',
    ],
}
# ir_tx_trace sends a 30 ms test code through each transmitter and reads the
# kernel trace of what the hardware was told to do (see ir_trace.py).
PROBES = ('ir_tx_trace',)
SETTINGS = {
    # The upper bound is not known until a fixed kernel ships; users can set it
    # (or narrow the range) without a new release of the collection.
    'affected_from': '6.18',
    'fixed_in': None,
}

PWM_OVERLAY = 'pwm-ir-tx'
GPIO_OVERLAY = 'gpio-ir-tx'
PWM_DEFAULT_PIN = '18'
CONFIG_CANDIDATES = ('/boot/firmware/config.txt', '/boot/config.txt')
MODULE_DIRS = ('/lib/modules', '/usr/lib/modules')

_SELF = sys.modules[__name__]


def _parse_range(settings):
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


def _describe_range(settings):
    text = '>= %s' % settings.get('affected_from')
    if settings.get('fixed_in'):
        text += ', < %s' % settings.get('fixed_in')
    return text


def installed_kernels(ctx):
    found = set()
    for directory in MODULE_DIRS:
        path = ctx.path(directory)
        try:
            entries = os.listdir(path)
        except OSError:
            continue
        for entry in entries:
            if hostio.version_tuple(entry) and os.path.isdir(os.path.join(path, entry)):
                found.add(entry)
    return sorted(found, key=lambda k: (hostio.version_tuple(k), k))


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


def read_board(ctx):
    if not ctx.live:
        return None, None
    model = None
    for candidate in (ctx.sys_path('firmware/devicetree/base/model'), os.path.join(ctx.proc_root, 'device-tree/model')):
        try:
            model = hostio.read_optional_text(candidate)
        except hostio.ReadProblem:
            model = None
        if model:
            model = model.rstrip('\x00')
            break
    return model, rpi_config.board_from_model(model)


def find_config(ctx):
    for candidate in CONFIG_CANDIDATES:
        if os.path.exists(ctx.path(candidate)):
            return candidate
    return None


def _apply_probe(ctx, item):
    """Replace what the kernel version suggests by what the trace measured."""
    measured = ir_trace.probe(ctx, item['evidence'])
    evidence = dict(item['evidence'], probe=measured)
    rc = item['evidence']['rc']
    verdict = measured.get('verdict')
    if verdict == 'broken':
        return instance(item['name'], 'affected',
                        'Measured: %s sent %d edges within %.1f microseconds for a %.0f ms test code.'
                        % (rc, measured['edges'], measured['span_us'], measured['expected_span_ms']), evidence)
    if verdict == 'ok':
        return instance(item['name'], 'ok',
                        'Measured: %s sent %d edges over %.1f ms for a %.0f ms test code.'
                        % (rc, measured['edges'], measured['span_ms'], measured['expected_span_ms']), evidence)
    reason = measured.get('reason') or 'the trace recorded no edges for the test code'
    return instance(item['name'], item['status'], '%s (probe: %s)' % (item['summary'], reason), evidence)


def _overlay_evidence(overlay, board):
    line = overlay.line
    evidence = {
        'file': line.path,
        'line': line.lineno,
        'text': line.text.strip(),
        'section': line.section(),
        'applies': line.applies(board),
        'params': dict((k, v) for k, v in overlay.params),
    }
    if overlay.param_lines:
        evidence['dtparam_lines'] = ['%s: %s' % (p.location(), p.text.strip()) for p in overlay.param_lines]
    if board is None:
        evidence['boards'] = line.boards()
    if overlay.name == PWM_OVERLAY:
        evidence['pin'] = overlay.param('gpiopin', PWM_DEFAULT_PIN)
    elif overlay.name == GPIO_OVERLAY:
        evidence['pin'] = overlay.param('gpio_pin')
    return evidence


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    first, fixed = _parse_range(settings)
    affected_range = _describe_range(settings)

    def in_range(release):
        version = hostio.version_tuple(release or '')
        return bool(version) and hostio.version_in_range(version, first, fixed)

    config_rel = find_config(ctx)
    model, board = read_board(ctx)
    transmitters, tx_problems = registered_transmitters(ctx) if ctx.live else ([], None)
    pwm_tx = [t for t in transmitters if t['driver'] == PWM_OVERLAY]
    gpio_tx = [t for t in transmitters if t['driver'] == GPIO_OVERLAY]

    kernels = installed_kernels(ctx)
    running = ctx.kernel_release if ctx.live else None
    next_boot = kernels[-1] if kernels else running
    evidence = {
        'config': ctx.path(config_rel) if config_rel else None,
        'root': ctx.root,
        'board_model': model,
        'board': board,
        'running_kernel': running,
        'running_kernel_affected': in_range(running) if running else None,
        'installed_kernels': kernels,
        'next_boot_kernel': next_boot,
        'next_boot_kernel_affected': in_range(next_boot) if next_boot else None,
        'affected_kernels': affected_range,
        'transmitters': transmitters,
    }
    if tx_problems:
        evidence['sysfs_problems'] = tx_problems

    overlays = []
    if config_rel:
        config = rpi_config.parse(ctx.path(config_rel))
        overlays = [o for o in config.overlays() if o.name in (PWM_OVERLAY, GPIO_OVERLAY)]
        evidence['files_read'] = config.files
        if config.notes:
            evidence['notes'] = config.notes
    elif not transmitters:
        return make_finding(
            _SELF, 'not_applicable',
            'No Raspberry Pi boot config (%s) and no IR transmitter registered.' % ' or '.join(CONFIG_CANDIDATES),
            evidence=evidence)

    instances = []
    for tx in pwm_tx:
        name = 'transmitter %s (%s)' % (tx['rc'], ', '.join(tx['lirc']) or 'no lirc device')
        if in_range(running):
            instances.append(instance(name, 'affected',
                                      '%s is driven by pwm-ir-tx on kernel %s: codes are sent as a few '
                                      'microsecond edges while ir-ctl reports success.' % (tx['rc'], running), tx))
        elif next_boot and in_range(next_boot):
            instances.append(instance(name, 'at_risk',
                                      '%s is driven by pwm-ir-tx; the next boot runs kernel %s, where it sends nothing.'
                                      % (tx['rc'], next_boot), tx))
        else:
            instances.append(instance(name, 'ok', '%s uses pwm-ir-tx on kernel %s, outside the affected range (%s).'
                                      % (tx['rc'], running, affected_range), tx))
    for tx in gpio_tx:
        instances.append(instance('transmitter %s (%s)' % (tx['rc'], ', '.join(tx['lirc']) or 'no lirc device'), 'ok',
                                  '%s is driven by gpio-ir-tx, which is not affected.' % tx['rc'], tx))
    if 'ir_tx_trace' in ctx.probes and ctx.live:
        instances = [_apply_probe(ctx, item) if item['name'].startswith('transmitter ') else item for item in instances]

    for overlay in overlays:
        line_evidence = _overlay_evidence(overlay, board)
        applies = line_evidence['applies']
        name = 'dtoverlay=%s at %s' % (overlay.name, overlay.line.location())
        if applies == 'no':
            continue
        where = 'on this board' if board else ('on ' + ', '.join(line_evidence.get('boards') or []) if applies == 'maybe' else 'on every board')
        if overlay.name == GPIO_OVERLAY:
            instances.append(instance(name, 'ok', 'gpio-ir-tx on pin %s %s is not affected.' % (line_evidence['pin'], where),
                                      line_evidence))
            continue
        if pwm_tx and in_range(running):
            status, summary = 'affected', ('pwm-ir-tx on pin %s is loaded on kernel %s and sends nothing usable.'
                                           % (line_evidence['pin'], running))
        elif next_boot and in_range(next_boot):
            status, summary = 'at_risk', ('pwm-ir-tx on pin %s %s will send nothing after booting kernel %s.'
                                          % (line_evidence['pin'], where, next_boot))
        elif not kernels and not running:
            status, summary = 'unknown', ('pwm-ir-tx on pin %s %s: no kernel found under %s to compare with %s.'
                                          % (line_evidence['pin'], where, ' or '.join(MODULE_DIRS), affected_range))
        else:
            status, summary = 'ok', ('pwm-ir-tx on pin %s; kernel %s is outside the affected range (%s).'
                                     % (line_evidence['pin'], next_boot, affected_range))
        if applies == 'maybe' and status in ('affected', 'at_risk') and board is not None:
            summary += ' (only when %s holds)' % line_evidence['section']
        instances.append(instance(name, status, summary, line_evidence))

    if not instances:
        return make_finding(_SELF, 'not_applicable',
                            'No IR transmitter is configured or registered.', evidence=evidence)
    worst = [i for i in instances if i['status'] in ('affected', 'at_risk', 'unknown')]
    if pwm_tx and not any(o.name == PWM_OVERLAY for o in overlays) and any(i['status'] == 'affected' for i in instances):
        summary = ('pwm-ir-tx still runs on kernel %s, but config.txt no longer loads it: reboot to switch '
                   'to gpio-ir-tx.' % running)
    elif any(i['status'] == 'affected' for i in instances):
        summary = 'pwm-ir-tx transmitter runs on affected kernel %s: IR codes are not sent.' % running
    elif any(i['status'] == 'at_risk' for i in instances):
        summary = 'pwm-ir-tx is configured; kernel %s (next boot) is affected: IR will stop working.' % next_boot
    elif worst:
        summary = worst[0]['summary']
    else:
        summary = 'IR transmitters are not affected (%s).' % '; '.join(i['summary'] for i in instances[:2])
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
