"""Hostile input, class by class: every case ends within its bound with a clear finding, the
other detections keep their findings, the result is strict JSON, and the input is unchanged.

Tools are real programs: shell scripts named ``podman`` that hang, flood, cannot execute or
print garbage, run through the real command runner. Files are real files, named pipes and
links on this machine. (No real podman answers garbage on purpose, so stand-ins are the only
way to produce these replies.)
"""
import json
import os
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import json_safe
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import file_view as llama_files
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

from ..helpers.hostile import snapshot

BOUND_S = 10


def audit_all(ctx, checks=('all',)):
    """Every selected detection through the registry, timed, with the strict-JSON check."""
    started = time.monotonic()
    findings, _timings = registry.run(ctx, registry.select(list(checks)))
    assert time.monotonic() - started < BOUND_S, 'took longer than %d s' % BOUND_S
    safe = json_safe(findings)
    json.dumps(safe, allow_nan=False).encode('utf-8')  # strict JSON, no lone surrogates
    for finding in findings.values():
        assert not finding['summary'].startswith('bug in homelab.postmortem'), finding['summary']
    return safe


# --- files --------------------------------------------------------------------------------

def image_with(tmp_path, make_config):
    root = tmp_path / 'card'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'lib' / 'modules' / '6.18.1').mkdir(parents=True)
    make_config(root / 'boot' / 'firmware')
    return root


@pytest.mark.parametrize('name,make,reason', [
    ('fifo config.txt', lambda d: os.mkfifo(str(d / 'config.txt')), 'is a named pipe, not a regular file'),
    ('fifo behind include', lambda d: ((d / 'config.txt').write_text('include extra.txt\n'),
                                       os.mkfifo(str(d / 'extra.txt'))), 'is a named pipe'),
    ('dangling link', lambda d: os.symlink('/missing.txt', str(d / 'config.txt')), 'does not exist'),
    ('looping link', lambda d: os.symlink('config.txt', str(d / 'config.txt')), 'loop'),
    ('include loop', lambda d: (d / 'config.txt').write_text('include config.txt\n'), 'include loop'),
    ('binary', lambda d: (d / 'config.txt').write_bytes(b'\x7fELF\x00\x01'), 'not a text file'),
])
def test_boot_config_that_is_not_a_config_is_an_error(tmp_path, name, make, reason):
    root = image_with(tmp_path, make)
    before = snapshot(root)
    findings = audit_all(AuditContext(root=str(root), live=False), ['pi'])
    assert findings['pi_ir_tx']['status'] == 'error', name
    assert reason in findings['pi_ir_tx']['summary'], findings['pi_ir_tx']['summary']
    assert snapshot(root) == before


def test_a_bom_does_not_hide_the_first_line(tmp_path):
    root = image_with(tmp_path, lambda d: (d / 'config.txt').write_bytes(b'\xef\xbb\xbfdtoverlay=pwm-ir-tx\n'))
    findings = audit_all(AuditContext(root=str(root), live=False), ['pi'])
    assert findings['pi_ir_tx']['status'] == 'at_risk'


@pytest.mark.parametrize('folder', ['9' * 200, '６.18.1', '٦.١٨'])
def test_kernel_folders_that_are_not_versions_are_ignored(tmp_path, folder):
    root = image_with(tmp_path, lambda d: (d / 'config.txt').write_text('dtoverlay=pwm-ir-tx\n'))
    (root / 'lib' / 'modules' / '6.18.1').rmdir()
    (root / 'lib' / 'modules' / '6.12.1').mkdir()
    (root / 'lib' / 'modules' / folder).mkdir()
    finding = audit_all(AuditContext(root=str(root), live=False), ['pi'])['pi_ir_tx']
    assert finding['evidence']['installed_kernels'] == ['6.12.1']
    assert finding['status'] == 'ok'


def test_a_fifo_preset_file_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / 'router.ini'
    os.mkfifo(str(fifo))
    (tmp_path / 'proc').mkdir()
    ctx = AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                       settings=registry.validate_settings({'llama_sleep_race': {'preset_paths': str(fifo)},
                                                            'llama_lora_cache': {'preset_paths': [str(fifo)]}}))
    findings = audit_all(ctx, ['llama_sleep_race', 'llama_lora_cache'])
    for check in ('llama_sleep_race', 'llama_lora_cache'):
        text = json.dumps(findings[check])
        assert 'named pipe' in text, text


