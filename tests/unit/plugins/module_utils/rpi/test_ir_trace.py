"""ir_tx_trace: trace parsing and the probe's own bookkeeping.

No Raspberry Pi, PWM or LIRC device exists here, so the traces are the ones
quoted in the write-up (pwm-ir-tx on 6.18: four edges within 7 microseconds)
and healthy ones in the same ftrace format, and the probe runs against a
fixture tracefs with a stand-in ir-ctl that writes what a healthy or broken
transmitter would make the kernel log.
"""
import os
import shutil
import stat

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.rpi import ir_trace
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.pi_ir_tx import DETECTION as pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

# From the write-up: 100 ms pulse, 100 ms space, 100 ms pulse on 6.18.34+rpt-rpi-v8.
BROKEN_618 = '''# tracer: nop
#
           ir-ctl-1230    [002] d.h1.    42.847753: pwm_apply: pwmchip0.0: period=26316 duty_cycle=13158 polarity=0 enabled=1 err=0
           ir-ctl-1230    [002] d.h1.    42.847758: pwm_apply: pwmchip0.0: period=26316 duty_cycle=13158 polarity=0 enabled=0 err=0
           ir-ctl-1230    [002] d.h1.    42.847759: pwm_apply: pwmchip0.0: period=26316 duty_cycle=13158 polarity=0 enabled=1 err=0
           ir-ctl-1230    [002] d.h1.    42.847760: pwm_apply: pwmchip0.0: period=26316 duty_cycle=13158 polarity=0 enabled=0 err=0
'''


def pwm_trace(start, gaps_ms):
    lines, ts, enabled = [], start, 1
    for gap in [0.0] + list(gaps_ms):
        ts += gap / 1000.0
        lines.append('          <idle>-0       [000] d.h2.  %.6f: pwm_apply: pwmchip0.0: period=26316 duty_cycle=13158 '
                     'polarity=0 enabled=%d err=0' % (ts, enabled))
        enabled ^= 1
    return '\n'.join(lines) + '\n'


def gpio_trace(bursts_ms=(10, 10), gap_ms=10, pin=18):
    lines, ts, value = [], 100.0, 1
    half_period = 1.0 / 38000 / 2
    for index, length in enumerate(bursts_ms):
        for _toggle in range(int(length / 1000.0 / half_period)):
            lines.append('          ir-ctl-4242    [001] .....  %.6f: gpio_value: %d set %d' % (ts, pin, value))
            value ^= 1
            ts += half_period
        if index + 1 < len(bursts_ms):
            ts += gap_ms / 1000.0
    return '\n'.join(lines) + '\n'


def test_write_up_trace_is_broken():
    edges = ir_trace.pwm_edges(BROKEN_618)
    assert len(edges) == 4
    result = ir_trace.summarise(edges, expected_ms=300)
    assert result['verdict'] == 'broken'
    assert result['span_us'] == pytest.approx(7.0, abs=0.01)


def test_healthy_pwm_trace_spans_the_code():
    result = ir_trace.summarise(ir_trace.pwm_edges(pwm_trace(10.0, [10, 10, 10])), expected_ms=30)
    assert result['verdict'] == 'ok' and result['edges'] == 4
    assert result['span_ms'] == pytest.approx(30.0, abs=0.01)


def test_healthy_gpio_trace_has_two_carrier_bursts():
    result = ir_trace.measure(gpio_trace(), 'gpio-ir-tx', pin=18)
    assert result['verdict'] == 'ok'
    assert [b['edges'] for b in result['bursts']] == [760, 760]
    assert result['bursts'][0]['length_ms'] == pytest.approx(10.0, abs=0.05)
    # Another pin's activity is not this transmitter's.
    assert ir_trace.measure(gpio_trace(pin=4), 'gpio-ir-tx', pin=18)['verdict'] == 'silent'


def test_repeated_state_is_not_an_edge_and_other_events_are_ignored():
    text = BROKEN_618.replace('enabled=0', 'enabled=1') + '  kworker-9 [000] ..... 43.000000: sched_switch: x\n'
    assert len(ir_trace.pwm_edges(text)) == 1


