"""One argv reader for llama-server: llama.cpp (b11434, common/arg.cpp) turns '_' into '-' in an argument
that starts with '--' before it looks the name up, so every option the detections read must be found
under its underscore spelling too."""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server

OPTIONS = [(name, value) for name, value in vars(server).items() if isinstance(value, server.Option)]


@pytest.mark.parametrize('name,option', OPTIONS, ids=[n for n, _o in OPTIONS])
def test_every_option_is_read_under_its_underscore_spelling(name, option):
    long_names = [n for n in option.names if n.startswith('--') and '-' in n[2:]]
    if not long_names:
        pytest.skip('%s has no long name with a dash' % name)
    spelled = long_names[0][:2] + long_names[0][2:].replace('-', '_')
    argv = ['llama-server', spelled, 'v1,v2', spelled, 'v3']
    assert server.from_argv(argv, option) == 'v3'
    assert server.all_from_argv(argv, option) == ['v1', 'v2', 'v3']


def test_lora_scaled_with_an_underscore_is_an_adapter():
    """`llama-server --lora_scaled a.gguf:0.5` used to have no adapter for llama_lora_cache (a missed finding)."""
    assert server.lora_adapters(['llama-server', '-m', 'm.gguf', '--lora_scaled', 'a.gguf:0.5', '--lora', 'b.gguf']) == [
        {'path': 'b.gguf', 'scale': 1.0}, {'path': 'a.gguf', 'scale': 0.5}]


def test_flags_are_read_under_their_underscore_spelling():
    assert server.has_flag(['llama-server', '--no_cache_prompt'], server.CACHE_PROMPT_OFF)
    assert server.last_flag(['llama-server', '--cache_prompt', '--no_cache_prompt'], server.CACHE_PROMPT.names,
                            (server.CACHE_PROMPT_OFF,)) is False
