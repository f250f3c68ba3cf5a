"""ollama_schema_order and ollama_format_think over HTTP against the Ollama stand-in
(tests/ollama_standin.py; no Ollama binary can be installed here). The stand-in's chat answers
follow the write-ups: a native-path model returns schema keys sorted, a thinking model answers
some seeds at once with bare text. OLLAMA_GO_TEMPLATE comes from an ``ollama serve`` process
table built under a fixture /proc."""
import os
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_format_think, ollama_schema_order

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ollama_standin import OllamaStandIn, gemma4, plain  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def standin():
    server = OllamaStandIn('0.35.1', {
        'gemma3:1b': plain(native=True),
        'qwen3:0.6b': plain('751.63M', family='qwen3', thinking=True, direct_seeds=(2,)),
        'gemma4:12b': gemma4('11.9B'),
    })
    yield server
    server.close()


def ctx_for(tmp_path, server, check, probes=(), environ=None, **settings):
    proc = tmp_path / 'proc' / '77'
    proc.mkdir(parents=True)
    (proc / 'cmdline').write_bytes(b'/usr/local/bin/ollama\x00serve\x00')
    (proc / 'environ').write_bytes(b'\x00'.join(('%s=%s' % kv).encode() for kv in (environ or {}).items()))
    (proc / 'cgroup').write_text('0::/\n')
    values = {'url': server.url}
    values.update(settings)
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        probes=probes, settings=registry.validate_settings({check: values}))


def by_model(finding):
    return dict((i['evidence']['model'], i) for i in finding['evidence'].get('instances', []))


def test_schema_order_without_probe_marks_the_native_candidates(tmp_path, standin):
    finding = registry.run_one(ctx_for(tmp_path, standin, 'ollama_schema_order'), ollama_schema_order)
    found = by_model(finding)
    assert finding['status'] == 'at_risk'
    assert found['gemma4:12b']['status'] == 'ok'  # renderer/parser: rendered path
    assert found['gemma3:1b']['status'] == 'at_risk'
    assert finding['evidence']['ollama_go_template'] is None


def test_schema_order_with_go_template_false_and_the_probe(tmp_path, standin):
    ctx = ctx_for(tmp_path, standin, 'ollama_schema_order', probes=['schema_order'], environ={'OLLAMA_GO_TEMPLATE': 'false'})
    finding = registry.run_one(ctx, ollama_schema_order)
    found = by_model(finding)
    assert finding['evidence']['ollama_go_template'] is False
    assert 'environment of ollama serve pid 77' in finding['evidence']['ollama_go_template_from']
    assert found['gemma3:1b']['status'] == 'affected'
    assert found['gemma3:1b']['evidence']['probe']['keys'] == ['alpha_animal', 'zeta_colour']
    # A model without renderer that keeps the declared order: measured ok.
    assert found['qwen3:0.6b']['status'] == 'ok' and 'kept' in found['qwen3:0.6b']['summary']
    assert sum(1 for path in standin.requests if path == '/api/chat') == 2  # one request per model at risk


def test_schema_order_before_0_30_has_no_native_path(tmp_path, standin):
    standin.version = '0.29.9'
    assert registry.run_one(ctx_for(tmp_path, standin, 'ollama_schema_order'), ollama_schema_order)['status'] == 'ok'


def test_format_think_flags_thinking_models_and_the_probe_measures(tmp_path, standin):
    finding = registry.run_one(ctx_for(tmp_path, standin, 'ollama_format_think'), ollama_format_think)
    found = by_model(finding)
    assert set(found) == {'qwen3:0.6b', 'gemma4:12b'} and all(i['status'] == 'at_risk' for i in found.values())

    probed = registry.run_one(ctx_for(tmp_path / 'p', standin, 'ollama_format_think', probes=['format_think'],
                                      probe_models=['qwen3:0.6b']), ollama_format_think)
    qwen = by_model(probed)['qwen3:0.6b']
    assert qwen['status'] == 'affected'
    probe = qwen['evidence']['probe']
    assert (probe['requests'], probe['skipped_thinking'], probe['broke_schema_without_thinking']) == (6, 3, 3)
    assert by_model(probed)['gemma4:12b']['status'] == 'at_risk'  # not in probe_models


@pytest.mark.parametrize('version,status', [('0.12.3', 'ok'), ('0.12.4', 'at_risk'), ('0.35.1', 'at_risk')])
def test_format_think_by_version(tmp_path, standin, version, status):
    standin.version = version
    assert registry.run_one(ctx_for(tmp_path, standin, 'ollama_format_think'), ollama_format_think)['status'] == status