def test_a_huge_preset_is_bounded(tmp_path):
    preset = tmp_path / 'router.ini'
    preset.write_text(''.join('[m%d]\nsleep-idle-seconds=5\n' % n for n in range(30000)))
    (tmp_path / 'proc').mkdir()
    ctx = AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                       settings={'llama_sleep_race': {'preset_paths': [str(preset)]}}, max_instances=50)
    finding = audit_all(ctx, ['llama_sleep_race'])['llama_sleep_race']
    assert len(finding['evidence']['instances']) == 50
    assert finding['evidence']['instances_omitted']['count'] == 29950
    assert len(json.dumps(finding)) < 200000


def test_numbers_that_are_not_finite_or_ascii_are_not_numbers(tmp_path):
    def adapters(value):
        view = llama_files.FileView(AuditContext(root=str(tmp_path), live=True))
        config = llama_resolution.resolve(llama_resolution.Server(['llama-server', '--lora-scaled', value], {}, view), {})
        return llama_resolution.lora_adapters(config)
    assert adapters('a.gguf:nan')[0] == [] and 'not FNAME:SCALE' in adapters('a.gguf:nan')[1][0]
    assert adapters('a.gguf:-inf')[0] == [] and adapters('a.gguf:0.5')[0][0]['scale'] == 0.5
    assert llama_server.as_int('٣') is None and llama_server.as_int('9' * 5000) is None
    # std::stoi reads ASCII digits only, and a number beyond an int is refused
    with pytest.raises(llama_args.ValueRefused):
        llama_args.stoi('٣')
    with pytest.raises(llama_args.ValueRefused):
        llama_args.stoi('9' * 5000)
    assert hostio.version_tuple('９.1') is None


# --- tools --------------------------------------------------------------------------------

def fake_tool(tmp_path, body, name='podman', binary=None):
    path = tmp_path / 'bin' / name
    path.parent.mkdir(exist_ok=True)
    if binary is not None:
        path.write_bytes(binary)
    else:
        path.write_text('#!/bin/sh\n' + body)
    path.chmod(0o755)
    return str(path)


def podman_ctx(tmp_path, podman, timeout=2):
    (tmp_path / 'sys').mkdir(exist_ok=True)
    tools = {'podman': podman, 'runuser': '/usr/sbin/runuser'}
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        runner=CommandRunner(timeout=timeout), which=tools.get, euid=0)


INFO = '{"host": {"security": {"rootless": false}}, "version": {"Version": "4.3.1"}}'


def answering(ps, inspect, info=INFO, events=''):
    """A podman that answers info, ps and inspect with the given text."""
    return ('case "$1" in\n'
            "  info) printf '%%s' '%s' ;;\n"
            "  ps) printf '%%s' '%s' ;;\n"
            "  container) printf '%%s' '%s' ;;\n"
            "  events) printf '%%s' '%s' ;;\n"
            'esac\n') % (info, ps, inspect, events)


def base_container(**overrides):
    data = {'Id': 'a' * 64, 'Name': 'web', 'State': {'Status': 'exited', 'ExitCode': 1, 'StartedAt': '2026-01-01T00:00:00Z'},
            'HostConfig': {'RestartPolicy': {'Name': 'always', 'MaximumRetryCount': 0}}, 'RestartCount': 1,
            'Config': {'Labels': {}}}
    for key, value in overrides.items():
        target = data
        parts = key.split('.')
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value
    return data


@pytest.mark.parametrize('case,script,status,fragment', [
    ('hangs', 'sleep 60 &\nwait\n', 'unknown', 'did not finish within 2 s (command_timeout)'),
    ('floods', 'yes x | head -c 70000000\n', 'error', 'printed more than 32 MiB'),
    ('exits non-zero with undecodable stderr', "printf 'Error: \\377\\376 broken\\n' >&2; exit 125\n", 'error',
     'Error: \\xff\\xfe broken'),
    ('prints no JSON', 'echo "<html>proxy error</html>"\n', 'error', 'did not print JSON'),
    # 5,000 levels make json.loads raise RecursionError; bounded_json refuses them before parsing.
    ('prints JSON nested 5,000 deep', "python3 -c \"print('[' * 5000 + ']' * 5000)\"\n", 'error',
     'nested deeper than 64 levels'),
    # podman info is asked only with a container to judge (podman ps first), and only when podman's
    # facts have no certain cheap source: here this stand-in prints no version.
    ('info host as a string', answering(json.dumps([{'Id': 'a' * 64}]), json.dumps([base_container()]),
                                        info='{"host": "x", "version": {"Version": "4.3.1"}}'), 'error',
     'field host is a string, not an object'),
])
def test_podman_misbehaving_gives_clear_findings(tmp_path, case, script, status, fragment):
    ctx = podman_ctx(tmp_path, fake_tool(tmp_path, script))
    findings = audit_all(ctx, ['podman', 'pi'])
    for check in ('podman_restart_userns', 'podman_export_idmap'):
        assert findings[check]['status'] == status, (case, findings[check])
        assert fragment in findings[check]['summary'], findings[check]['summary']
    assert findings['pi_ir_tx']['status'] == 'not_applicable'  # the other detections still ran


