"""llama_lora_cache on fake /proc trees: argument forms, environment, presets and bad values
(llama_spec_logprobs is in test_llama_spec_logprobs.py). The real servers and probes are in tests/e2e."""
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from ....helpers.llama import by_pid, ctx, proc


def test_lora_adapter_forms_cache_settings_and_bad_values(tmp_path):
    proc(tmp_path, 10, ['llama-server', '--lora', 'a.gguf,b.gguf', '--lora-scaled', 'c.gguf:0.5'])
    proc(tmp_path, 11, ['llama-server', '--lora', 'a.gguf', '-cram', '0'])
    proc(tmp_path, 12, ['llama-server', '--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_RAM': '0'})
    proc(tmp_path, 13, ['llama-server', '--lora', 'a.gguf', '--cache-ram', 'lots'])
    proc(tmp_path, 14, ['llama-server', '-m', 'm.gguf'])
    proc(tmp_path, 15, ['llama-server', '--lora', 'a.gguf', '--cache-ram', '0', '--no-cache-prompt'])
    proc(tmp_path, 16, ['llama-server', '--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_PROMPT': 'off'})
    proc(tmp_path, 17, ['llama-server', '--lora', 'a.gguf', '--cache_prompt'], environ={'LLAMA_ARG_CACHE_PROMPT': '0'})
    proc(tmp_path, 18, ['llama-server', '--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_PROMPT': 'nope'})
    proc(tmp_path, 19, ['llama-server', '--lora', 'a.gguf', '--no-cache-prompt', '--cache-prompt', '--no_cache_prompt'])
    result = registry.run_one(ctx(tmp_path), llama_lora_cache)
    found = by_pid(result)
    assert found[10]['status'] == 'at_risk'
    assert found[10]['evidence']['adapters'] == [{'path': 'a.gguf', 'scale': 1.0}, {'path': 'b.gguf', 'scale': 1.0},
                                                 {'path': 'c.gguf', 'scale': 0.5}]
    assert found[10]['evidence']['cache_ram'] == 8192 and found[10]['evidence']['cache_ram_source'] == 'default'
    assert found[10]['evidence']['paths_at_risk'] == ['per_request_restore', 'global_restore', 'global_slot']
    assert found[10]['evidence']['cache_prompt'] is True and found[10]['evidence']['cache_prompt_source'] == 'default'
    # --cache-ram 0 leaves the global path open: the slot reuses its own prefix.
    for pid in (11, 12):
        assert found[pid]['status'] == 'at_risk', found[pid]
        assert found[pid]['evidence']['paths_at_risk'] == ['global_slot']
        assert 'POST /lora-adapters' in found[pid]['summary'] and '--no-cache-prompt closes it' in found[pid]['summary']
    assert found[12]['evidence']['cache_ram_source'] == 'environment LLAMA_ARG_CACHE_RAM'
    assert found[13]['status'] == 'error' and "'lots'" in found[13]['summary']
    assert found[14]['status'] == 'ok'
    # Prompt caching off closes every path, whatever --cache-ram says.
    for pid, source in ((15, 'command line'), (16, 'environment LLAMA_ARG_CACHE_PROMPT')):
        assert found[pid]['status'] == 'ok', found[pid]
        assert found[pid]['evidence']['cache_prompt'] is False
        assert found[pid]['evidence']['cache_prompt_source'] == source
        assert found[pid]['evidence']['exposed_paths'] == []
    # The command line wins over the environment: --cache_prompt (underscores) is --cache-prompt.
    assert found[17]['status'] == 'at_risk' and found[17]['evidence']['cache_prompt'] is True
    assert found[18]['status'] == 'error' and "LLAMA_ARG_CACHE_PROMPT='nope'" in found[18]['summary']
    # The last flag of the pair wins.
    assert found[19]['evidence']['cache_prompt'] is False and found[19]['status'] == 'ok'
    assert 'clients that send "cache_prompt": true bring the risk back' in found[15]['summary']
    assert result['status'] == 'at_risk'


def test_clients_forcing_cache_prompt_keep_the_risk(tmp_path):
    proc(tmp_path, 15, ['llama-server', '--lora', 'a.gguf', '--cache-ram', '0', '--no-cache-prompt'])
    settings = {'llama_lora_cache': {'clients_force_cache_prompt': True}}
    found = by_pid(registry.run_one(ctx(tmp_path, settings=settings), llama_lora_cache))
    assert found[15]['status'] == 'at_risk'
    assert found[15]['evidence']['paths_at_risk'] == ['global_slot']
    assert 'clients force prompt caching' in found[15]['summary']


