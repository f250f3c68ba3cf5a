"""ollama_schema_order (ollama_format_think: test_ollama_format_think.py) over HTTP against the Ollama stand-in
(tests/ollama_standin.py; no Ollama binary can run here). The stand-in answers /api/tags and
/api/show the way GetModelInfo and the tags list build them, and its chat answers follow the
write-ups: a native-path model returns schema keys sorted, a rendered thinking model answers some
seeds at once with bare text. OLLAMA_GO_TEMPLATE comes from an ``ollama serve`` process table built
under a fixture /proc.

Expected verdicts come from upstream's code (ollama/ollama @ v0.33.0-rc2 = fb3076099 unless another
tag is named); each case says which lines decide it. The path rules themselves are covered in
../ollama/test_chat_path.py.
"""
import sys

import pytest

from ....helpers.paths import TESTS_DIR
from ....helpers.ollama import by_model, models, schema_order, statuses

sys.path.insert(0, TESTS_DIR)
from ollama_standin import OllamaStandIn, plain  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def standin():
    server = OllamaStandIn('0.33.0-rc2', models())
    yield server
    server.close()


# --- ollama_schema_order ---------------------------------------------------------------------------


def test_schema_order_per_model_with_the_setting_unset(tmp_path, standin):
    finding = schema_order(tmp_path, standin)
    assert finding['status'] == 'affected'
    assert statuses(finding) == {
        # No layer: native; /api/show answers the GGUF chat template (routes.go l.1623-1630), which proves it.
        'qwen3:0.6b': 'affected',
        # Go TEMPLATE, unset, no preferred GGUF template (it would have been shown): rendered (l.2384).
        'thinker:latest': 'ok', 'gemma3:1b': 'ok',
        # Native upstream, but /api/show cannot tell it from a {{ .Prompt }} layer: at risk, never ok.
        'base:latest': 'at_risk',
        'gemma4:12b': 'ok',                    # RENDERER/PARSER: rendered (l.2373)
        'nomic-embed:latest': 'not_applicable',  # no completion: refused chat (l.2633-2637)
    }
    assert finding['evidence']['cloud_models']['first'] == ['gpt-oss:120b-cloud']
    assert 'gpt-oss:120b-cloud' not in standin.shown   # its /api/show would be proxied to ollama.com
    assert finding['evidence']['ollama_go_template']['state'] == 'unset'


def test_a_true_setting_does_not_make_a_model_without_template_layer_rendered(tmp_path, standin):
    # OLLAMA_GO_TEMPLATE=true only matters with HasGoTemplate (l.2377-2379): a GGUF without a TEMPLATE layer
    # stays native, though /api/show's template field is never empty ({{ .Prompt }} or the GGUF template).
    found = statuses(schema_order(tmp_path, standin, environ={'OLLAMA_GO_TEMPLATE': 'true'}))
    assert found['qwen3:0.6b'] == 'affected'
    assert found['base:latest'] == 'at_risk'
    assert found['gemma3:1b'] == 'ok'


@pytest.mark.parametrize('raw,go_template_models', [
    # strconv.ParseBool via BoolWithDefault (envconfig l.177-190): false, f, 0, "false" turn it off ...
    ('false', 'affected'), ('f', 'affected'), ('0', 'affected'), ('"false"', 'affected'),
    # ... anything it cannot parse is true, and empty is unset (Var, l.375-377).
    ('off', 'ok'), ('no', 'ok'), ('', 'ok'),
])
def test_the_setting_is_read_as_go_reads_it(tmp_path, standin, raw, go_template_models):
    standin.go_template_env = raw
    found = statuses(schema_order(tmp_path, standin, environ={'OLLAMA_GO_TEMPLATE': raw}))
    assert (found['thinker:latest'], found['gemma3:1b']) == (go_template_models, go_template_models)
    assert found['gemma4:12b'] == 'ok'                      # a renderer wins whatever the setting
    assert found['base:latest'] == ('affected' if go_template_models == 'affected' else 'at_risk')


def test_an_unreadable_setting_leaves_go_template_models_at_risk(tmp_path, standin):
    # No ollama serve process in /proc (a container, another host): the setting cannot be read.
    finding = schema_order(tmp_path, standin, serve=False)
    found = statuses(finding)
    assert finding['evidence']['ollama_go_template']['state'] == 'unknown'
    assert found['gemma3:1b'] == 'at_risk' and found['qwen3:0.6b'] == 'affected' and found['gemma4:12b'] == 'ok'


def test_the_probe_measures_only_the_models_left_open(tmp_path, standin):
    standin.models['prompt-layer:latest'] = plain(template='{{ .Prompt }}')   # rendered upstream, looks like base
    finding = schema_order(tmp_path, standin, probes=['schema_order'])
    found = by_model(finding)
    assert found['base:latest']['status'] == 'affected'                     # measured: keys came back sorted
    assert found['base:latest']['evidence']['probe']['keys'] == ['alpha_animal', 'zeta_colour']
    assert found['prompt-layer:latest']['status'] == 'ok'                   # measured: declared order kept
    assert sum(1 for path in standin.requests if path == '/api/chat') == 2


@pytest.mark.parametrize('version,status', [
    ('0.4.7', 'ok'),           # format was a string: api/types.go @ v0.4.7 l.70
    ('0.5.0-rc1', 'affected'),  # llm/server.go @ v0.5.0 l.749-760: json.Unmarshal into llama.JsonSchema (a map)
    ('0.5.1', 'affected'),
    ('0.5.2-rc3', 'affected'),  # 9039c821a/18f6a98bd are not in v0.5.2-rc0..rc3
    ('0.5.2', 'ok'),           # llm/server.go @ v0.5.2 l.731: SchemaToGrammar(req.Format), raw
    ('0.25.0-rc0', 'ok'),      # no native path before v0.30.0-rc0
    ('0.30.0-rc31', 'affected'),  # the native path and the swapped template are in rc23..rc31 too
    ('0.0.0', 'unknown'),      # version/version.go l.3: a source build
])
def test_schema_order_by_version(tmp_path, standin, version, status):
    standin.version = version
    finding = schema_order(tmp_path, standin)
    assert finding['status'] == status, finding['summary']


def test_every_model_is_affected_on_0_5_1_and_named_in_the_summary(tmp_path, standin):
    standin.version = '0.5.1'
    finding = schema_order(tmp_path, standin)
    assert 'every model' in finding['summary'] and '0.5.2' in finding['summary']


# --- ollama_format_think ---------------------------------------------------------------------------
