"""llama_lora_cache and llama_spec_logprobs on fake /proc trees: argument forms,
environment, presets and bad values. The real servers and probes are in tests/e2e."""
import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_spec_logprobs
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext

from test_llama_sleep_race import ctx, proc


def by_pid(result):
    return dict((i['evidence'].get('pid'), i) for i in result['evidence']['instances'])


def test_lora_adapter_forms_cache_settings_and_bad_values(tmp_path):
    proc(tmp_path, 10, ['llama-server', '--lora', 'a.gguf,b.gguf', '--lora-scaled', 'c.gguf:0.5'])
    proc(tmp_path, 11, ['llama-server', '--lora', 'a.gguf', '-cram', '0'])
    proc(tmp_path, 12, ['llama-server', '--lora', 'a.gguf'], environ={'LLAMA_ARG_CACHE_RAM': '0'})
    proc(tmp_path, 13, ['llama-server', '--lora', 'a.gguf', '--cache-ram', 'lots'])
    proc(tmp_path, 14, ['llama-server', '-m', 'm.gguf'])
    result = registry.run_one(ctx(tmp_path), llama_lora_cache)
    found = by_pid(result)
    assert found[10]['status'] == 'at_risk'
    assert found[10]['evidence']['adapters'] == [{'path': 'a.gguf', 'scale': 1.0}, {'path': 'b.gguf', 'scale': 1.0},
                                                 {'path': 'c.gguf', 'scale': 0.5}]
    assert found[10]['evidence']['cache_ram'] == 8192 and found[10]['evidence']['cache_ram_source'] == 'default'
    assert found[11]['status'] == 'ok'
    assert found[12]['status'] == 'ok' and found[12]['evidence']['cache_ram_source'] == 'environment LLAMA_ARG_CACHE_RAM'
    assert found[13]['status'] == 'error' and "'lots' is not a number" in found[13]['summary']
    assert found[14]['status'] == 'ok'
    assert result['status'] == 'at_risk'


def test_lora_presets_and_router_override(tmp_path):
    preset = tmp_path / 'models.ini'
    preset.write_text('[*]\nlora = /m/persona.gguf\n[chat]\nmodel = /m/a.gguf\n[plain]\nmodel = /m/b.gguf\ncache-ram = 0\n')
    settings = {'llama_lora_cache': {'preset_paths': [str(preset)]}}
    result = registry.run_one(ctx(tmp_path, settings=settings), llama_lora_cache)
    sections = dict((i['evidence']['section'], i['status']) for i in result['evidence']['instances'])
    assert sections == {'chat': 'at_risk', 'plain': 'ok'}
    proc(tmp_path, 20, ['llama-server', '--models-preset', str(preset), '--cache-ram', '0'])
    overridden = registry.run_one(ctx(tmp_path), llama_lora_cache)
    assert all(i['status'] == 'ok' for i in overridden['evidence']['instances'])


def test_spec_types_from_flags_environment_and_defaults(tmp_path):
    proc(tmp_path, 30, ['llama-server', '-md', 'd.gguf', '--spec-type', 'draft-simple'])
    proc(tmp_path, 31, ['llama-server', '--spec-type', 'none,ngram-mod'])
    proc(tmp_path, 32, ['llama-server'], environ={'LLAMA_ARG_SPEC_TYPE': 'ngram-simple'})
    proc(tmp_path, 33, ['llama-server', '--spec-default'])
    proc(tmp_path, 34, ['llama-server', '-md', 'd.gguf'])
    proc(tmp_path, 35, ['llama-server', '--spec-type', 'none'])
    found = by_pid(registry.run_one(ctx(tmp_path), llama_spec_logprobs))
    assert [found[p]['status'] for p in (30, 31, 32, 33, 34, 35)] == ['at_risk'] * 4 + ['ok'] * 2
    assert found[31]['evidence']['spec_types'] == ['ngram-mod']
    assert found[32]['evidence']['spec_type_source'] == 'environment LLAMA_ARG_SPEC_TYPE'
    assert found[33]['evidence']['spec_types'] == ['default']
    assert '-md alone does not turn speculation on' in found[34]['evidence']['note']


def test_probe_targets_and_api_keys(tmp_path):
    keys = tmp_path / 'keys'
    keys.write_text('# comment\n\nsecret-one\nsecret-two\n')
    proc(tmp_path, 40, ['llama-server', '--host', '0.0.0.0', '--port', '8090', '--api-key-file', str(keys)])
    proc(tmp_path, 41, ['llama-server', '--host', '/run/llama.sock'])
    proc(tmp_path, 42, ['llama-server', '--host', '::1', '--api-key', 'k1,k2'])
    proc(tmp_path, 43, ['llama-server', '--port', 'http'], environ={'LLAMA_API_KEY': 'envkey'})
    processes = dict((p.pid, p) for p in hostio.list_processes(str(tmp_path / 'proc'), llama_server.is_llama_server)[0])
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
