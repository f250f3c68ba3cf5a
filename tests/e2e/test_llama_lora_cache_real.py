"""llama_lora_cache on real llama-server processes with a real LoRA adapter.

This llama-server build has the bug: the probe must find the mix-up on a
default server and not on one started with --cache-ram 0, and it must leave
the server's adapter scales exactly as it found them.
"""
from helpers import http_json, local_host, run_audit


def lora_instance(run, pid):
    finding = run.finding('localhost', 'llama_lora_cache')
    return [i for i in finding['evidence']['instances'] if i['evidence'].get('pid') == pid][0]


def audit(tmp_path, probes=()):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_checks': ['llama_lora_cache'], 'postmortem_probes': list(probes)}, timeout=600)
    assert run.proc.returncode == 0, run.output
    return run


def test_default_cache_is_at_risk_and_the_probe_measures_the_mix_up(tmp_path, llama_server, lora_adapter):
    default = llama_server('--lora', lora_adapter)
    cache_off = llama_server('--lora', lora_adapter, '--cache-ram', '0')
    plain = llama_server()
    scales_before = http_json('http://127.0.0.1:%d/lora-adapters' % default.port)

    inferred = audit(tmp_path)
    assert lora_instance(inferred, default.pid)['status'] == 'at_risk'
    assert lora_instance(inferred, default.pid)['evidence']['cache_ram'] == 8192
    assert lora_instance(inferred, cache_off.pid)['status'] == 'ok'
    assert lora_instance(inferred, plain.pid)['summary'].endswith('loads no LoRA adapter.')

    measured = audit(tmp_path / 'probe', probes=['lora_cache'])
    hit = lora_instance(measured, default.pid)
    assert hit['status'] == 'affected', hit
    probe = hit['evidence']['probe']
    assert probe['per_request']['verdict'] == 'affected'
    assert probe['per_request']['cache_n'] > 0
    assert probe['per_request']['answer'] != probe['per_request']['uncached_answer']
    assert probe['global']['scales_restored'] is True
    # Bounded: /props and GET adapters, 4 + slots per-request, 7 + slots global, restore and read-back.
    assert probe['requests'] == 15 + 2 * probe['slots']

    fixed = lora_instance(measured, cache_off.pid)
    assert fixed['status'] == 'ok', fixed
    assert fixed['evidence']['probe']['per_request']['reason'] == 'the cache never restored the probe'
    # No adapters: nothing to probe.
    assert 'probe' not in lora_instance(measured, plain.pid)['evidence']
    # The server is left as it was found.
    assert http_json('http://127.0.0.1:%d/lora-adapters' % default.port) == scales_before
    assert measured.finding('localhost', 'llama_lora_cache')['status'] == 'affected'
