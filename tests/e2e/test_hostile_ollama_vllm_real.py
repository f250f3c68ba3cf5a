"""Hostile Ollama replies and a hostile adapter tree through a real ansible-playbook run: the host's
result must reach the controller, in time, with a finding per detection that says what was wrong,
and the report must stay strict JSON and valid XML.

The Ollama is a scripted server answering what the stand-in answers (tests/ollama_standin.py, from
upstream's api/types.go and routes.go @ v0.33.0-rc2) with one model's /api/show trickling a byte
every 0.2 s and a /api/tags entry whose name is a number; the adapters are real files, a named
pipe, and a pattern key that backtracks without end. No real service answers like this on purpose.
"""
import json
import os
import sys
import time
import xml.etree.ElementTree as ET

from helpers import local_host, run_audit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position
from ollama_standin import ScriptedOllama, gemma4, recorded_answers  # noqa: E402  pylint: disable=wrong-import-position
from unit.helpers.vllm import config, write_adapter  # noqa: E402  pylint: disable=wrong-import-position


def refuse_constant(name):
    raise ValueError('non-strict JSON constant %s' % name)


def adapters(root):
    write_adapter(str(root / 'good'), config(alpha_pattern={'v_proj': 32}))
    write_adapter(str(root / 'pipe'), config())
    os.unlink(str(root / 'pipe' / 'adapter_model.safetensors'))
    os.mkfifo(str(root / 'pipe' / 'adapter_model.safetensors'))
    write_adapter(str(root / 'backtracks'), config(rank_pattern={'(a+)+$': 4}), modules=('model.' + 'a' * 40 + '!',))
    write_adapter(str(root / 'deep'), config())
    (root / 'deep' / 'adapter_config.json').write_text('[' * 100000 + ']' * 100000)


def test_hostile_replies_and_files_cost_only_their_own_findings(tmp_path):
    answers = recorded_answers({'mygemma:latest': gemma4('11.9B'), 'gemma4:12b': gemma4('11.9B')})
    answers['show']['mygemma:latest'] = hs.trickle_body(b'{"modelfile": "FROM x"}', 0.2)
    answers['tags']['models'].append({'name': 7})
    adapters(tmp_path / 'adapters')
    ollama = dict((check, {'timeout': 2}) for check in ('ollama_gemma4_renderer', 'ollama_format_think',
                                                        'ollama_schema_order'))
    started = time.monotonic()
    with ScriptedOllama(answers) as server:
        for values in ollama.values():
            values['url'] = server.url
        settings = dict(ollama, vllm_lora_patterns={'adapter_paths': [str(tmp_path / 'adapters')]})
        run = run_audit(tmp_path / 'run', {'all': {'hosts': {'localhost': local_host()}}},
                        {'postmortem_checks': ['ollama', 'vllm', 'pi'], 'postmortem_settings': settings}, timeout=240)
    elapsed = time.monotonic() - started
    assert run.proc.returncode == 0, run.output
    # Ansible's own start-up and the report take most of it; the trickling model costs 2 s once.
    assert elapsed < 120, elapsed
    host = run.host('localhost')
    assert host['state'] == 'audited', host

    renderer = run.finding('localhost', 'ollama_gemma4_renderer')
    models = dict((i['name'], i) for i in renderer['evidence']['instances'])
    assert models['model mygemma:latest']['status'] == 'unknown'
    assert 'did not answer within 2.0 s' in models['model mygemma:latest']['summary']
    assert models['model gemma4:12b']['status'] == 'ok'
    assert models['/api/tags entries']['status'] == 'error'
    assert "its name is a number (7), not a model name" in models['/api/tags entries']['summary']

    lora = run.finding('localhost', 'vllm_lora_patterns')
    found = dict((os.path.basename(i['evidence'].get('path', '')), i) for i in lora['evidence']['instances'])
    assert found['good']['status'] == 'at_risk'   # alpha_pattern dropped by vLLM before 0.32.0 (none here)
    assert found['pipe']['status'] == 'error' and 'named pipe' in found['pipe']['summary']
    assert found['backtracks']['status'] == 'error' and "key '(a+)+$' did not finish" in found['backtracks']['summary']
    assert found['deep']['status'] == 'error' and 'nested deeper than 16 levels' in found['deep']['summary']
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'

    with open(os.path.join(run.report_dir, 'postmortem.json')) as handle:
        json.loads(handle.read(), parse_constant=refuse_constant)
    ET.parse(os.path.join(run.report_dir, 'postmortem-junit.xml'))
