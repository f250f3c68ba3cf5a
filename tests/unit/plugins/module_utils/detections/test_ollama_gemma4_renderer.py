"""ollama_gemma4_renderer: the resolution rules of each Ollama version, and the detection over HTTP
against an Ollama stand-in (tests/ollama_standin.py): no Ollama binary can be installed here, so
its answers are built from upstream's code (server/renderer_resolution.go, server/routes.go
GetModelInfo, server/model_list_cache.go, types/model/name.go; ollama/ollama at v0.33.0-rc2 =
fb3076099 unless another tag is named) and the write-up's measurements (the 12B reports "11.9B").
Every expected renderer below is what resolveGemma4Renderer (renderer_resolution.go l.34-55)
returns for those inputs: short name, full name, parseHumanParameterCount(Config.ModelType)
(l.77-101), else gemma4-small (l.54)."""
import sys
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.ollama_gemma4_renderer import DETECTION as det
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4

from ....helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
from ollama_standin import OllamaStandIn, cloud, gemma4 as model, safetensors_gemma4  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version  # noqa: E402


def rules_of(text, fixed_in=None):
    rules, problem = gemma4.rule_set(ollama_version.parse(text)[0], fixed_in)
    assert problem is None
    return rules


V020, V021, V030, V0303, V035 = '0.20.7', '0.21.0', '0.30.2', '0.30.3', '0.35.1'


@pytest.mark.parametrize('text,full', [
    ('mygemma', 'registry.ollama.ai/library/mygemma:latest'),
    ('mygemma:latest', 'registry.ollama.ai/library/mygemma:latest'),
    ('ops/helper:26b', 'registry.ollama.ai/ops/helper:26b'),
    ('hf.co/user/repo:Q4_K_M', 'hf.co/user/repo:Q4_K_M'),
    ('localhost:5000/team/m:1', 'localhost:5000/team/m:1'),
])
def test_full_names(text, full):
    assert gemma4.full_name(text) == full


@pytest.mark.parametrize('text,count', [
    ('12B', 12e9), ('11.9B', 11.9e9), ('25.8B', 25.8e9), ('500M', 500e6), ('751.63M', 751630000),
    ('4.3b', 4.3e9),     # strings.ToUpper of the last byte (l.82)
    ('1e1B', 10e9), ('+12B', 12e9), ('.5B', 0.5e9), ('12.B', 12e9),   # all strconv.ParseFloat syntax
    ('0x1p3B', 8e9),     # ParseFloat reads hexadecimal floats with a p exponent
    ('1e400B', None),    # ParseFloat: ErrRange, so not ok (l.95-98): small
    ('', None),          # l.78-80: empty is not ok: small (a safetensors import stores no ModelType)
    ('12 B', None),      # ParseFloat("12 ") fails: small
    ('huge', None), ('１２B', None), ('12', None), ('0x1B', None),
])
def test_parameter_counts_as_upstream_parses_them(text, count):
    assert gemma4.parameter_count(text) == (count, None)


@pytest.mark.parametrize('text', ['InfB', '-infB', 'NaNB', '-5B', '2e10B'])
def test_parameter_counts_whose_go_conversion_depends_on_the_platform(text):
    # uint64() of a negative, infinite, NaN or too large float64 is implementation-specific in Go.
    count, problem = gemma4.parameter_count(text)
    assert count is None and 'platform' in problem


@pytest.mark.parametrize('version,short,size,expected', [
    # 0.30.3 and later: 12b is a large name, threshold 12e9; the write-up's table.
    (V035, 'gemma4:12b', '11.9B', 'gemma4-large'),
    (V035, 'mygemma:latest', '11.9B', 'gemma4-small'),
    (V035, 'assistant:latest', '11.9B', 'gemma4-small'),
    (V035, 'assistant-12b:latest', '11.9B', 'gemma4-large'),
    (V035, 'assistant:12b', '11.9B', 'gemma4-large'),
    (V035, 'helper:latest', '25.8B', 'gemma4-large'),
    (V035, 'gemma4:e4b', '8.0B', 'gemma4-small'),
    (V035, 'x-e4b-12b:latest', '11.9B', 'gemma4-small'),   # e2b/e4b is tested first
    (V035, 'hf.co/unsloth/gemma-4-12b-it-GGUF:Q4_K_M', '11.9B', 'gemma4-large'),
    (V035, 'hf.co/unsloth/gemma-4-E4B-it-GGUF:Q4_K_M', '8.0B', 'gemma4-small'),
    (V035, 'ops/helper:26b', '11.9B', 'gemma4-large'),
    (V035, 'tiny:latest', '500M', 'gemma4-small'),
    (V035, 'odd:latest', 'lots', 'gemma4-small'),      # not a count: l.54
    (V035, 'imported:latest', '', 'gemma4-small'),     # no ModelType (a safetensors import): l.54
    (V035, 'weird:latest', 'InfB', None),              # platform-dependent in Go
    # 0.21.0 - 0.30.2: no 12b name, threshold 16e9.
    (V030, 'gemma4:12b', '11.9B', 'gemma4-small'),
    (V021, 'gemma4:12b', '12B', 'gemma4-small'),
    (V021, 'helper:latest', '25.8B', 'gemma4-large'),
    (V0303, 'gemma4:12b', '11.9B', 'gemma4-large'),
    # Pre-releases: e585ecd11 is in v0.21.0-rc0, not in v0.20.8-rc0.
    ('0.21.0-rc0', 'helper:latest', '25.8B', 'gemma4-large'),
    ('0.20.8-rc0', 'helper:latest', '25.8B', 'gemma4'),
    # Before 0.21.0: one renderer.
    (V020, 'gemma4:26b', '25.8B', 'gemma4'),
])
def test_resolution_per_version(version, short, size, expected):
    assert gemma4.resolve('gemma4', short, size, rules_of(version))[0] == expected


