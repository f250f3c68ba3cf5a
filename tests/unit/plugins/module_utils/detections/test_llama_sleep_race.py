"""llama_sleep_race on fake /proc trees and preset files.

The real-process cases (a llama-server started by the test, and units under a
real systemd in a container) are in tests/e2e; these cover the parsing and
the bad-input paths that are hard to produce with a real process.
"""
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_sleep_race
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from ....helpers.llama import ctx, proc


def run(context):
    return registry.run_one(context, llama_sleep_race)


def test_not_applicable_without_llama_server(tmp_path):
    proc(tmp_path, 5, ['/usr/bin/python3', 'llama-server-wrapper.py', '--sleep-idle-seconds', '5'])
    assert run(ctx(tmp_path))['status'] == 'not_applicable'


def test_sleep_flag_forms_and_last_one_wins(tmp_path):
    proc(tmp_path, 10, ['/opt/llama/llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '300'])
    proc(tmp_path, 11, ['llama-server', '--sleep-idle-seconds', '0', '--port', '8081'])
    proc(tmp_path, 12, ['llama-server', '--sleep-idle-seconds', '60', '--sleep-idle-seconds', '-1'])
    proc(tmp_path, 13, ['llama-server', '-m', 'm.gguf'])
    result = run(ctx(tmp_path))
    statuses = dict((i['evidence']['pid'], (i['status'], i['evidence']['sleep_idle_seconds'])) for i in result['evidence']['instances'])
    assert statuses == {10: ('at_risk', 300), 11: ('at_risk', 0), 12: ('ok', -1), 13: ('ok', -1)}
    assert result['status'] == 'at_risk'
    assert result['summary'].startswith('2 of 4 llama-server instance(s) have sleep mode on; 2 would stay down')


def test_unit_restart_setting_is_evidence(tmp_path):
    proc(tmp_path, 20, ['llama-server', '--sleep-idle-seconds', '30'], cgroup='0::/system.slice/llama.service\n')

    def systemctl(cmd):
        return 0, 'Restart=on-failure\nRestartUSec=100ms\nNRestarts=2\nFragmentPath=/etc/systemd/system/llama.service\nDropInPaths=\nSourcePath=\n', ''

    context = ctx(tmp_path, systemctl)
    result = run(context)
    sup = result['evidence']['instances'][0]['evidence']['supervisor']
    assert sup['unit'] == 'llama.service' and sup['restart'] == 'on-failure'
    assert sup['crash_restarted'] is True and sup['n_restarts'] == 2
    assert 'a crash is restarted (Restart=on-failure on llama.service)' in result['evidence']['instances'][0]['summary']
    assert context.calls[0][:3] == ['/usr/bin/systemctl', 'show', 'llama.service']


def test_restart_no_and_missing_systemctl(tmp_path):
    proc(tmp_path, 21, ['llama-server', '--sleep-idle-seconds', '30'], cgroup='0::/system.slice/llama.service\n')
    no_restart = run(ctx(tmp_path, lambda cmd: (0, 'Restart=no\n', '')))
    assert no_restart['evidence']['instances'][0]['evidence']['supervisor']['crash_restarted'] is False
    assert '1 would stay down after a crash' in no_restart['summary']
    missing = run(ctx(tmp_path))
    sup = missing['evidence']['instances'][0]['evidence']['supervisor']
    assert sup['crash_restarted'] is None and 'systemctl not found' in sup['reason']
    assert missing['status'] == 'at_risk'


def test_garbage_value_is_an_error_instance(tmp_path):
    proc(tmp_path, 30, ['llama-server', '--sleep-idle-seconds', 'soon'])
    result = run(ctx(tmp_path))
    assert result['status'] == 'error'
    assert "'soon' is not a number" in result['summary']


def test_api_key_is_not_in_the_evidence(tmp_path):
    proc(tmp_path, 31, ['llama-server', '--api-key', 's3cret', '--sleep-idle-seconds', '5', '--hf-token=hf_x'])
    result = run(ctx(tmp_path))
    argv = result['evidence']['instances'][0]['evidence']['argv']
    assert 's3cret' not in ' '.join(argv) and 'hf_x' not in ' '.join(argv)
    assert argv == ['llama-server', '--api-key', '<redacted>', '--sleep-idle-seconds', '5', '--hf-token=<redacted>']


def test_router_preset_sections_and_precedence(tmp_path):
    preset = tmp_path / 'models.ini'
    preset.write_text('version = 1\n[*]\nsleep-idle-seconds = 120\n\n[small]\nmodel = /m/s.gguf\n\n'
                      '[big]\nmodel = /m/b.gguf\n; opt out\nsleep-idle-seconds = -1\n\n[odd]\nLLAMA_ARG_SLEEP_IDLE_SECONDS = x\n')
    proc(tmp_path, 40, ['llama-server', '--models-preset', str(preset), '--port', '8090'])
    result = run(ctx(tmp_path))
    by_section = dict((i['evidence'].get('section'), i) for i in result['evidence']['instances'] if 'section' in i['evidence'])
    assert by_section['small']['status'] == 'at_risk'
    assert by_section['small']['evidence']['defined_in'] == '[*] line 3'
    assert by_section['big']['status'] == 'ok'
    assert by_section['odd']['status'] == 'error'
    assert by_section['small']['evidence']['used_by'] == [40]


def test_router_command_line_overrides_the_preset(tmp_path):
    preset = tmp_path / 'models.ini'
    preset.write_text('[a]\nsleep-idle-seconds = 10\n')
    proc(tmp_path, 41, ['llama-server', '--models-preset', str(preset), '--sleep-idle-seconds', '-1'])
    result = run(ctx(tmp_path))
    section = [i for i in result['evidence']['instances'] if i['evidence'].get('section') == 'a'][0]
    assert section['status'] == 'ok'
    assert 'command line of router pid 41' in section['evidence']['overridden_by']


def test_listed_preset_files_and_unreadable_ones(tmp_path):
    good = tmp_path / 'p.ini'
    good.write_text('[m]\nsleep-idle-seconds = 5\n')
    binary = tmp_path / 'b.ini'
    binary.write_bytes(b'\x00\x00')
    settings = {'llama_sleep_race': {'preset_paths': [str(good), str(binary), str(tmp_path / 'gone.ini')]}}
    result = run(ctx(tmp_path, settings=settings))
    statuses = sorted((os.path.basename(i['evidence']['file']), i['status']) for i in result['evidence']['instances'])
    assert statuses == [('b.ini', 'error'), ('gone.ini', 'unknown'), ('p.ini', 'at_risk')]
    listed = [i for i in result['evidence']['instances'] if i['evidence']['file'].endswith('p.ini')][0]
    assert 'no running router uses this preset' in listed['summary']


def test_image_audit_reads_no_processes(tmp_path):
    proc(tmp_path, 50, ['llama-server', '--sleep-idle-seconds', '5'])
    context = AuditContext(root=str(tmp_path), live=False, proc_root=str(tmp_path / 'proc'))
    assert run(context)['status'] == 'not_applicable'


def test_resolve_precedence_argv_over_environment():
    option = llama_server.Option(['--x-opt'], env='LLAMA_ARG_X_OPT', default='d')
    assert llama_server.resolve(option, ['llama-server', '--x-opt', '1'], {'LLAMA_ARG_X_OPT': '2'}) == ('1', 'command line')
    assert llama_server.resolve(option, ['llama-server'], {'LLAMA_ARG_X_OPT': '2'}) == ('2', 'environment LLAMA_ARG_X_OPT')
    assert llama_server.resolve(option, ['llama-server'], {}) == ('d', 'default')
    # A flag at the very end without a value is not a value, and llama-server rejects --opt=value.
    assert llama_server.from_argv(['llama-server', '--x-opt'], option) is None
    assert llama_server.from_argv(['llama-server', '--x-opt=3'], option) is None


def test_sleep_environment_variable_is_a_note_not_a_finding(tmp_path):
    proc(tmp_path, 60, ['llama-server', '-m', 'm.gguf'], environ={'LLAMA_ARG_SLEEP_IDLE_SECONDS': '2'})
    result = run(ctx(tmp_path))
    assert result['status'] == 'ok'
    assert 'does not read it' in result['evidence']['instances'][0]['evidence']['note']
