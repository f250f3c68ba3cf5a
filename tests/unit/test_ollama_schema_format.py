"""ollama_schema_order and ollama_format_think over HTTP against the Ollama stand-in
(tests/ollama_standin.py; no Ollama binary can run here). The stand-in answers /api/tags and
/api/show the way GetModelInfo and the tags list build them, and its chat answers follow the
write-ups: a native-path model returns schema keys sorted, a rendered thinking model answers some
seeds at once with bare text. OLLAMA_GO_TEMPLATE comes from an ``ollama serve`` process table built
under a fixture /proc.

Expected verdicts come from upstream's code (ollama/ollama @ v0.33.0-rc2 = fb3076099 unless another
tag is named); each case says which lines decide it. The path rules themselves are covered in
test_ollama_chat_path.py.
"""
import os
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_format_think, ollama_schema_order

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ollama_standin import OllamaStandIn, cloud, gemma4, plain  # noqa: E402  pylint: disable=wrong-import-position

QWEN_CHAT_TEMPLATE = "{%- for message in messages %}{{ message.content }}{%- endfor %}<think>\n</think>"
GO_TEMPLATE = '{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n'
GO_THINKING_TEMPLATE = GO_TEMPLATE + '{{ if .Think }}<think>{{ end }}'


def models():
    return {
        # No TEMPLATE layer, a GGUF chat template with <think>: native (routes.go l.2376-2379), thinking.
        'qwen3:0.6b': plain('751.63M', family='qwen3', thinking=True, chat_template=QWEN_CHAT_TEMPLATE,
                            direct_seeds=(2,)),
        # A Go TEMPLATE layer with thinking tags and a GGUF chat template: rendered unless OLLAMA_GO_TEMPLATE is false.
        'thinker:latest': plain('4.0B', family='qwen3', thinking=True, template=GO_THINKING_TEMPLATE,
                                chat_template=QWEN_CHAT_TEMPLATE, direct_seeds=(2,)),
        # No layer, no GGUF chat template: native upstream, shown as {{ .Prompt }} like a layer of that text.
        'base:latest': plain('270M', family='gemma3'),
        # A Go TEMPLATE layer, no GGUF chat template.
        'gemma3:1b': plain(template=GO_TEMPLATE),
        'gemma4:12b': gemma4('11.9B'),
        'nomic-embed:latest': plain('137M', family='nomic-bert', embedding=True),
        'gpt-oss:120b-cloud': cloud('gpt-oss:120b'),
    }


@pytest.fixture
def standin():
    server = OllamaStandIn('0.33.0-rc2', models())
    yield server
    server.close()


def ctx_for(tmp_path, server, check, probes=(), environ=None, serve=True, **settings):
    proc = tmp_path / 'proc' / '77'
    proc.mkdir(parents=True)
    (proc / 'cmdline').write_bytes(b'/usr/local/bin/ollama\x00serve\x00' if serve else b'/bin/sh\x00')
    (proc / 'environ').write_bytes(b'\x00'.join(('%s=%s' % kv).encode() for kv in (environ or {}).items()))
    (proc / 'cgroup').write_text('0::/\n')
    values = {'url': server.url}
    values.update(settings)
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        probes=probes, settings=registry.validate_settings({check: values}))


def by_model(finding):
    return dict((i['evidence']['model'], i) for i in finding['evidence'].get('instances', []))


def statuses(finding):
    return dict((model, i['status']) for model, i in by_model(finding).items())


def schema_order(tmp_path, server, **kwargs):
    return registry.run_one(ctx_for(tmp_path, server, 'ollama_schema_order', **kwargs), ollama_schema_order)


def format_think(tmp_path, server, **kwargs):
    return registry.run_one(ctx_for(tmp_path, server, 'ollama_format_think', **kwargs), ollama_format_think)


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
