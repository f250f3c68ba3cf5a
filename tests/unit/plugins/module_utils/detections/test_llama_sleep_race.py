"""llama_sleep_race on fake /proc trees and preset files.

The real-process cases (a llama-server started by the test, and units under a
real systemd in a container) are in tests/e2e; these cover the parsing and
the bad-input paths that are hard to produce with a real process.
"""
import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.llama_sleep_race import DETECTION as llama_sleep_race
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import build_rules as llama_rules
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from ....helpers.llama import by_pid, ctx, proc


def run(context):
    return registry.run_one(context, llama_sleep_race)


def test_not_applicable_without_llama_server(tmp_path):
    proc(tmp_path, 5, ['/usr/bin/python3', 'llama-server-wrapper.py', '--sleep-idle-seconds', '5'])
    assert run(ctx(tmp_path))['status'] == 'not_applicable'


def test_sleep_flag_forms_and_last_one_wins(tmp_path):
    """A value-taking option consumes its next token and the last repeat wins (arg.cpp l.819-862);
    std::stoi reads '300s' as 300; 0 is refused by the handler (l.3820-3828)."""
    proc(tmp_path, 10, ['/opt/llama/llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '300'])
    proc(tmp_path, 11, ['llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '300s', '--port', '8081'])
    proc(tmp_path, 12, ['llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '60', '--sleep_idle_seconds', '-1'])
    proc(tmp_path, 13, ['llama-server', '-m', 'm.gguf'])
    proc(tmp_path, 14, ['llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '0'])
    proc(tmp_path, 15, ['llama-server', '-m', 'm.gguf', '--alias', '--sleep-idle-seconds', '--port', '8082'])
    result = run(ctx(tmp_path))
    statuses = dict((i['evidence']['pid'], (i['status'], i['evidence']['sleep_idle_seconds'])) for i in result['evidence']['instances'])
    assert statuses == {10: ('at_risk', 300), 11: ('at_risk', 300), 12: ('ok', -1), 13: ('ok', -1), 14: ('unknown', 0),
                        15: ('ok', -1)}
    found = by_pid(result)
    assert found[11]['evidence']['source'] == 'argv[3] --sleep-idle-seconds 300s'
    assert found[12]['evidence']['source'] == 'argv[5] --sleep_idle_seconds -1'
    assert found[13]['evidence']['source'] == 'default'
    assert 'refuses' in found[14]['summary']
    assert result['status'] == 'at_risk'
    assert result['summary'].startswith('2 of 6 llama-server instance(s) have sleep mode on; 2 would stay down')


def test_unit_restart_setting_is_evidence(tmp_path):
    proc(tmp_path, 20, ['llama-server', '-m', 'm', '--sleep-idle-seconds', '30'], cgroup='0::/system.slice/llama.service\n')

    def systemctl(cmd):
        return 0, 'Restart=on-failure\nRestartUSec=100ms\nNRestarts=2\nFragmentPath=/etc/systemd/system/llama.service\nDropInPaths=\nSourcePath=\n', ''

    context = ctx(tmp_path, systemctl)
    result = run(context)
    sup = result['evidence']['instances'][0]['evidence']['supervisor']
    assert sup['unit'] == 'llama.service' and sup['restart'] == 'on-failure'
    assert sup['crash_restarted'] is True and sup['n_restarts'] == 2
    assert 'a crash is restarted (Restart=on-failure on llama.service)' in result['evidence']['instances'][0]['summary']
    assert ['/usr/bin/systemctl', 'show', 'llama.service'] in [call[:3] for call in context.calls]


def test_restart_no_and_missing_systemctl(tmp_path):
    proc(tmp_path, 21, ['llama-server', '-m', 'm', '--sleep-idle-seconds', '30'], cgroup='0::/system.slice/llama.service\n')
    no_restart = run(ctx(tmp_path, lambda cmd: (0, 'Restart=no\n', '')))
    assert no_restart['evidence']['instances'][0]['evidence']['supervisor']['crash_restarted'] is False
    assert '1 would stay down after a crash' in no_restart['summary']
    missing = run(ctx(tmp_path))
    sup = missing['evidence']['instances'][0]['evidence']['supervisor']
    assert sup['crash_restarted'] is None and 'systemctl not found' in sup['reason']
    assert missing['status'] == 'at_risk'


def test_garbage_value_is_an_error_instance(tmp_path):
    """std::stoi throws on 'soon': llama-server does not start with it, so what this process runs is unknown."""
    proc(tmp_path, 30, ['llama-server', '-m', 'm', '--sleep-idle-seconds', 'soon'])
    result = run(ctx(tmp_path))
    assert result['status'] == 'error'
    assert "'soon' is not a number" in result['summary']


def test_api_key_is_not_in_the_evidence(tmp_path):
    proc(tmp_path, 31, ['llama-server', '-m', 'm', '--api-key', 's3cret', '--sleep-idle-seconds', '5', '--hf-token=hf_x'])
    result = run(ctx(tmp_path))
    argv = result['evidence']['instances'][0]['evidence']['argv']
    assert 's3cret' not in json.dumps(result) and 'hf_x' not in json.dumps(result)
    assert argv == ['llama-server', '-m', 'm', '--api-key', '<redacted>', '--sleep-idle-seconds', '5', '--hf-token=<redacted>']


def test_router_preset_sections_and_precedence(tmp_path):
    """A router's models: [*] under each section (server-models.cpp l.718-721); a model-less llama-server
    is a router (server.cpp l.150-153). A key llama-server does not know stops the router (preset.cpp
    l.327-331)."""
    preset = tmp_path / 'models.ini'
    preset.write_text('version = 1\n[*]\nsleep-idle-seconds = 120\n\n[small]\nmodel = /m/s.gguf\n\n'
                      '[big]\nmodel = /m/b.gguf\n; opt out\nsleep-idle-seconds = -1\n')
    proc(tmp_path, 40, ['llama-server', '--models-preset', str(preset), '--port', '8090'])
    result = run(ctx(tmp_path))
    assert result['evidence']['routers'] == [40]
    by_section = dict((i['evidence'].get('section'), i) for i in result['evidence']['instances'])
    assert by_section['small']['status'] == 'at_risk'
    assert by_section['small']['evidence']['source'] == '%s:3 [*]' % preset
    assert by_section['small']['evidence']['router'] == {'pid': 40, 'model': 'small'}
    assert by_section['big']['status'] == 'ok'
    # LLAMA_ARG_SLEEP_IDLE_SECONDS is not a key llama-server knows: --sleep-idle-seconds has no env name
    preset.write_text('[odd]\nLLAMA_ARG_SLEEP_IDLE_SECONDS = 5\n')
    odd = run(ctx(tmp_path))['evidence']['instances']
    assert [i['status'] for i in odd] == ['error'] and 'not recognized' in odd[0]['summary']


def test_router_command_line_overrides_the_preset(tmp_path):
    """The router's own command line is merged over every model (server-models.cpp l.744-748)."""
    preset = tmp_path / 'models.ini'
    preset.write_text('[a]\nsleep-idle-seconds = 10\n')
    proc(tmp_path, 41, ['llama-server', '--models-preset', str(preset), '--sleep-idle-seconds', '-1'])
    result = run(ctx(tmp_path))
    section = [i for i in result['evidence']['instances'] if i['evidence'].get('section') == 'a'][0]
    assert section['status'] == 'ok'
    assert section['evidence']['source'] == 'router argv[3] --sleep-idle-seconds -1'


def test_a_running_child_is_judged_once(tmp_path):
    """A router's child runs as a llama-server with LLAMA_SERVER_ROUTER_PORT (server-models.cpp l.1193-1195):
    it is the instance for its model, and the preset section is not judged a second time."""
    preset = tmp_path / 'models.ini'
    preset.write_text('[a]\nmodel = /m.gguf\nsleep-idle-seconds = 10\n[b]\nmodel = /m.gguf\n')
    proc(tmp_path, 42, ['llama-server', '--models-preset', str(preset)])
    proc(tmp_path, 43, ['llama-server', '--host', '127.0.0.1', '--port', '4001', '--sleep-idle-seconds', '10', '--alias',
                        'a', '--model', '/m.gguf'], environ={'LLAMA_SERVER_ROUTER_PORT': '8080'}, ppid=42)
    result = run(ctx(tmp_path))
    names = sorted(i['name'] for i in result['evidence']['instances'])
    assert names == ['llama-server pid 43', 'router pid 42 model [b] (%s)' % preset]
    child = by_pid(result)[43]
    assert child['status'] == 'at_risk' and child['evidence']['router'] == {
        'pid': 42, 'model': 'a', 'preset': str(preset), 'section': 'a'}


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
    # no binary to ask: every rule set a build may follow was applied
    assert listed['evidence']['rules']['judged_under'] == len(llama_rules.rule_sets(None))


def test_image_audit_reads_no_processes(tmp_path):
    proc(tmp_path, 50, ['llama-server', '--sleep-idle-seconds', '5'])
    context = AuditContext(root=str(tmp_path), live=False, proc_root=str(tmp_path / 'proc'))
    assert run(context)['status'] == 'not_applicable'


def test_config_files_and_precedence(tmp_path):
    """Config files first, then the environment, then the command line (arg.cpp l.760-775); the issue's
    false ok: `sleep-idle-seconds = 45` in a config file."""
    root = tmp_path / 'root'
    (root / 'etc' / 'llama.cpp').mkdir(parents=True)
    (root / 'etc' / 'llama.cpp' / 'config.ini').write_text('sleep-idle-seconds = 45\n')
    proc(tmp_path, 70, ['llama-server', '-m', 'm'], environ={'HOME': '/home/u'}, root=root)
    proc(tmp_path, 71, ['llama-server', '-m', 'm', '--sleep-idle-seconds', '-1'], environ={'HOME': '/home/u'}, root=root)
    found = by_pid(run(ctx(tmp_path)))
    assert found[70]['status'] == 'at_risk' and found[70]['evidence']['source'] == '/etc/llama.cpp/config.ini:1 [default]'
    assert found[70]['evidence']['config_files'] == [{'path': '/etc/llama.cpp/config.ini', 'exists': True}]
    assert found[71]['status'] == 'ok'


def test_sleep_environment_variable_is_a_note_not_a_finding(tmp_path):
    proc(tmp_path, 60, ['llama-server', '-m', 'm.gguf'], environ={'LLAMA_ARG_SLEEP_IDLE_SECONDS': '2', 'HOME': '/nonexistent'})
    result = run(ctx(tmp_path))
    assert result['status'] == 'ok'
    assert 'does not read it' in result['evidence']['instances'][0]['evidence']['note']


def test_fixed_in_makes_a_fixed_build_ok_and_only_a_known_one(tmp_path):
    """#45: llama_sleep_race had no fixed_in, so a fixed llama.cpp build would stay at_risk with nothing to
    configure. The build is the one llama-server --version prints (ctx answers as b11434 does)."""
    proc(tmp_path, 10, ['llama-server', '-m', 'm.gguf', '--sleep-idle-seconds', '300'])

    def settings(value):
        return {'llama_sleep_race': {'fixed_in': value}}

    assert run(ctx(tmp_path))['status'] == 'at_risk'
    for value in ('b11434', '11434', 'b11000'):
        fixed = run(ctx(tmp_path, settings=settings(value)))
        assert fixed['status'] == 'ok', (value, fixed['summary'])
        assert 'at or after fixed_in' in by_pid(fixed)[10]['summary']
    assert run(ctx(tmp_path, settings=settings('b11435')))['status'] == 'at_risk'
    # A server whose build cannot be read is judged by its configuration, whatever fixed_in says.
    assert run(ctx(tmp_path, settings=settings('b1'), build=None))['status'] == 'at_risk'
    bad = run(ctx(tmp_path, settings=settings('latest')))
    assert bad['status'] == 'error' and "Setting fixed_in 'latest' is not a llama.cpp build" in bad['summary']