def test_the_lowered_threshold_applies_only_from_the_setting():
    assert gemma4.resolve('gemma4', 'mygemma:latest', '11.9B', rules_of(V035))[0] == 'gemma4-small'
    lowered = rules_of(V035, fixed_in='0.35.0')
    assert gemma4.resolve('gemma4', 'mygemma:latest', '11.9B', lowered)[0] == 'gemma4-large'


def test_fixed_in_is_read_as_a_tag(standin):
    standin.models = {'mygemma:latest': model('11.9B')}
    assert detect(standin, fixed_in='0.35')['status'] == 'ok'          # 0.35 = 0.35.0 <= 0.35.1: 11.5e9
    assert detect(standin, fixed_in='0.35.2-rc1')['status'] == 'affected'
    finding = detect(standin, fixed_in='0.35.0~beta')
    assert finding['status'] == 'error' and 'fixed_in' in finding['summary']


def test_an_explicit_renderer_is_used_as_is():
    assert gemma4.resolve('gemma4-large', 'mygemma:latest', '11.9B', rules_of(V035))[0] == 'gemma4-large'
    assert gemma4.stored_renderer('FROM x\nRENDERER gemma4-large\nPARSER gemma4\n') == 'gemma4-large'


@pytest.fixture
def standin():
    server = OllamaStandIn()
    yield server
    server.close()


def detect(server, **settings):
    values = {'url': server.url}
    values.update(settings)
    ctx = AuditContext(settings=registry.validate_settings({'ollama_gemma4_renderer': values}))
    return registry.run_one(ctx, det)


def by_model(finding):
    return dict((i['evidence']['model'], i) for i in finding['evidence'].get('instances', []))


def test_the_write_ups_models_on_0_35_1(standin):
    standin.models = {'gemma4:12b': model('11.9B'), 'mygemma:latest': model('11.9B'),
                      'assistant:12b': model('11.9B'), 'pinned:latest': model('11.9B', renderer='gemma4-large'),
                      'gemma4:e4b': model('8.0B'), 'llama3:8b': model('8.0B', renderer=None, family='llama')}
    finding = detect(standin)
    found = by_model(finding)
    assert finding['status'] == 'affected'
    assert found['mygemma:latest']['status'] == 'affected'
    assert found['mygemma:latest']['evidence']['resolved_renderer'] == 'gemma4-small'
    assert found['mygemma:latest']['evidence']['decided_by'].startswith('model type 11.9B')
    for ok in ('gemma4:12b', 'assistant:12b', 'pinned:latest', 'gemma4:e4b'):
        assert found[ok]['status'] == 'ok', found[ok]
    assert 'llama3:8b' not in found
    assert finding['evidence']['rule_set'] == '0.30.3 and later'
    # 0.35.1 is newer than the newest tag read (v0.33.0-rc2): said in the evidence, not hidden.
    assert '0.33.0-rc2' in finding['evidence']['rules_read_to']
    standin.version = '0.33.0-rc2'
    assert 'rules_read_to' not in detect(standin)['evidence']
    assert 'mygemma:latest' in finding['summary']


def test_before_0_21_large_models_are_affected_and_cannot_be_pinned(standin):
    standin.version = '0.20.7'
    standin.models = {'gemma4:26b': model('25.8B'), 'pinned:latest': model('25.8B', renderer='gemma4-large')}
    found = by_model(detect(standin))
    assert found['gemma4:26b']['status'] == 'affected' and 'upgrade to 0.21.0' in found['gemma4:26b']['summary']
    assert found['pinned:latest']['status'] == 'affected' and 'unknown renderer' in found['pinned:latest']['summary']


def test_no_gemma4_model_is_not_applicable(standin):
    standin.models = {'llama3:8b': model('8.0B', renderer=None, family='llama')}
    assert detect(standin)['status'] == 'not_applicable'


