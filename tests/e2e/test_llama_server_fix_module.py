"""llama_server_fix on this machine, where no systemd runs: a real llama-server with a
LoRA adapter started by the test is reported as unmanaged with the manual step, and
nothing is written. (The systemd paths run for real in roles/llama_server/molecule.)"""
import json

from helpers import run_module


def test_instances_without_a_unit_are_reported_not_touched(tmp_path, llama_server, lora_adapter):
    server = llama_server('--lora', lora_adapter, '--sleep-idle-seconds', '600')
    result = run_module(tmp_path, 'homelab.postmortem.llama_server_fix', {}, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    payload = json.loads(result.stdout.split(' => ', 1)[1])
    assert payload['changed'] is False and payload['units'] == []
    mine = [u for u in payload['unmanaged'] if u['pid'] == server.pid]
    assert mine and mine[0]['fixes'] == {'cache_ram_off': True, 'no_cache_prompt': False,
                                         'restart_on_failure': True, 'disable_sleep': False}
    assert 'not started by a system service' in mine[0]['manual']
    # Nothing could be changed where it is set (the command line of a process no unit starts): open, with why.
    assert sorted(o['fix'] for o in payload['open'] if o['pid'] == server.pid) == ['cache_ram_off', 'restart_on_failure']
    # Without no_cache_prompt the global path stays open, and the module says so.
    assert [g['cache_prompt_source'] for g in payload['global_path_open'] if g['pid'] == server.pid] == ['default']
    closing = json.loads(run_module(tmp_path, 'homelab.postmortem.llama_server_fix', {'no_cache_prompt': True},
                                    check=True).stdout.split(' => ', 1)[1])
    mine = [u for u in closing['unmanaged'] if u['pid'] == server.pid]
    assert mine[0]['fixes']['no_cache_prompt'] is True
    assert mine[0]['manual'] == ('not started by a system service: change it by hand: add --cache-ram 0; '
                                 'add --no-cache-prompt; have its supervisor restart it when it crashes')
    assert all(entry['pid'] != server.pid for entry in closing['global_path_open'])
    assert 'set --no-cache-prompt on its command line by hand' in [
        o for o in closing['open'] if o['pid'] == server.pid and o['fix'] == 'no_cache_prompt'][0]['reason']
