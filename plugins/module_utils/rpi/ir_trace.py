# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Probe ir_tx_trace: measure what an IR transmitter really drove, from kernel trace events.

ir-ctl's exit code and duration say nothing (the LIRC core sleeps for the
length of the code whatever the driver did). The pwm/pwm_apply event (for
pwm-ir-tx) or gpio/gpio_value (for gpio-ir-tx) shows every edge the hardware was
told to make, with timestamps. The probe traces into a tracefs instance of its
own, so the system's tracing settings and buffer are never touched, and the
instance is removed afterwards.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import tempfile

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# 10 ms pulse, 10 ms space, 10 ms pulse: 30 ms, far under LIRC's 500 ms limit.
TEST_CODE = (('pulse', 10000), ('space', 10000), ('pulse', 10000))
TEST_CODE_MS = sum(us for _kind, us in TEST_CODE) / 1000.0
CARRIER_HZ = 38000
SEND_TIMEOUT_S = 5
# A healthy transmitter's edges span about the code's length; the 6.18 bug
# collapses a 300 ms code into 7 microseconds. Half the code length separates
# the two with a wide margin either way.
HEALTHY_FRACTION = 0.5
BURST_GAP_MS = 2.0

EVENTS = {
    'pwm-ir-tx': ('pwm', 'pwm_apply'),
    'gpio-ir-tx': ('gpio', 'gpio_value'),
}

_LINE = re.compile(r'^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:(?P<flags>\S+)\s+)?'
                   r'(?P<ts>\d+\.\d+):\s+(?P<event>\w+):\s+(?P<body>.*)$')
_PWM = re.compile(r'enabled=(?P<enabled>[01])')
_GPIO = re.compile(r'^(?P<gpio>\d+)\s+(?P<op>set|get)\s+(?P<value>-?\d+)')


def parse_events(text, event):
    """[(timestamp_seconds, body)] for ``event`` lines of an ftrace text buffer."""
    found = []
    for line in text.splitlines():
        match = _LINE.match(line)
        if match and match.group('event') == event:
            found.append((float(match.group('ts')), match.group('body').strip()))
    return found


def pwm_edges(text):
    """Timestamps at which pwm_apply changed the output's enabled state."""
    edges, last = [], None
    for ts, body in parse_events(text, 'pwm_apply'):
        match = _PWM.search(body)
        if not match:
            continue
        enabled = match.group('enabled')
        if enabled != last:
            edges.append(ts)
            last = enabled
    return edges


def gpio_toggles(text, pin=None):
    toggles, last = [], None
    for ts, body in parse_events(text, 'gpio_value'):
        match = _GPIO.match(body)
        if not match or match.group('op') != 'set':
            continue
        if pin is not None and match.group('gpio') != str(pin):
            continue
        if match.group('value') != last:
            toggles.append(ts)
            last = match.group('value')
    return toggles


def summarise(timestamps, expected_ms=TEST_CODE_MS):
    """Numbers and a verdict: 'ok', 'broken' or 'silent'."""
    result = {'edges': len(timestamps), 'expected_span_ms': expected_ms}
    if not timestamps:
        result.update(span_ms=0.0, verdict='silent')
        return result
    span_ms = (timestamps[-1] - timestamps[0]) * 1000.0
    bursts, start, previous = [], timestamps[0], timestamps[0]
    count = 1
    for ts in timestamps[1:]:
        if (ts - previous) * 1000.0 > BURST_GAP_MS:
            bursts.append({'length_ms': round((previous - start) * 1000.0, 3), 'edges': count})
            start, count = ts, 0
        count += 1
        previous = ts
    bursts.append({'length_ms': round((previous - start) * 1000.0, 3), 'edges': count})
    result.update(span_ms=round(span_ms, 3), span_us=round(span_ms * 1000.0, 1), bursts=bursts,
                  verdict='ok' if span_ms >= HEALTHY_FRACTION * expected_ms else 'broken')
    return result


