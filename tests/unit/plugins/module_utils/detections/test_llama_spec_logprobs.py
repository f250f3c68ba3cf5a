"""llama_spec_logprobs on fake /proc trees: argument forms, environment, config files, presets, builds.
The real servers and probes are in tests/e2e (test_llama_spec_logprobs_real.py, test_llama_config_real.py)."""
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.llama_spec_logprobs import DETECTION as llama_spec_logprobs

from ....helpers.llama import by_pid, ctx, proc


def run(tmp_path, **kwargs):
    return registry.run_one(ctx(tmp_path, **kwargs), llama_spec_logprobs)


def test_spec_types_from_flags_environment_and_defaults(tmp_path):
    """--spec-type appends (arg.cpp l.4274-4280), a 'none' inside one list resets that list only
    (speculative.cpp l.2324-2340), speculation is on when any listed type is (l.2684-2706)."""
    proc(tmp_path, 30, ['llama-server', '-m', 'm', '-md', 'd.gguf', '--spec-type', 'draft-simple'])
    proc(tmp_path, 31, ['llama-server', '-m', 'm', '--spec-type', 'none,ngram-mod'])
    proc(tmp_path, 32, ['llama-server', '-m', 'm'], environ={'LLAMA_ARG_SPEC_TYPE': 'ngram-simple'})
    proc(tmp_path, 33, ['llama-server', '-m', 'm', '--spec-default'])
    proc(tmp_path, 35, ['llama-server', '-m', 'm', '--spec-type', 'none'])
    proc(tmp_path, 36, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod', '--spec-type', 'none'])
    proc(tmp_path, 37, ['llama-server', '-m', 'm', '--spec-type', 'none'], environ={'LLAMA_ARG_SPEC_TYPE': 'ngram-mod'})
    proc(tmp_path, 38, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod,none'])
    found = by_pid(run(tmp_path))
    status = dict((pid, entry['status']) for pid, entry in found.items())
    assert status == {30: 'at_risk', 31: 'ok', 32: 'at_risk', 33: 'at_risk', 35: 'ok', 36: 'at_risk', 37: 'at_risk',
                      38: 'ok'}
    assert found[36]['evidence']['spec_types'] == ['ngram-mod']
    assert found[36]['evidence']['spec_type_sources'] == ['argv[3] --spec-type ngram-mod', 'argv[5] --spec-type none']
    assert found[37]['evidence']['spec_type_sources'] == ['environment LLAMA_ARG_SPEC_TYPE', 'argv[3] --spec-type none']
    assert found[33]['evidence']['spec_types'] == ['ngram-mod']  # --spec-default pushes ngram-mod (arg.cpp l.4748-4753)


def test_a_draft_model_alone_and_its_gguf(tmp_path):
    """b11434: a draft model alone does not speculate unless its GGUF names a type (arg.cpp l.566-573);
    a file that cannot be read leaves it open (at_risk)."""
    proc(tmp_path, 34, ['llama-server', '-m', 'm', '-md', '/nonexistent/d.gguf'])
    found = by_pid(run(tmp_path))
    assert found[34]['status'] == 'at_risk' and 'could not be read' in found[34]['summary']


def test_config_file_and_preset_sections_speculate(tmp_path):
    """The issue's false oks: spec-type in a config file, and in a router preset section."""
    root = tmp_path / 'root'
    (root / 'etc' / 'llama.cpp').mkdir(parents=True)
    (root / 'etc' / 'llama.cpp' / 'config.ini').write_text('[*]\nspec-type = ngram-mod\n')
    proc(tmp_path, 40, ['llama-server', '-m', 'm', '--spec-type', 'none'], environ={'HOME': '/h'}, root=root)
    preset = tmp_path / 'p.ini'
    preset.write_text('[fast]\nmodel = /m.gguf\nspec-type = ngram-mod\n[plain]\nmodel = /m.gguf\n')
    proc(tmp_path, 41, ['llama-server', '--models-preset', str(preset)], environ={'HOME': '/h'})
    result = run(tmp_path)
    found = dict((i['name'], i) for i in result['evidence']['instances'])
    assert found['llama-server pid 40']['status'] == 'at_risk'
    assert found['llama-server pid 40']['evidence']['spec_type_sources'][0] == '/etc/llama.cpp/config.ini:2 [*]'
    assert found['router pid 41 model [fast] (%s)' % preset]['status'] == 'at_risk'
    assert found['router pid 41 model [plain] (%s)' % preset]['status'] == 'ok'


def test_the_unified_binary_is_a_server(tmp_path):
    """`llama serve|server` runs llama_server (app/llama.cpp l.65, 129-148); other subcommands do not."""
    proc(tmp_path, 50, ['/usr/local/bin/llama', 'serve', '-m', 'm', '--spec-type', 'ngram-mod'])
    proc(tmp_path, 51, ['llama', 'server', '-m', 'm'])
    proc(tmp_path, 52, ['llama', 'cli', '-m', 'm', '--spec-type', 'ngram-mod'])
    found = by_pid(run(tmp_path))
    assert sorted(found) == [50, 51]
    assert found[50]['status'] == 'at_risk' and found[50]['name'] == 'llama serve pid 50'
    assert found[51]['status'] == 'ok'


def test_a_known_older_build_is_judged_by_its_rules(tmp_path):
    """`llama-server --version` says which build runs (build-info.cpp.in); b9113 replaced the list on a
    repeat, b9246 appends to it."""
    for pid in (60, 61):
        proc(tmp_path, pid, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod', '--spec-type', 'none'])

    def systemctl(cmd):
        build = {60: 9113, 61: 9246}[int(cmd[0].split('/')[-2])]
        return 0, '', 'version: 1 (build %d, commit abc)\nbuilt with cc for x86_64\n' % build
    found = by_pid(run(tmp_path, systemctl=systemctl))
    assert found[60]['status'] == 'ok' and found[60]['evidence']['build']['build'] == 'b9113'
    assert found[61]['status'] == 'at_risk'


def test_an_unknown_build_is_judged_by_every_rule_it_may_follow(tmp_path):
    """build 0 is a build without git information (the PyPI wheel's): the verdict is the most serious of
    the rule sets such a build may follow, never an ok that only some of them give."""
    proc(tmp_path, 62, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod', '--spec-type', 'none'])

    def systemctl(cmd):
        return 0, '', 'version: 0.6.0-dev (build 0, commit unknown)\n'
    entry = by_pid(run(tmp_path, systemctl=systemctl))[62]
    assert entry['status'] == 'at_risk'
    assert 'b0-unknown' in entry['evidence']['build']['note']
    assert set(v['status'] for v in entry['evidence']['rules']['verdicts']) == {'ok', 'at_risk'}
