"""llama_lora_cache on fake /proc trees: argument forms, environment, presets and bad values
(llama_spec_logprobs is in test_llama_spec_logprobs.py). The real servers and probes are in tests/e2e."""
import json
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.llama_lora_cache import DETECTION as llama_lora_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from ....helpers.llama import VERSION, by_pid, ctx, proc


def test_lora_adapter_forms_cache_settings_and_bad_values(tmp_path):
    """--lora and --lora-scaled append (arg.cpp l.2958-2981, CSV per parse_csv_row l.1353-1394); --cache-ram
    is an int (std::stoi); --cache-prompt/--no-cache-prompt a flag pair with LLAMA_ARG_CACHE_PROMPT
    (l.3584-3591) read with parse_bool_value (l.333-341)."""
    m = ['llama-server', '-m', 'm.gguf']
    proc(tmp_path, 10, m + ['--lora', 'a.gguf,b.gguf', '--lora-scaled', 'c.gguf:0.5'])
    proc(tmp_path, 11, m + ['--lora', 'a.gguf', '-cram', '0'])
    proc(tmp_path, 12, m + ['--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_RAM': '0'})
    proc(tmp_path, 13, m + ['--lora', 'a.gguf', '--cache-ram', 'lots'])
    proc(tmp_path, 14, m)
    proc(tmp_path, 15, m + ['--lora', 'a.gguf', '--cache-ram', '0', '--no-cache-prompt'])
    proc(tmp_path, 16, m + ['--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_PROMPT': 'off'})
    proc(tmp_path, 17, m + ['--lora', 'a.gguf', '--cache_prompt'], environ={'LLAMA_ARG_CACHE_PROMPT': '0'})
    proc(tmp_path, 18, m + ['--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_PROMPT': 'nope'})
    proc(tmp_path, 19, m + ['--lora', 'a.gguf', '--no-cache-prompt', '--cache-prompt', '--no_cache_prompt'])
    proc(tmp_path, 20, m + ['--lora', 'a.gguf'], environ={'LLAMA_ARG_NO_CACHE_PROMPT': '0'})
    proc(tmp_path, 21, m + ['-a', '--lora', '-m', 'base.gguf'])
    proc(tmp_path, 22, m + ['--lora', 'a.gguf', '--lora', 'b.gguf'])
    result = registry.run_one(ctx(tmp_path), llama_lora_cache)
    found = by_pid(result)
    assert found[10]['status'] == 'at_risk'
    assert [(a['path'], a['scale']) for a in found[10]['evidence']['adapters']] == [
        ('a.gguf', 1.0), ('b.gguf', 1.0), ('c.gguf', 0.5)]
    assert found[10]['evidence']['adapters'][2]['where'] == 'argv[5] --lora-scaled c.gguf:0.5'
    assert found[10]['evidence']['cache_ram'] == 8192 and found[10]['evidence']['cache_ram_source'] == 'default'
    assert found[10]['evidence']['paths_at_risk'] == ['per_request_restore', 'global_restore', 'global_slot']
    assert found[10]['evidence']['cache_prompt'] is True and found[10]['evidence']['cache_prompt_source'] == 'default'
    # --cache-ram 0 leaves the global path open: the slot reuses its own prefix.
    for pid in (11, 12):
        assert found[pid]['status'] == 'at_risk', found[pid]
        assert found[pid]['evidence']['paths_at_risk'] == ['global_slot']
        assert 'POST /lora-adapters' in found[pid]['summary'] and '--no-cache-prompt closes it' in found[pid]['summary']
    assert found[12]['evidence']['cache_ram_source'] == 'environment LLAMA_ARG_CACHE_RAM'
    # llama-server does not start with --cache-ram lots (std::stoi): at_risk stands on the default
    assert found[13]['status'] == 'at_risk' and "'lots'" in json.dumps(found[13]['evidence']['config_problems'])
    assert found[14]['status'] == 'ok'
    # Prompt caching off closes every path, whatever --cache-ram says.
    for pid, source in ((15, 'argv[7] --no-cache-prompt'), (16, 'environment LLAMA_ARG_CACHE_PROMPT'),
                        (20, 'environment LLAMA_ARG_NO_CACHE_PROMPT')):
        assert found[pid]['status'] == 'ok', found[pid]
        assert found[pid]['evidence']['cache_prompt'] is False
        assert found[pid]['evidence']['cache_prompt_source'] == source
        assert found[pid]['evidence']['exposed_paths'] == []
    # The command line wins over the environment: --cache_prompt (underscores) is --cache-prompt.
    assert found[17]['status'] == 'at_risk' and found[17]['evidence']['cache_prompt'] is True
    assert found[18]['status'] == 'at_risk' and "'nope' is not a boolean value" in json.dumps(found[18]['evidence'])
    # The last flag of the pair wins.
    assert found[19]['evidence']['cache_prompt'] is False and found[19]['status'] == 'ok'
    assert 'clients that send "cache_prompt": true bring the risk back' in found[15]['summary']
    # -a takes the next token as its value: --lora is the alias, no adapter is loaded (arg.cpp l.842-862)
    assert found[21]['status'] == 'ok' and found[21]['evidence']['adapters'] == []
    assert [a['path'] for a in found[22]['evidence']['adapters']] == ['a.gguf', 'b.gguf']
    assert result['status'] == 'at_risk'


