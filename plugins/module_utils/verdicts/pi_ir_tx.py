# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pi_ir_tx's verdict: the code that judges what the detection's first question found.

detections/pi_ir_tx.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import config as rpi_config
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    instance, make_finding, make_remediation)
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi.ir_overlays import (
    GPIO_OVERLAY, GPIO_PARAMS, GPIO_PIN_DEFAULT_SOURCE, PWM_DEFAULT_PIN, PWM_OVERLAY, PWM_PARAMS,
    PWM_PIN_DEFAULT_SOURCE, is_gpio_number)

MODULE_DIRS = ('/lib/modules', '/usr/lib/modules')


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


def _apply_probe(ctx, item):
    """Replace what the kernel version suggests by what the trace measured."""
    # Imported here, when a probe runs: probes are opt-in, and every module the audit imports is
    # compiled from the payload on every host, every run.
    from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_trace
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
    """Where the line is in the stream the firmware reads, what is in force there, and the pin it sets."""
    line = overlay.line
    evidence = {
        'file': line.path,
        'line': line.lineno,
        'text': line.text.strip(),
        'section': line.section(),
        'filters': line.conditions.origins(),
        'applies': line.applies(board),
        'params': dict((p.key, p.value) for p in overlay.params),
    }
    if line.included_from:
        evidence['included_from'] = list(line.included_from)
    if overlay.written != overlay.name:
        evidence['name_as_written'] = overlay.written
    if overlay.param_lines:
        evidence['dtparam_lines'] = ['%s: %s' % (p.location(), p.text.strip()) for p in overlay.param_lines]
    if board is None:
        evidence['boards'] = line.boards()
    if overlay.name == PWM_OVERLAY:
        evidence['pin'], evidence['pin_set_at'] = overlay.setting('gpio_pin', PWM_DEFAULT_PIN, PWM_PIN_DEFAULT_SOURCE)
        misspelt = overlay.near_misses(PWM_PARAMS)
    else:
        evidence['pin'], evidence['pin_set_at'] = overlay.setting('gpio_pin', PWM_DEFAULT_PIN, GPIO_PIN_DEFAULT_SOURCE)
        misspelt = overlay.near_misses(GPIO_PARAMS)
    if misspelt:
        evidence['not_overlay_params'] = ['%s at %s (not %s: the firmware compares parameter names exactly)'
                                          % (p.text(), p.line.location(), meant) for p, meant in misspelt]
    return evidence


def _describe_place(overlay, evidence):
    """What the summary adds about how the firmware comes to load this line, when it is not plain."""
    notes = []
    if 'name_as_written' in evidence:
        notes.append('written %s: the firmware loads overlays/%s.dtbo from the FAT boot partition, where names '
                     'have no case' % (overlay.written, overlay.name))
    if overlay.line.included_from:
        notes.append('inserted by include at %s' % ' -> '.join(overlay.line.included_from))
    if evidence.get('not_overlay_params'):
        notes.append('%s is not a parameter of %s, so the pin is %s (%s)'
                     % (', '.join(p.split(' at ')[0] for p in evidence['not_overlay_params']), overlay.name,
                        evidence['pin'], evidence['pin_set_at']))
    return ' (%s)' % '; '.join(notes) if notes else ''


class _Kernels(object):
    """The running and next-boot kernels and whether each is in the affected range."""

    def __init__(self, ctx, settings, kernel_range):
        self.first, self.fixed = kernel_range
        self.range_text = _describe_range(settings)
        self.installed = installed_kernels(ctx)
        self.running = ctx.kernel_release if ctx.live else None
        self.next_boot = self.installed[-1] if self.installed else self.running

    def affected(self, release):
        version = hostio.version_tuple(release or '')
        return bool(version) and hostio.version_in_range(version, self.first, self.fixed)


def _transmitter_name(tx):
    return 'transmitter %s (%s)' % (tx['rc'], ', '.join(tx['lirc']) or 'no lirc device')


def _transmitter_instances(ctx, kernels, pwm_tx, gpio_tx):
    """One instance per transmitter the running kernel registered (measured when the probe runs)."""
    found = []
    for tx in pwm_tx:
        name = _transmitter_name(tx)
        if kernels.affected(kernels.running):
            found.append(instance(name, 'affected',
                                  '%s is driven by pwm-ir-tx on kernel %s: codes are sent as a few '
                                  'microsecond edges while ir-ctl reports success.' % (tx['rc'], kernels.running), tx))
        elif kernels.next_boot and kernels.affected(kernels.next_boot):
            found.append(instance(name, 'at_risk',
                                  '%s is driven by pwm-ir-tx; the next boot runs kernel %s, where it sends nothing.'
                                  % (tx['rc'], kernels.next_boot), tx))
        else:
            found.append(instance(name, 'ok', '%s uses pwm-ir-tx on kernel %s, outside the affected range (%s).'
                                  % (tx['rc'], kernels.running, kernels.range_text), tx))
    for tx in gpio_tx:
        found.append(instance(_transmitter_name(tx), 'ok', '%s is driven by gpio-ir-tx, which is not affected.' % tx['rc'], tx))
    if 'ir_tx_trace' in ctx.probes and ctx.live:
        found = [_apply_probe(ctx, item) for item in found]
    return found