def test_config_files_are_the_lowest_layer(tmp_path, monkeypatch):
    system = tmp_path / 'etc-llama.ini'
    system.write_text('[*]\ncache-ram = 0\n')
    monkeypatch.setattr(llama_server, 'SYSTEM_CONFIG', str(system))
    user = tmp_path / 'cfg' / 'llama.cpp'
    user.mkdir(parents=True)
    (user / 'config.ini').write_text('no-cache-prompt = true\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path / 'cfg')}
    proc(tmp_path, 60, ['llama-server', '--lora', 'a.gguf'], environ=env)
    proc(tmp_path, 61, ['llama-server', '--lora', 'a.gguf', '--cache-prompt'], environ=env)
    proc(tmp_path, 62, ['llama-server', '--lora', 'a.gguf'], environ=dict(env, LLAMA_ARG_CACHE_RAM='512'))
    proc(tmp_path, 63, ['llama-server', '--lora', 'a.gguf'])
    found = by_pid(registry.run_one(ctx(tmp_path), llama_lora_cache))
    assert found[60]['status'] == 'ok'
    assert found[60]['evidence']['cache_ram'] == 0 and found[60]['evidence']['cache_ram_source'] == '%s line 2' % system
    assert found[60]['evidence']['cache_prompt_source'] == '%s line 1' % (user / 'config.ini')
    assert found[61]['evidence']['paths_at_risk'] == ['global_slot']
    assert found[62]['evidence']['paths_at_risk'] == ['global_slot'] or found[62]['evidence']['cache_ram'] == 512
    # No HOME in its environment: the user file cannot be placed, and the evidence says so.
    assert found[63]['evidence']['paths_at_risk'] == ['global_slot']
    assert 'no HOME or XDG_CONFIG_HOME' in found[63]['evidence']['config_problems'][0]
    (user / 'config.ini').write_text('[default]\ncache-prompt = nonsense\n')
    found = by_pid(registry.run_one(ctx(tmp_path), llama_lora_cache))
    # A file value is read with is_truthy only: anything else is false.
    assert found[60]['evidence']['cache_prompt'] is False


def test_lora_presets_and_router_override(tmp_path):
    preset = tmp_path / 'models.ini'
    preset.write_text('[*]\nlora = /m/persona.gguf\n[chat]\nmodel = /m/a.gguf\n[plain]\nmodel = /m/b.gguf\ncache-ram = 0\n'
                      '[quiet]\nmodel = /m/c.gguf\ncache-ram = 0\nno-cache-prompt = true\n')
    settings = {'llama_lora_cache': {'preset_paths': [str(preset)]}}
    result = registry.run_one(ctx(tmp_path, settings=settings), llama_lora_cache)
    sections = dict((i['evidence']['section'], i) for i in result['evidence']['instances'])
    assert dict((k, v['status']) for k, v in sections.items()) == {'chat': 'at_risk', 'plain': 'at_risk', 'quiet': 'ok'}
    assert sections['plain']['evidence']['paths_at_risk'] == ['global_slot']
    assert sections['quiet']['evidence']['cache_prompt_from'] == '[quiet] line 11'
    proc(tmp_path, 20, ['llama-server', '--models-preset', str(preset), '--cache-ram', '0', '--no-cache-prompt'])
    overridden = registry.run_one(ctx(tmp_path), llama_lora_cache)
    presets = [i for i in overridden['evidence']['instances'] if 'section' in i['evidence']]
    assert len(presets) == 3 and all(i['status'] == 'ok' for i in presets)
    assert presets[0]['evidence']['cache_prompt_from'] == 'command line of router pid 20'


def test_probe_targets_and_api_keys(tmp_path):
    keys = tmp_path / 'keys'
    keys.write_text('# comment\n\nsecret-one\nsecret-two\n')
    proc(tmp_path, 40, ['llama-server', '--host', '0.0.0.0', '--port', '8090', '--api-key-file', str(keys)])
    proc(tmp_path, 41, ['llama-server', '--host', '/run/llama.sock'])
    proc(tmp_path, 42, ['llama-server', '--host', '::1', '--api-key', 'k1,k2'])
    proc(tmp_path, 43, ['llama-server', '--port', 'http'], environ={'LLAMA_API_KEY': 'envkey'})
    processes = dict((p.pid, p) for p in hostio.list_processes(str(tmp_path / 'proc'), llama_processes.is_llama_server)[0])
    assert llama_server.probe_target(processes[40]) == ('http://127.0.0.1:8090', 'secret-one', None)
    assert 'unix socket' in llama_server.probe_target(processes[41])[2]
    assert llama_server.probe_target(processes[42]) == ('http://[::1]:8080', 'k1', None)
    assert llama_server.probe_target(processes[43])[2] == "port 'http' is not a number"


def test_probes_are_refused_when_the_server_listens_elsewhere(tmp_path):
    proc(tmp_path, 50, ['llama-server', '--lora', 'a.gguf', '--host', '192.0.2.7', '--port', '8080'])
    context = AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                           kernel_release='6.18.0', probes=['lora_cache'], which=lambda name: None)
    os.makedirs(str(tmp_path / 'sys'), exist_ok=True)
    result = registry.run_one(context, llama_lora_cache)
    entry = result['evidence']['instances'][0]
    assert entry['status'] == 'at_risk'  # the inference stands
    assert 'only talk to loopback' in entry['evidence']['probe']['reason']
