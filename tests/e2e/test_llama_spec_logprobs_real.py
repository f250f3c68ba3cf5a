"""llama_spec_logprobs on real llama-server processes (this build has the placeholder bug)."""
from helpers import local_host, run_audit


def spec_instance(run, pid):
    finding = run.finding('localhost', 'llama_spec_logprobs')
    return [i for i in finding['evidence']['instances'] if i['evidence'].get('pid') == pid][0]


def test_speculating_server_returns_placeholder_logprobs(tmp_path, llama_server, llama):
    spec = llama_server('-md', llama['model'], '--spec-type', 'draft-simple')
    draft_only = llama_server('-md', llama['model'])
    plain = llama_server()

    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_checks': ['llama_spec_logprobs'], 'postmortem_probes': ['spec_logprobs']}, timeout=600)
    assert run.proc.returncode == 0, run.output

    hit = spec_instance(run, spec.pid)
    assert hit['status'] == 'affected', hit
    probe = hit['evidence']['probe']
    assert probe['slots_speculative'] == [True]
    assert probe['first_alternatives'] == 3
    assert probe['empty_alternatives'] == probe['after_first'] > 0

    # -md alone does not turn speculation on, and /slots says so.
    quiet = spec_instance(run, draft_only.pid)
    assert quiet['status'] == 'ok' and quiet['evidence']['probe']['slots_speculative'] == [False]
    # b11434 infers a type from the draft GGUF only when it names one (speculative.cpp l.2351-2386)
    assert 'alone does not turn speculation on' in quiet['evidence']['reason']
    assert spec_instance(run, plain.pid)['status'] == 'ok'


def test_without_the_probe_the_command_line_decides(tmp_path, llama_server, llama):
    spec = llama_server('-md', llama['model'], '--spec-type', 'draft-simple')
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_checks': ['llama_spec_logprobs']})
    entry = spec_instance(run, spec.pid)
    assert entry['status'] == 'at_risk' and entry['evidence']['spec_types'] == ['draft-simple']
    assert 'probe' not in entry['evidence']