def _overlay_instance(overlay, board, kernels, pwm_running):
    """The instance for one dtoverlay line, or None when its section never applies to this board."""
    line_evidence = _overlay_evidence(overlay, board)
    applies = line_evidence['applies']
    if applies == 'no':
        return None
    name = 'dtoverlay=%s at %s' % (overlay.name, overlay.line.location())
    pin = line_evidence['pin']
    if not is_gpio_number(pin):
        return instance(name, 'error', '%s: gpio_pin=%r (set at %s) is not a GPIO number; the overlay cannot load '
                        'as written.' % (name, pin, line_evidence['pin_set_at']), line_evidence)
    if board:
        where = 'on this board'
    elif applies == 'maybe':
        where = 'on ' + ', '.join(line_evidence.get('boards') or [])
    else:
        where = 'on every board'
    if overlay.name == GPIO_OVERLAY:
        return instance(name, 'ok', 'gpio-ir-tx on pin %s %s is not affected.' % (pin, where), line_evidence)
    if pwm_running and kernels.affected(kernels.running):
        status, summary = 'affected', ('pwm-ir-tx on pin %s is loaded on kernel %s and sends nothing usable.'
                                       % (pin, kernels.running))
    elif kernels.next_boot and kernels.affected(kernels.next_boot):
        status, summary = 'at_risk', ('pwm-ir-tx on pin %s %s will send nothing after booting kernel %s.'
                                      % (pin, where, kernels.next_boot))
    elif not kernels.installed and not kernels.running:
        status, summary = 'unknown', ('pwm-ir-tx on pin %s %s: no kernel found under %s to compare with %s.'
                                      % (pin, where, ' or '.join(MODULE_DIRS), kernels.range_text))
    else:
        status, summary = 'ok', ('pwm-ir-tx on pin %s; kernel %s is outside the affected range (%s).'
                                 % (pin, kernels.next_boot, kernels.range_text))
    if applies == 'maybe' and status in ('affected', 'at_risk') and board is not None:
        summary += ' (only when %s holds)' % line_evidence['section']
    return instance(name, status, summary + _describe_place(overlay, line_evidence), line_evidence)


def _summary(instances, kernels, pwm_tx, overlays):
    statuses = set(i['status'] for i in instances)
    if pwm_tx and not any(o.name == PWM_OVERLAY for o in overlays) and 'affected' in statuses:
        return ('pwm-ir-tx still runs on kernel %s, but config.txt no longer loads it: reboot to switch '
                'to gpio-ir-tx.' % kernels.running)
    if 'affected' in statuses:
        return 'pwm-ir-tx transmitter runs on affected kernel %s: IR codes are not sent.' % kernels.running
    if 'at_risk' in statuses:
        return 'pwm-ir-tx is configured; kernel %s (next boot) is affected: IR will stop working.' % kernels.next_boot
    for status in ('error', 'unknown'):
        if status in statuses:
            return [i for i in instances if i['status'] == status][0]['summary']
    return 'IR transmitters are not affected (%s).' % '; '.join(i['summary'] for i in instances[:2])


def judge(ctx, detection, settings, kernel_range, config_rel, model, transmitters, tx_problems):
    kernels = _Kernels(ctx, settings, kernel_range)
    board = rpi_config.board_from_model(model)
    pwm_tx = [t for t in transmitters if t['driver'] == PWM_OVERLAY]
    gpio_tx = [t for t in transmitters if t['driver'] == GPIO_OVERLAY]
    evidence = {
        'config': ctx.path(config_rel) if config_rel else None,
        'root': ctx.root,
        'board_model': model,
        'board': board,
        'running_kernel': kernels.running,
        'running_kernel_affected': kernels.affected(kernels.running) if kernels.running else None,
        'installed_kernels': kernels.installed,
        'next_boot_kernel': kernels.next_boot,
        'next_boot_kernel_affected': kernels.affected(kernels.next_boot) if kernels.next_boot else None,
        'affected_kernels': kernels.range_text,
        'transmitters': transmitters,
    }
    if tx_problems:
        evidence['sysfs_problems'] = tx_problems

    if not ctx.live:
        # An image is fixed by editing its files; there is nothing to reboot.
        # The role fixes the image the audit read: its pi_ir_tx_root defaults to the user's postmortem_root
        # (the controller never takes a path from a finding).
        fix = make_remediation(role='homelab.postmortem.pi_ir_tx',
                               manual=detection.REMEDIATION['manual'][:1], disruption='none')
    else:
        fix = None
    overlays = []
    if config_rel:
        config = rpi_config.parse(config_rel, ctx.root)
        overlays = [o for o in config.overlays(board) if o.name in (PWM_OVERLAY, GPIO_OVERLAY)]
        evidence['files_read'] = config.files
        if config.notes:
            evidence['notes'] = config.notes

    instances = _transmitter_instances(ctx, kernels, pwm_tx, gpio_tx)
    for overlay in overlays:
        found = _overlay_instance(overlay, board, kernels, bool(pwm_tx))
        if found is not None:
            instances.append(found)
    if not instances:
        return make_finding(detection, 'not_applicable',
                            'No IR transmitter is configured or registered.', evidence=evidence)
    return make_finding(detection, 'ok', _summary(instances, kernels, pwm_tx, overlays), evidence=evidence, instances=instances,
                        remediation=fix)