def test_clients_forcing_cache_prompt_keep_the_risk(tmp_path):
    proc(tmp_path, 15, ['llama-server', '-m', 'm', '--lora', 'a.gguf', '--cache-ram', '0', '--no-cache-prompt'])
    settings = {'llama_lora_cache': {'clients_force_cache_prompt': True}}
    found = by_pid(registry.run_one(ctx(tmp_path, settings=settings), llama_lora_cache))
    assert found[15]['status'] == 'at_risk'
    assert found[15]['evidence']['paths_at_risk'] == ['global_slot']
    assert 'clients force prompt caching' in found[15]['summary']


def test_config_files_are_the_lowest_layer(tmp_path):
    """arg.cpp l.722-775: /etc/llama.cpp/config.ini, then the user's, then the environment, then argv."""
    root = tmp_path / 'root'
    (root / 'etc' / 'llama.cpp').mkdir(parents=True)
    system = root / 'etc' / 'llama.cpp' / 'config.ini'
    system.write_text('[*]\ncache-ram = 0\nlora = /m/persona.gguf\n')
    user = root / 'cfg' / 'llama.cpp'
    user.mkdir(parents=True)
    (user / 'config.ini').write_text('no-cache-prompt = true\n')
    env = {'XDG_CONFIG_HOME': '/cfg'}
    m = ['llama-server', '-m', 'm']
    proc(tmp_path, 60, m + ['--lora', 'a.gguf'], environ=env, root=root)
    proc(tmp_path, 61, m + ['--lora', 'a.gguf', '--cache-prompt'], environ=env, root=root)
    proc(tmp_path, 62, m + ['--lora', 'a.gguf'], environ=dict(env, LLAMA_ARG_CACHE_RAM='512'), root=root)
    proc(tmp_path, 63, m, environ={'HOME': '/nohome'}, root=root)
    found = by_pid(registry.run_one(ctx(tmp_path), llama_lora_cache))
    assert found[60]['status'] == 'ok'
    assert found[60]['evidence']['cache_ram'] == 0
    assert found[60]['evidence']['cache_ram_source'] == '/etc/llama.cpp/config.ini:2 [*]'
    assert found[60]['evidence']['cache_prompt_source'] == '/cfg/llama.cpp/config.ini:1 [default]'
    # the config file's adapter and the command line's both load, the file's first
    assert [a['path'] for a in found[60]['evidence']['adapters']] == ['/m/persona.gguf', 'a.gguf']
    assert found[61]['evidence']['paths_at_risk'] == ['global_slot']
    assert found[62]['evidence']['cache_ram'] == 512
    # only the system file applies here, and its adapter alone is a finding
    assert found[63]['status'] == 'at_risk' and found[63]['evidence']['paths_at_risk'] == ['global_slot']
    (user / 'config.ini').write_text('[default]\ncache-prompt = nonsense\n')
    found = by_pid(registry.run_one(ctx(tmp_path), llama_lora_cache))
    # A file value is read with is_truthy only: anything else is false (preset.cpp l.154-155).
    assert found[60]['evidence']['cache_prompt'] is False


