"""llama/server.py: which instances a host has, and the options the detections read under every spelling.

llama.cpp (b11434, common/arg.cpp l.819-822) turns '_' into '-' in an argument that starts with '--'
before it looks the name up, so every option the detections read must be found under its underscore
spelling too."""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server

from ....helpers.llama import ctx, proc

READ = [llama_args.SLEEP_IDLE_SECONDS, llama_args.CACHE_RAM, llama_args.LORA, llama_args.LORA_SCALED,
        llama_args.SPEC_TYPE, llama_args.SPEC_DRAFT_MODEL, llama_args.MODELS_PRESET, llama_args.HOST,
        llama_args.PORT, llama_args.API_KEY, llama_args.ALIAS]


@pytest.mark.parametrize('option', READ, ids=[o.key for o in READ])
def test_every_option_is_read_under_its_underscore_spelling(tmp_path, option):
    spelled = option.key[:2] + option.key[2:].replace('-', '_')
    value = {'int': '7', 'string': 'v1:1'}[option.kind]
    proc(tmp_path, 5, ['llama-server', '-m', 'm', spelled, value])
    inst = llama_server.instances(ctx(tmp_path))[0][0]
    setting = inst.config(inst.rule_sets[0]).last(option)
    assert setting is not None and setting.raw == value and setting.where.startswith('argv[3] ' + spelled)


def test_instances_and_what_is_not_one(tmp_path):
    """A `llama` running another subcommand is not a server (app/llama.cpp l.64-78); a model-less
    llama-server is a router (server.cpp l.150-153) whose own process is not an instance."""
    proc(tmp_path, 1, ['llama', 'cli', '-m', 'm'])
    proc(tmp_path, 2, ['/usr/bin/llama', 'server', '-m', 'm'])
    proc(tmp_path, 3, ['llama-server', '--port', '9000'])
    proc(tmp_path, 4, ['llama-server', '--port', '9001'], environ={'LLAMA_ARG_MODEL': '/m.gguf'})
    found, evidence = llama_server.instances(ctx(tmp_path))
    assert sorted(i.name for i in found) == ['llama serve pid 2', 'llama-server pid 4',
                                             'router pid 3, models from its cache or --models-dir']
    assert evidence['routers'] == [3] and evidence['llama_server_processes'] == 3
