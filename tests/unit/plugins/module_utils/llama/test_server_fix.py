"""llama_server_fix's plan (llama/server_fix.py) on fake /proc trees and unit files: each setting is
changed where llama.cpp takes it from (llama/resolution.py), and a change that would not hold is not made.

The real module, on real processes, runs in tests/e2e/test_llama_server_fix_module.py and the role's
Molecule scenario."""
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server_fix

from ....helpers.llama import VERSION, ctx, proc

UNIT_CGROUP = '0::/system.slice/llama.service\n'
PARAMS = {'cache_ram_off': True, 'no_cache_prompt': False, 'restart_on_failure': True, 'disable_sleep': True,
          'units': [], 'backup': True}


def systemctl_for(unit_path, build=11434):
    def systemctl(cmd):
        if cmd[-1] == '--version':
            return 0, '', VERSION % build if build else 'version: 0 (build 0, commit unknown)\n'
        return 0, 'FragmentPath=%s\nSourcePath=\nDropInPaths=\nRestart=on-failure\n' % unit_path, ''
    return systemctl


def plan(tmp_path, unit_text=None, build=11434, **params):
    unit = tmp_path / 'llama.service'
    unit.write_text(unit_text or '[Service]\nExecStart=/usr/bin/llama-server -m m\nRestart=always\n')
    context = ctx(tmp_path, systemctl=systemctl_for(str(unit), build))
    chosen = dict(PARAMS, **params)
    result, writes = server_fix.plan_and_prove(context, '/usr/bin/systemctl',
                                               [name for name in server_fix.FIXES if chosen[name]], chosen['units'])
    return result, dict((path, after) for path, _before, after in writes)


def apply(writes):
    for path, text in writes.items():
        with open(path, 'w') as handle:
            handle.write(text)


def test_a_config_file_line_is_changed_where_it_is(tmp_path):
    """sleep-idle-seconds = 45 in the user's config.ini (arg.cpp l.722-758): that line becomes -1."""
    config = tmp_path / 'cfg' / 'llama.cpp' / 'config.ini'
    config.parent.mkdir(parents=True)
    config.write_text('# mine\nsleep-idle-seconds = 45  ; idle\ncache-ram = 1024\n')
    proc(tmp_path, 10, ['/usr/bin/llama-server', '-m', 'm'], environ={'XDG_CONFIG_HOME': str(tmp_path / 'cfg')},
         cgroup=UNIT_CGROUP)
    result, writes = plan(tmp_path)
    assert writes == {str(config): '# mine\nsleep-idle-seconds = -1  ; idle\ncache-ram = 1024\n'}
    entry, = result['units']
    assert (entry['unit'], entry['pids'], entry['files'], entry['changed']) == ('llama.service', [10], [str(config)], True)
    assert entry['fixes'] == {'cache_ram_off': False, 'no_cache_prompt': False, 'restart_on_failure': True,
                              'disable_sleep': True}
    assert result['open'] == []
    apply(writes)
    assert plan(tmp_path)[1] == {}


def test_the_command_line_wins_so_the_unit_changes(tmp_path):
    """The config file says 45 but the command line says 30: the command line is what runs (arg.cpp
    l.842-862), so ExecStart= changes and the file does not."""
    config = tmp_path / 'cfg' / 'llama.cpp' / 'config.ini'
    config.parent.mkdir(parents=True)
    config.write_text('sleep-idle-seconds = 45\n')
    argv = ['/usr/bin/llama-server', '-m', 'm', '--sleep-idle-seconds', '30']
    proc(tmp_path, 11, argv, environ={'XDG_CONFIG_HOME': str(tmp_path / 'cfg')}, cgroup=UNIT_CGROUP)
    result, writes = plan(tmp_path, '[Service]\nExecStart=%s\n' % ' '.join(argv))
    assert list(writes) == ['/etc/systemd/system/llama.service.d/50-homelab-postmortem.conf']
    assert 'ExecStart=/usr/bin/llama-server -m m --sleep-idle-seconds -1\n' in list(writes.values())[0]
    assert result['open'] == []


def test_an_environment_variable_is_changed_on_its_environment_line(tmp_path):
    argv = ['/usr/bin/llama-server', '-m', 'm', '--lora', 'a.gguf']
    proc(tmp_path, 12, argv, environ={'LLAMA_ARG_CACHE_RAM': '4096', 'HOME': '/nonexistent'}, cgroup=UNIT_CGROUP)
    result, writes = plan(tmp_path, '[Service]\nEnvironment=LLAMA_ARG_CACHE_RAM=4096\nExecStart=%s\n' % ' '.join(argv))
    text = list(writes.values())[0]
    assert 'Environment=LLAMA_ARG_CACHE_RAM=0\n' in text and 'ExecStart' not in text
    assert result['units'][0]['fixes']['cache_ram_off'] is True


