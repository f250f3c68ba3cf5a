"""ollama_format_think over HTTP against the Ollama stand-in (tests/ollama_standin.py; no Ollama
binary can run here); the stand-in and its models are described in test_ollama_schema_order.py.

Expected verdicts come from upstream's code (ollama/ollama @ v0.33.0-rc2 = fb3076099 unless another
tag is named); each case says which lines decide it.
"""
import pytest

from ....helpers.ollama import OllamaStandIn, by_model, format_think, models, statuses


@pytest.fixture
def standin():
    server = OllamaStandIn('0.33.0-rc2', models())
    yield server
    server.close()


def test_format_think_spares_native_and_cloud_models(tmp_path, standin):
    finding = format_think(tmp_path, standin)
    assert statuses(finding) == {
        # Native: handleNativeChat runs before the two-pass logic (routes.go l.2674-2677).
        'qwen3:0.6b': 'ok',
        # Rendered with a thinking Go template, or a thinking parser: the first pass has no format (l.2764-2766).
        'thinker:latest': 'at_risk', 'gemma4:12b': 'at_risk',
    }
    assert 'gpt-oss:120b-cloud' not in standin.shown


def test_format_think_when_the_setting_turns_the_go_template_off(tmp_path, standin):
    standin.go_template_env = 'false'
    found = statuses(format_think(tmp_path, standin, environ={'OLLAMA_GO_TEMPLATE': 'false'}))
    assert found['thinker:latest'] == 'ok' and found['gemma4:12b'] == 'at_risk'


def test_format_think_probe_measures_a_rendered_thinking_model(tmp_path, standin):
    probed = format_think(tmp_path, standin, probes=['format_think'], probe_models=['thinker:latest'])
    thinker = by_model(probed)['thinker:latest']
    assert thinker['status'] == 'affected'
    probe = thinker['evidence']['probe']
    assert (probe['requests'], probe['skipped_thinking'], probe['broke_schema_without_thinking']) == (6, 3, 3)
    assert by_model(probed)['gemma4:12b']['status'] == 'at_risk'  # not in probe_models


def test_format_think_fixed_in(tmp_path, standin):
    assert format_think(tmp_path, standin, fixed_in='0.33')['status'] == 'at_risk'        # 0.33.0 > 0.33.0-rc2
    assert format_think(tmp_path / 'b', standin, fixed_in='0.33.0-rc1')['status'] == 'ok'
    assert format_think(tmp_path / 'c', standin, fixed_in='0.33.0~x')['status'] == 'error'


@pytest.mark.parametrize('version,status,qwen', [
    ('0.12.3', 'ok', None),
    ('0.12.4-rc6', 'ok', None),        # 77060d462 (PR 12460) is not in v0.12.4-rc0..rc6
    ('0.12.4-rc7', 'at_risk', 'at_risk'),  # ... and is in rc7; before v0.30.0-rc0 every model is rendered
    ('0.12.4', 'at_risk', 'at_risk'),
    ('0.25.0-rc0', 'at_risk', 'at_risk'),
    ('0.30.0-rc23', 'at_risk', 'ok'),
    ('0.0.0', 'unknown', None),
])
def test_format_think_by_version(tmp_path, standin, version, status, qwen):
    standin.version = version
    finding = format_think(tmp_path, standin)
    assert finding['status'] == status, finding['summary']
    assert statuses(finding).get('qwen3:0.6b') == qwen
