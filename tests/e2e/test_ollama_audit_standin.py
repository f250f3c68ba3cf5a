"""The ollama detections through the real audit playbook, against the Ollama stand-in
(tests/ollama_standin.py, which answers as upstream's GetModelInfo and tags list do): no Ollama
binary can be installed here. Expected verdicts from upstream's code, ollama/ollama @ v0.33.0-rc2:
renderer_resolution.go l.34-55 for the renderers, routes.go l.2357-2385 and l.2674-2677 for the paths."""
import os
import sys

from helpers import local_host, run_audit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ollama_standin import OllamaStandIn, gemma4, plain, safetensors_gemma4  # noqa: E402  pylint: disable=wrong-import-position

QWEN_CHAT_TEMPLATE = "{%- for message in messages %}{{ message.content }}{%- endfor %}<think>\n</think>"


def test_the_audit_reports_what_upstream_does_for_each_model(tmp_path):
    server = OllamaStandIn('0.33.0-rc2', {
        'gemma4:12b': gemma4('11.9B'),
        # ollama cp of the 12B: ModelType "11.9B" < 12e9 -> gemma4-small.
        'mygemma:latest': gemma4('11.9B'),
        # A safetensors import stores no ModelType: "" -> gemma4-small (l.54) for 30.7e9 parameters.
        'imported:latest': safetensors_gemma4(30_700_000_000),
        # No TEMPLATE layer and a GGUF chat template: the native path (shown by /api/show's template).
        'qwen3:0.6b': plain('751.63M', family='qwen3', thinking=True, chat_template=QWEN_CHAT_TEMPLATE),
    })
    settings = dict((check, {'url': server.url}) for check in
                    ('ollama_gemma4_renderer', 'ollama_format_think', 'ollama_schema_order'))
    try:
        run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                        {'postmortem_checks': ['ollama'], 'postmortem_fail_on': 'affected',
                         'postmortem_settings': settings})
    finally:
        server.close()
    assert run.proc.returncode != 0  # the gate: models are affected

    def statuses(check):
        finding = run.finding('localhost', check)
        return finding['status'], dict((i['evidence']['model'], i['status']) for i in finding['evidence']['instances'])

    assert statuses('ollama_gemma4_renderer') == ('affected', {
        'gemma4:12b': 'ok', 'mygemma:latest': 'affected', 'imported:latest': 'affected'})
    # Gemma 4 has a renderer (rendered path); qwen3 is native: handleNativeChat, no two-pass format logic.
    assert statuses('ollama_format_think') == ('at_risk', {
        'gemma4:12b': 'at_risk', 'mygemma:latest': 'at_risk', 'imported:latest': 'at_risk', 'qwen3:0.6b': 'ok'})
    assert statuses('ollama_schema_order') == ('affected', {
        'gemma4:12b': 'ok', 'mygemma:latest': 'ok', 'imported:latest': 'ok', 'qwen3:0.6b': 'affected'})
    assert 'ollama_gemma4_renderer [affected]' in run.output