def fixture_host(tmp_path, driver, trace_text, ir_ctl_rc=0):
    sysfs = tmp_path / 'sys'
    rc = sysfs / 'class' / 'rc' / 'rc0'
    (rc / 'lirc0').mkdir(parents=True)
    (rc / 'uevent').write_text('DRV_NAME=%s\n' % driver)
    (sysfs / 'kernel' / 'tracing' / 'instances').mkdir(parents=True)
    root = tmp_path / 'root'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=%s\n' % driver)
    (root / 'lib' / 'modules' / '6.18.34+rpt-rpi-v8').mkdir(parents=True)
    fake = tmp_path / 'ir-ctl'
    # Stand-in for ir-ctl: the kernel would append to the instance's trace while it sends.
    fake.write_text('#!/bin/sh\necho "$@" > %s/ir-ctl.args\nfor t in %s/kernel/tracing/instances/*/trace; do cat %s >> "$t"; done\nexit %d\n'
                    % (tmp_path, sysfs, tmp_path / 'trace.txt', ir_ctl_rc))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp_path / 'trace.txt').write_text(trace_text)
    return AuditContext(root=str(root), live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(sysfs),
                        kernel_release='6.18.34+rpt-rpi-v8', probes=['ir_tx_trace'],
                        which=lambda name: str(fake) if name == 'ir-ctl' else None)


@pytest.fixture
def fake_tracefs(monkeypatch):
    """tracefs creates events/ in a new instance by itself; a plain directory does not."""
    created, removed = [], []

    def make_instance(tracefs):
        path = os.path.join(tracefs, 'instances', 'postmortem-test')
        for subsystem, event in ir_trace.EVENTS.values():
            os.makedirs(os.path.join(path, 'events', subsystem, event))
            with open(os.path.join(path, 'events', subsystem, event, 'enable'), 'w') as handle:
                handle.write('0')
        open(os.path.join(path, 'trace'), 'w').close()
        created.append(path)
        return path

    def remove_instance(path):
        # Check the probe turned its event off again before letting go of the instance.
        for subsystem, event in ir_trace.EVENTS.values():
            with open(os.path.join(path, 'events', subsystem, event, 'enable')) as handle:
                assert handle.read() == '0'
        shutil.rmtree(path)
        removed.append(path)

    monkeypatch.setattr(ir_trace, 'make_instance', make_instance)
    monkeypatch.setattr(ir_trace, 'remove_instance', remove_instance)
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    return created, removed


def transmitter(result):
    return [i for i in result['evidence']['instances'] if i['name'].startswith('transmitter')][0]


def test_probe_measures_the_broken_transmitter_and_cleans_up(tmp_path, fake_tracefs):
    ctx = fixture_host(tmp_path, 'pwm-ir-tx', BROKEN_618)
    result = registry.run_one(ctx, pi_ir_tx)
    tx = transmitter(result)
    assert tx['status'] == 'affected'
    assert tx['evidence']['probe']['edges'] == 4
    assert 'within 7.0 microseconds' in tx['summary']
    args = (tmp_path / 'ir-ctl.args').read_text().split()
    assert args[:3] == ['-d', '/dev/lirc0', '--carrier=38000'] and args[3].startswith('--send=')
    assert not os.path.exists(args[3][len('--send='):])  # the code file is gone
    created, removed = fake_tracefs
    assert created == removed


def test_probe_passes_a_healthy_transmitter_even_on_618(tmp_path, fake_tracefs):
    ctx = fixture_host(tmp_path, 'pwm-ir-tx', pwm_trace(5.0, [10, 10, 10]))
    tx = transmitter(registry.run_one(ctx, pi_ir_tx))
    assert tx['status'] == 'ok' and 'over 30.0 ms' in tx['summary']


def test_probe_failure_keeps_the_inferred_status_with_the_reason(tmp_path, fake_tracefs):
    ctx = fixture_host(tmp_path, 'pwm-ir-tx', '', ir_ctl_rc=74)
    tx = transmitter(registry.run_one(ctx, pi_ir_tx))
    assert tx['status'] == 'affected'  # the kernel check still says so
    assert tx['evidence']['probe']['verdict'] == 'unknown'
    assert 'ir-ctl failed (rc 74)' in tx['summary']
    created, removed = fake_tracefs
    assert created == removed


@pytest.mark.parametrize('break_it,reason', [
    (lambda ctx, tmp: setattr(ctx, 'which', lambda name: None), 'ir-ctl is not installed'),
    (lambda ctx, tmp: os.rmdir(str(tmp / 'sys' / 'kernel' / 'tracing' / 'instances')), 'no tracefs'),
])
def test_probe_unknown_without_tools(tmp_path, fake_tracefs, break_it, reason):
    ctx = fixture_host(tmp_path, 'pwm-ir-tx', BROKEN_618)
    break_it(ctx, tmp_path)
    tx = transmitter(registry.run_one(ctx, pi_ir_tx))
    assert reason in tx['evidence']['probe']['reason']


def test_probe_needs_root(tmp_path, monkeypatch):
    ctx = fixture_host(tmp_path, 'pwm-ir-tx', BROKEN_618)
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    tx = transmitter(registry.run_one(ctx, pi_ir_tx))
    assert 'needs root' in tx['evidence']['probe']['reason']