def measure(text, driver, pin=None):
    if driver == 'gpio-ir-tx':
        return summarise(gpio_toggles(text, pin))
    return summarise(pwm_edges(text))


def find_tracefs(ctx):
    for candidate in ('kernel/tracing', 'kernel/debug/tracing'):
        path = ctx.sys_path(candidate)
        if os.path.isdir(os.path.join(path, 'instances')):
            return path
    return None


def make_instance(tracefs):
    """A private trace buffer (tracefs populates it with events/ on mkdir)."""
    path = os.path.join(tracefs, 'instances', 'postmortem-%d' % os.getpid())
    os.mkdir(path)
    return path


def remove_instance(path):
    os.rmdir(path)  # on tracefs this removes the instance with its buffer and settings


def _write(path, value):
    with open(path, 'w') as handle:
        handle.write(value)


def probe(ctx, transmitter, pin=None):
    """Send the test code through ``transmitter`` and measure the trace. Returns evidence;
    'verdict' is 'ok', 'broken', 'silent' or 'unknown' (with 'reason')."""
    driver = transmitter.get('driver')
    if driver not in EVENTS:
        return {'verdict': 'unknown', 'reason': 'driver %s is not one this probe can trace' % driver}
    if not ctx.is_root:
        return {'verdict': 'unknown', 'reason': 'the ir_tx_trace probe needs root (become: true)'}
    if not transmitter.get('lirc'):
        return {'verdict': 'unknown', 'reason': '%s has no lirc device to send with' % transmitter.get('rc')}
    ir_ctl = ctx.which('ir-ctl')
    if not ir_ctl:
        return {'verdict': 'unknown', 'reason': 'ir-ctl is not installed (Debian package v4l-utils)'}
    tracefs = find_tracefs(ctx)
    if not tracefs:
        return {'verdict': 'unknown', 'reason': 'no tracefs with instances/ under /sys/kernel/tracing or /sys/kernel/debug/tracing'}
    subsystem, event = EVENTS[driver]
    device = transmitter['lirc'][0]
    evidence = {'device': device, 'event': '%s/%s' % (subsystem, event), 'code': ['%s %d' % c for c in TEST_CODE],
                'carrier_hz': CARRIER_HZ}
    try:
        instance = make_instance(tracefs)
    except OSError as exc:
        return dict(evidence, verdict='unknown', reason='cannot create a trace instance: %s' % exc)
    code_file = None
    try:
        enable = os.path.join(instance, 'events', subsystem, event, 'enable')
        if not os.path.exists(enable):
            return dict(evidence, verdict='unknown', reason='this kernel has no %s/%s trace event' % (subsystem, event))
        _write(enable, '1')
        handle, code_file = tempfile.mkstemp(prefix='postmortem-ir-', suffix='.txt')
        with os.fdopen(handle, 'w') as out:
            out.write(''.join('%s %d\n' % c for c in TEST_CODE))
        cmd = [ir_ctl, '-d', device, '--carrier=%d' % CARRIER_HZ, '--send=%s' % code_file]
        try:
            rc, out, err = ctx.runner.run(cmd, timeout=SEND_TIMEOUT_S)
        except HostInputError as exc:
            return dict(evidence, verdict='unknown', reason=str(exc))
        evidence['ir_ctl_rc'] = rc
        if rc != 0:
            return dict(evidence, verdict='unknown', reason='ir-ctl failed (rc %d): %s' % (rc, (err or out).strip()[:200]))
        _write(enable, '0')
        with open(os.path.join(instance, 'trace')) as trace:
            text = trace.read(4 * 1024 * 1024)
        evidence.update(measure(text, driver, pin))
        return evidence
    finally:
        if code_file and os.path.exists(code_file):
            os.unlink(code_file)
        try:
            _write(os.path.join(instance, 'events', subsystem, event, 'enable'), '0')
        except (IOError, OSError):
            pass
        try:
            remove_instance(instance)
        except OSError as exc:
            evidence['cleanup_problem'] = 'trace instance %s was not removed: %s' % (instance, exc)
