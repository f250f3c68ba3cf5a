"""llama_spec_logprobs on fake /proc trees: argument forms, environment and defaults.
The real servers and probes are in tests/e2e."""
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_spec_logprobs

from ....helpers.llama import by_pid, ctx, proc


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