def test_podman_that_cannot_execute_is_an_error(tmp_path):
    ctx = podman_ctx(tmp_path, fake_tool(tmp_path, None, binary=b'\x7fELF\x02\x01\x01garbage'))
    findings = audit_all(ctx, ['podman'])
    assert findings['podman_restart_userns']['status'] == 'error'
    assert 'cannot run podman' in findings['podman_restart_userns']['summary']


@pytest.mark.parametrize('override,fragment', [
    ({'State': 'running'}, 'field State is a string, not an object'),
    ({'HostConfig.RestartPolicy': 'always'}, 'field RestartPolicy is a string, not an object'),
    ({'Config.Labels': ['a=b']}, 'field Labels is a list, not an object'),
    ({'Name': 42}, 'field Name is a number (42), not a string'),
    ({'State.StartedAt': 1700000000}, 'field StartedAt is a number (1700000000), not a string'),
    ({'RestartCount': '1'}, 'field RestartCount is a string, not an integer'),
])
def test_inspect_fields_of_the_wrong_type_name_the_field(tmp_path, override, fragment):
    container = base_container(**override)
    script = answering(json.dumps([{'Id': container['Id']}]), json.dumps([container]))
    findings = audit_all(podman_ctx(tmp_path, fake_tool(tmp_path, script)), ['podman_restart_userns'])
    finding = findings['podman_restart_userns']
    assert finding['status'] == 'error'
    assert 'podman container inspect: ' + fragment == finding['summary']


def test_inspect_null_and_nan_and_undecodable_names_still_give_findings(tmp_path):
    nan_exit = json.dumps([base_container(**{'State.ExitCode': 0.5})]).replace('0.5', 'NaN')
    script = answering(json.dumps([{'Id': 'a' * 64}]), nan_exit.replace('"web"', '"we\\udcffb"'))
    findings = audit_all(podman_ctx(tmp_path, fake_tool(tmp_path, script)), ['podman_restart_userns'])
    instance = findings['podman_restart_userns']['evidence']['instances'][0]
    assert instance['evidence']['exit_code'] == 'nan'
    assert instance['evidence']['name'] == 'we\\xffb'

    script = answering(json.dumps([{'Id': 'a' * 64}]), 'null')
    findings = audit_all(podman_ctx(tmp_path, fake_tool(tmp_path, script)), ['podman_restart_userns'])
    assert findings['podman_restart_userns']['status'] == 'error'
    assert 'printed null, not a list of objects' in findings['podman_restart_userns']['summary']


def test_fifty_thousand_containers_are_inspected_in_batches(tmp_path):
    ids = ['%064x' % n for n in range(50000)]
    log = tmp_path / 'argc'
    script = ('case "$1" in\n'
              "  info) printf '%%s' '%s' ;;\n"
              '  ps) cat %s ;;\n'
              '  container) echo $# >> %s; echo "[]" ;;\n'
              'esac\n') % (INFO, tmp_path / 'ps.json', log)
    (tmp_path / 'ps.json').write_text(json.dumps([{'Id': i} for i in ids]))
    ctx = podman_ctx(tmp_path, fake_tool(tmp_path, script), timeout=30)
    started = time.monotonic()
    findings, _t = registry.run(ctx, registry.select(['podman_restart_userns']))
    assert time.monotonic() - started < 120
    assert findings['podman_restart_userns']['status'] in ('ok', 'not_applicable')
    counts = [int(n) for n in log.read_text().split()]
    assert sum(c - 2 for c in counts) == 50000 and max(counts) <= 202
