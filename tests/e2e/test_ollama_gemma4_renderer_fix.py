"""ollama_gemma4_renderer_fix through Ansible, against the Ollama stand-in (tests/ollama_standin.py):
no Ollama binary can be installed here. Check mode, the Modelfile diff, what is kept, backups,
idempotence, the token, and the refusal before 0.21.0."""
import json
import os
import sys

import pytest

from helpers import run_module

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ollama_standin import OllamaStandIn, gemma4  # noqa: E402  pylint: disable=wrong-import-position

MODULE = 'homelab.postmortem.ollama_gemma4_renderer_fix'


def result_of(proc):
    # The minimal callback prints "localhost | CHANGED => {...}" after the diff, and the diff itself holds
    # braces (every Modelfile has a TEMPLATE line, {{ .Prompt }} at least).
    text = proc.stdout
    start = text.index('=> {') + len('=> ')
    return json.JSONDecoder().raw_decode(text[start:])[0]


@pytest.fixture
def standin():
    copy = dict(gemma4('11.9B'), system='You are terse.', parameters={'num_ctx': 8192}, license='Gemma ToU')
    server = OllamaStandIn('0.35.1', {'gemma4:12b': gemma4('11.9B'), 'mygemma:latest': copy,
                                      'gemma4:e4b': gemma4('8.0B')})
    yield server
    server.close()


def test_check_mode_shows_the_diff_and_changes_nothing(tmp_path, standin):
    args = {'url': standin.url, 'backup_dir': str(tmp_path / 'bk')}
    proc = run_module(tmp_path, MODULE, args, check=True, diff=True)
    result = result_of(proc)
    assert result['changed'] is True, proc.stdout
    assert [m['model'] for m in result['models']] == ['mygemma:latest']
    # The callback prints the diff itself: the Modelfile line that changes, and only that one.
    assert '-RENDERER gemma4\n+RENDERER gemma4-large' in proc.stdout, proc.stdout
    assert standin.creates == [] and not os.path.exists(str(tmp_path / 'bk'))


def test_pin_keeps_everything_backs_up_and_is_idempotent(tmp_path, standin):
    args = {'url': standin.url, 'backup_dir': str(tmp_path / 'bk')}
    first = result_of(run_module(tmp_path, MODULE, args))
    assert first['changed'] is True
    show = standin.show('mygemma:latest')
    assert 'RENDERER gemma4-large' in show['modelfile']
    assert (show['system'], show['parameters'], show['license']) == ('You are terse.', 'num_ctx 8192', 'Gemma ToU')
    assert 'RENDERER gemma4\n' in standin.show('gemma4:12b')['modelfile']  # not affected: untouched
    backup = first['models'][0]['backup']
    assert open(backup).read().count('RENDERER gemma4\n') == 1
    second = result_of(run_module(tmp_path, MODULE, args))
    assert second['changed'] is False and len(standin.creates) == 1


def test_a_wrong_token_and_an_old_ollama_fail_clearly(tmp_path, standin):
    standin.token = 'right'
    proc = run_module(tmp_path, MODULE, {'url': standin.url, 'token': 'wrong', 'backup': False})
    assert 'answered HTTP 401' in proc.stdout and 'wrong' not in proc.stdout.replace('"token": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"', '')
    standin.version = '0.20.7'
    proc = run_module(tmp_path, MODULE, {'url': standin.url})
    assert 'gemma4-small/-large exist from 0.21.0 on' in proc.stdout and standin.creates == []


def test_a_failure_on_the_second_model_says_what_was_already_re_created(tmp_path, standin):
    """Through Ansible, the failed task's message: the model that failed, the one re-created before it
    (with its backup), and that nothing else changed."""
    standin.models['other:latest'] = dict(gemma4('11.9B'), system='Be brief.')
    standin.fail_create['other:latest'] = (500, {'error': 'write /root/.ollama/models/manifests: no space left'})
    proc = run_module(tmp_path, MODULE, {'url': standin.url, 'backup_dir': str(tmp_path / 'bk'),
                                         'models': ['mygemma:latest', 'other:latest', 'gemma4:e4b']})
    assert 'FAILED' in proc.stdout, proc.stdout
    result = result_of(proc)
    assert result['msg'].startswith('could not pin model other:latest: /api/create failed: '), result['msg']
    assert 'other:latest: it is unchanged' in result['msg']
    assert ('already re-created with RENDERER gemma4-large and verified, and left so: mygemma:latest (backup %s'
            % (tmp_path / 'bk')) in result['msg']
    assert result['msg'].endswith('not attempted: gemma4:e4b')
    assert 'RENDERER gemma4-large' in standin.show('mygemma:latest')['modelfile']
    assert 'RENDERER gemma4\n' in standin.show('other:latest')['modelfile']


def test_a_backup_dir_that_is_a_file_fails_cleanly(tmp_path, standin):
    (tmp_path / 'bk').write_text('not a directory')
    proc = run_module(tmp_path, MODULE, {'url': standin.url, 'backup_dir': str(tmp_path / 'bk')})
    assert 'FAILED' in proc.stdout, proc.stdout
    result = result_of(proc)
    assert result['msg'] == 'backup_dir %s is a regular file, not a directory; nothing was changed' % (tmp_path / 'bk')
    assert 'Traceback' not in proc.stdout + proc.stderr and standin.creates == []