def test_lora_presets_and_router_override(tmp_path):
    preset = tmp_path / 'models.ini'
    preset.write_text('[*]\nlora = /m/persona.gguf\n[chat]\nmodel = /m/a.gguf\n[plain]\nmodel = /m/b.gguf\ncache-ram = 0\n'
                      '[quiet]\nmodel = /m/c.gguf\ncache-ram = 0\nno-cache-prompt = true\n')
    settings = {'llama_lora_cache': {'preset_paths': [str(preset)]}}
    result = registry.run_one(ctx(tmp_path, settings=settings), llama_lora_cache)
    sections = dict((i['evidence']['section'], i) for i in result['evidence']['instances'])
    # no router runs it: the user-level config.ini of whoever would is unknown, so no section is ok
    assert dict((k, v['status']) for k, v in sections.items()) == {'chat': 'at_risk', 'plain': 'at_risk',
                                                                   'quiet': 'unknown'}
    assert 'user-level config.ini' in sections['quiet']['summary']
    assert sections['plain']['evidence']['paths_at_risk'] == ['global_slot']
    assert sections['quiet']['evidence']['cache_prompt_source'] == '%s:11 [quiet]' % preset
    # A router whose command line turns caching off: its argv is merged over every section (server-models.cpp
    # l.744-748), so every model is ok.
    proc(tmp_path, 20, ['llama-server', '--models-preset', str(preset), '--cache-ram', '0', '--no-cache-prompt'])
    overridden = registry.run_one(ctx(tmp_path), llama_lora_cache)
    presets = [i for i in overridden['evidence']['instances'] if i['evidence'].get('section')]
    assert len(presets) == 3 and all(i['status'] == 'ok' for i in presets)
    assert presets[0]['evidence']['cache_prompt_source'] == 'router argv[5] --no-cache-prompt'


def test_a_routers_environment_reaches_its_children(tmp_path):
    """The children run with the router's environment (server-models.cpp l.1193-1195): LLAMA_ARG_CACHE_PROMPT=0
    turns caching off in a child whose section does not set it; a section that does is rendered as
    --cache-prompt on the child's command line, which wins."""
    preset = tmp_path / 'models.ini'
    preset.write_text('[a]\nmodel = /m.gguf\nlora = /m/l.gguf\n[b]\nmodel = /m.gguf\nlora = /m/l.gguf\ncache-prompt = true\n')
    proc(tmp_path, 21, ['llama-server', '--models-preset', str(preset)], environ={'LLAMA_ARG_CACHE_PROMPT': '0'})
    found = dict((i['evidence'].get('section'), i) for i in registry.run_one(ctx(tmp_path), llama_lora_cache)[
        'evidence']['instances'])
    assert found['a']['status'] == 'ok'
    assert found['a']['evidence']['cache_prompt_source'] == 'environment LLAMA_ARG_CACHE_PROMPT'
    assert found['b']['status'] == 'at_risk'


def test_probe_targets_and_api_keys(tmp_path):
    keys = tmp_path / 'keys'
    keys.write_text('# comment\n\nsecret-one\nsecret-two\n')
    m = ['llama-server', '-m', 'm']
    proc(tmp_path, 40, m + ['--host', '0.0.0.0', '--port', '8090', '--api-key-file', str(keys)])
    proc(tmp_path, 41, m + ['--host', '/run/llama.sock'])
    proc(tmp_path, 42, m + ['--host', '::1', '--api-key', 'k1,k2'])
    proc(tmp_path, 43, m + ['--port', '8091'], environ={'LLAMA_API_KEY': 'envkey'})
    context = ctx(tmp_path)
    found = dict((i.process.pid, i) for i in llama_server.instances(context)[0])

    def target(pid):
        inst = found[pid]
        return llama_server.probe_target(inst, inst.config(inst.rule_sets[0]))
    assert target(40) == ('http://127.0.0.1:8090', 'secret-one', None)
    assert 'unix socket' in target(41)[2]
    assert target(42) == ('http://[::1]:8080', 'k1', None)
    assert target(43) == ('http://127.0.0.1:8091', 'envkey', None)


def test_probes_are_refused_when_the_server_listens_elsewhere(tmp_path):
    proc(tmp_path, 50, ['llama-server', '-m', 'm', '--lora', 'a.gguf', '--host', '192.0.2.7', '--port', '8080'])
    context = AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                           kernel_release='6.18.0', probes=['lora_cache'], which=lambda name: None,
                           run_command=lambda cmd: (0, '', VERSION % 11434))
    os.makedirs(str(tmp_path / 'sys'), exist_ok=True)
    result = registry.run_one(context, llama_lora_cache)
    entry = result['evidence']['instances'][0]
    assert entry['status'] == 'at_risk'  # the inference stands
    assert 'only talk to loopback' in entry['evidence']['probe']['reason']