def test_a_variable_set_outside_the_unit_stays_open(tmp_path):
    argv = ['/usr/bin/llama-server', '-m', 'm', '--lora', 'a.gguf']
    proc(tmp_path, 13, argv, environ={'LLAMA_ARG_CACHE_RAM': '4096', 'HOME': '/nonexistent'}, cgroup=UNIT_CGROUP)
    result, writes = plan(tmp_path, '[Service]\nExecStart=%s\n' % ' '.join(argv))
    assert writes == {}
    assert [(o['pid'], o['fix']) for o in result['open']] == [(13, 'cache_ram_off')]
    assert 'not set by an Environment= line' in result['open'][0]['reason']


def test_an_instance_without_a_unit_is_left_to_the_admin(tmp_path):
    proc(tmp_path, 14, ['/usr/bin/llama-server', '-m', 'm', '--lora', 'a.gguf', '--sleep-idle-seconds', '5'],
         environ={'HOME': '/nonexistent'})
    result, writes = plan(tmp_path)
    assert writes == {}
    assert sorted(o['fix'] for o in result['open']) == ['cache_ram_off', 'disable_sleep', 'restart_on_failure']
    assert result['unmanaged'][0]['manual'] == ('not started by a system service: change it by hand: add --cache-ram 0; '
                                                'have its supervisor restart it when it crashes; add --sleep-idle-seconds -1')


def test_a_router_model_is_changed_in_its_preset_section(tmp_path):
    """The setting is the section's (or nobody's): the preset is where it changes; the router's unit must
    restart to read it (server-models.cpp load_models at start, POST /models/reload)."""
    preset = tmp_path / 'models.ini'
    preset.write_text('[*]\nsleep-idle-seconds = 60\n\n[a]\nmodel = /m.gguf\nlora = /l.gguf\n\n[b]\nmodel = /m.gguf\n')
    proc(tmp_path, 15, ['/usr/bin/llama-server', '--models-preset', str(preset)], environ={'HOME': '/nonexistent'},
         cgroup=UNIT_CGROUP)
    unit = '[Service]\nExecStart=/usr/bin/llama-server --models-preset %s\nRestart=always\n' % preset
    result, writes = plan(tmp_path, unit)
    assert writes == {str(preset): '[*]\nsleep-idle-seconds = -1\n\n[a]\nmodel = /m.gguf\nlora = /l.gguf\n'
                                   'cache-ram = 0\n\n[b]\nmodel = /m.gguf\n'}
    assert result['units'][0]['pids'] == [15] and result['units'][0]['files'] == [str(preset)]
    apply(writes)
    assert plan(tmp_path, unit)[1] == {}


def test_an_unknown_build_needs_the_change_to_hold_under_every_rule(tmp_path):
    """build 0: config files may not be read at all (before b10405), so the file alone proves nothing and
    with no unit to put the command-line override in, the fix stays open."""
    config = tmp_path / 'cfg' / 'llama.cpp' / 'config.ini'
    config.parent.mkdir(parents=True)
    config.write_text('sleep-idle-seconds = 45\n')
    proc(tmp_path, 16, ['/usr/bin/llama-server', '-m', 'm'], environ={'XDG_CONFIG_HOME': str(tmp_path / 'cfg')})
    result, writes = plan(tmp_path, build=None, restart_on_failure=False)
    assert writes == {}
    assert [o['fix'] for o in result['open']] == ['disable_sleep']
    proc(tmp_path, 17, ['/usr/bin/llama-server', '-m', 'm', '--sleep-idle-seconds', '45'],
         environ={'XDG_CONFIG_HOME': str(tmp_path / 'cfg')}, cgroup=UNIT_CGROUP)
    # with a unit, both places change: the file and the command line
    result, writes = plan(tmp_path, '[Service]\nExecStart=/usr/bin/llama-server -m m --sleep-idle-seconds 45\n',
                          build=None, restart_on_failure=False)
    assert str(config) not in writes or writes[str(config)] == 'sleep-idle-seconds = -1\n'
    assert any('--sleep-idle-seconds -1' in text for text in writes.values())