@pytest.mark.parametrize('mode,status,fragment', [
    ('error', 'error', 'answered HTTP 500'),
    ('garbage', 'error', 'did not answer JSON'),
    ('slow', 'unknown', 'did not answer within 1.0 s'),
])
def test_a_misbehaving_server_gives_clear_results(standin, mode, status, fragment):
    standin.mode = mode
    started = time.monotonic()
    finding = detect(standin, timeout=1)
    assert time.monotonic() - started < 4
    assert finding['status'] == status and fragment in finding['summary'], finding


def test_nothing_listening_is_not_applicable(standin):
    url = standin.url
    standin.close()
    finding = registry.run_one(AuditContext(settings=registry.validate_settings(
        {'ollama_gemma4_renderer': {'url': url}})), det)
    assert finding['status'] == 'not_applicable'


def test_a_model_deleted_meanwhile_and_a_version_that_does_not_parse(standin):
    standin.models = {'gone:latest': model('11.9B'), 'mygemma:latest': model('11.9B')}
    standin.deleted = {'gone:latest'}
    found = by_model(detect(standin))
    assert found['gone:latest']['status'] == 'ok' and 'removed' in found['gone:latest']['summary']
    standin.version = 'v-next'
    assert detect(standin)['status'] == 'unknown'


def test_a_source_build_is_unknown_not_the_oldest_rules(standin):
    # version/version.go l.3: "0.0.0" is what `go build .` of any commit reports.
    standin.version = '0.0.0'
    standin.models = {'helper:latest': model('25.8B')}
    finding = detect(standin)
    assert finding['status'] == 'unknown' and 'version/version.go' in finding['summary'], finding


def test_a_build_between_rule_sets_is_unknown(standin):
    # scripts/env.sh l.3: 5 commits after v0.30.2 may or may not have 50bbda566 (first tagged v0.30.3).
    standin.version = '0.30.2-5-gabc1234'
    standin.models = {'mygemma:latest': model('11.9B')}
    finding = detect(standin)
    assert finding['status'] == 'unknown' and 'v0.30.3' in finding['summary'], finding


def test_a_safetensors_import_resolves_small_whatever_its_size(standin):
    # x/create/client/create.go l.388-402: a safetensors Gemma 4 gets RENDERER gemma4 and no ModelType;
    # /api/tags lists ModelType "" (model_list_cache.go l.334) while /api/show recomputes "30.7B" from
    # config.json (routes.go l.1429-1437). The resolver reads ModelType: "" -> not ok -> gemma4-small
    # (renderer_resolution.go l.50-54) for a 30.7e9-parameter model. Named with its size, the name wins.
    standin.models = {'mygemma:latest': safetensors_gemma4(30_700_000_000),
                      'gemma4-31b-local:latest': safetensors_gemma4(30_700_000_000)}
    assert standin.tag('mygemma:latest')['details']['parameter_size'] == ''
    assert standin.show('mygemma:latest')['details']['parameter_size'] == '30.7B'
    found = by_model(detect(standin))
    assert found['mygemma:latest']['status'] == 'affected', found['mygemma:latest']
    assert found['mygemma:latest']['evidence']['resolved_renderer'] == 'gemma4-small'
    assert found['mygemma:latest']['evidence']['real_parameter_count'] == 30_700_000_000
    assert found['gemma4-31b-local:latest']['status'] == 'ok'
    assert found['gemma4-31b-local:latest']['evidence']['resolved_renderer'] == 'gemma4-large'


def test_an_empty_model_type_is_small_and_judged_by_the_real_size(standin):
    # ModelType "" -> gemma4-small (l.54): affected for a 25.8e9 model, right for an 8e9 one.
    standin.models = {'big:latest': model('', parameter_count=25_800_000_000),
                      'small:latest': model('', parameter_count=8_000_000_000)}
    found = by_model(detect(standin))
    assert found['big:latest']['status'] == 'affected'
    assert found['small:latest']['status'] == 'ok'
    assert found['small:latest']['evidence']['resolved_renderer'] == 'gemma4-small'


def test_a_cloud_gemma4_is_not_resolved_here_and_not_shown(standin):
    # A cloud model is proxied (routes.go l.2518-2600) and its /api/show would be too (l.1328-1346).
    standin.models = {'gemma4:31b-cloud': cloud('gemma4:31b', family='gemma4'), 'mygemma:latest': model('11.9B')}
    found = by_model(detect(standin))
    assert found['gemma4:31b-cloud']['status'] == 'not_applicable'
    assert 'gemma4:31b-cloud' not in standin.shown
    assert found['mygemma:latest']['status'] == 'affected'


def test_a_huge_model_list_is_bounded(standin):
    standin.models = dict(('m%d:latest' % n, model('11.9B')) for n in range(30))
    finding = detect(standin, max_models=10)
    assert finding['evidence']['skipped_models']['count'] == 20
    assert len(finding['evidence']['instances']) == 10


def test_only_loopback_is_talked_to():
    ctx = AuditContext(settings=registry.validate_settings({'ollama_gemma4_renderer': {'url': 'http://192.0.2.1:11434'}}))
    finding = registry.run_one(ctx, det)
    assert finding['status'] == 'error' and 'only talk to loopback' in finding['summary']
