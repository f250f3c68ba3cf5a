"""ollama_gemma4_renderer through the real audit playbook, against the Ollama stand-in
(tests/ollama_standin.py): no Ollama binary can be installed here."""
import os
import sys

from helpers import local_host, run_audit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ollama_standin import OllamaStandIn, gemma4  # noqa: E402  pylint: disable=wrong-import-position


def test_the_audit_reports_the_copy_that_resolves_small(tmp_path):
    server = OllamaStandIn('0.35.1', {'gemma4:12b': gemma4('11.9B'), 'mygemma:latest': gemma4('11.9B')})
    try:
        run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                        {'postmortem_checks': ['ollama'], 'postmortem_fail_on': 'affected',
                         'postmortem_settings': {'ollama_gemma4_renderer': {'url': server.url}}})
    finally:
        server.close()
    assert run.proc.returncode != 0  # the gate: one model is affected
    finding = run.finding('localhost', 'ollama_gemma4_renderer')
    assert finding['status'] == 'affected'
    statuses = dict((i['evidence']['model'], i['status']) for i in finding['evidence']['instances'])
    assert statuses == {'gemma4:12b': 'ok', 'mygemma:latest': 'affected'}
    assert 'ollama_gemma4_renderer [affected]' in run.output
