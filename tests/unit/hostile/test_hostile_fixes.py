"""The fix modules against hostile trees, servers and filesystems: vllm_lora_fold and
ollama_gemma4_renderer_fix.

Each module runs as Ansible runs it on a host (its file, with its arguments as JSON, in its own
interpreter) against real files, named pipes, links and bind mounts, a real read-only mount and a
real full tmpfs (mounted here as root; skipped with the reason otherwise), and the Ollama stand-in
(tests/ollama_standin.py) over loopback. What must hold:

- no traceback: a refusal or a failure is a message that says exactly what was changed;
- the fold never writes into (or moves away) its source, refuses what safetensors refuses, and a
  failure leaves the destination as it was (or says where it is);
- the Ollama fix backs up every model before re-creating any, so a backup that cannot be written
  changes nothing, and a model that fails is named with the models already re-created;
- every case ends within its bound.
"""
import errno
import json
import os
import sys

import numpy as np
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import treewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, fold

from ..helpers.paths import TESTS_DIR
from ..helpers.hostile import fill, mounted, needs_root, run_as_host as run, snapshot
from ..helpers.vllm import config, write_adapter

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position
from ollama_standin import OllamaStandIn, gemma4  # noqa: E402  pylint: disable=wrong-import-position

# --- vllm_lora_fold -------------------------------------------------------------------------------

PATTERNED = dict(rank_pattern={'v_proj': 4}, peft_version='0.21.2')
RANKS = {'model.layers.0.self_attn.v_proj': 4, 'model.layers.1.self_attn.v_proj': 4}


def source(tmp_path, **extra):
    src = str(tmp_path / 'src')
    write_adapter(src, config(**dict(PATTERNED, **extra)), ranks=RANKS)
    return src


@pytest.mark.parametrize('case', ['inside', 'inside through a link', 'the same through a link', 'holds the source'])
def test_the_fold_refuses_a_destination_that_touches_the_source(tmp_path, case):
    src = source(tmp_path)
    if case == 'inside':
        dest = os.path.join(src, 'folded')
    elif case == 'inside through a link':
        os.symlink(src, str(tmp_path / 'link'))
        dest = str(tmp_path / 'link' / 'sub' / 'folded')
    elif case == 'the same through a link':
        os.symlink(src, str(tmp_path / 'link'))
        dest = str(tmp_path / 'link')
    else:
        dest = str(tmp_path)
    before = snapshot(tmp_path)
    result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': dest})
    assert result['failed'] and result['msg'].endswith('; nothing was written'), result
    assert {'inside': 'is inside src', 'inside through a link': 'is inside src', 'the same through a link': 'is src',
            'holds the source': 'src %s is inside dest' % src}[case] in result['msg'], result['msg']
    assert snapshot(tmp_path) == before


@needs_root
def test_the_fold_refuses_a_destination_inside_the_source_through_a_bind_mount(tmp_path):
    src = source(tmp_path)
    with mounted(str(tmp_path / 'view'), 'bind', src):
        result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': str(tmp_path / 'view' / 'folded')})
    assert result['failed'] and 'is inside src' in result['msg'], result
    assert sorted(os.listdir(src)) == ['adapter_config.json', 'adapter_model.safetensors']


@pytest.mark.parametrize('name', ['adapter_config.json', 'adapter_model.safetensors'])
def test_destination_files_that_are_named_pipes_are_never_waited_on(tmp_path, name):
    src = source(tmp_path)
    dest = tmp_path / 'dest'
    dest.mkdir()
    os.mkfifo(str(dest / name))
    checked = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': str(dest)}, check=True)
    assert checked['changed'] is True
    if name == 'adapter_config.json':
        assert checked['diff'][0]['before_header'] == '%s (is a named pipe, not a regular file; not read)' % (dest / name)
    done = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': str(dest)})
    assert done['changed'] is True and os.path.isdir(done['backup'])
    assert adapters.load(str(dest)).config.rank_pattern   # the folded adapter, readable


@pytest.mark.parametrize('existing', [True, False])
def test_a_fold_that_does_not_read_back_is_rolled_back(tmp_path, monkeypatch, existing):
    """The roll back itself, in process: a real fold swapped in, then verify made to fail (what a real host
    would need another writer racing the module for). An existing destination comes back as it was, with
    the backup the failure names still there; a new one is removed; no working directory is left."""
    from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol
    from ansible_collections.homelab.postmortem.plugins.modules import vllm_lora_fold
    src, dest = source(tmp_path), tmp_path / 'dest'
    if existing:
        dest.mkdir()
        (dest / 'adapter_config.json').write_text('{"the": "old one"}')
    src_before = snapshot(src)
    monkeypatch.setattr(vllm_lora_fold.LoraFold, 'verify', lambda self, plan: ['forced: not the fold'])
    with pytest.raises(fix_protocol.FixFailed) as failed:
        fix_protocol.drive(vllm_lora_fold.LoraFold(src, str(dest)), False, None)
    assert failed.value.rolled_back is True and 'everything was put back as it was' in str(failed.value)
    left = [n for n in os.listdir(str(tmp_path)) if n not in ('src', 'dest')]
    if existing:
        assert (dest / 'adapter_config.json').read_text() == '{"the": "old one"}'
        assert len(left) == 1 and os.path.isdir(str(tmp_path / left[0]))   # the backup, kept
        assert (tmp_path / left[0] / 'adapter_config.json').read_text() == '{"the": "old one"}'
    else:
        assert not dest.exists() and left == []
    assert snapshot(src) == src_before


def test_a_directory_put_back_keeps_its_mode_whatever_the_umask(tmp_path):
    """treewrite.restore_directory: the directories come back with their own modes, not the module's umask's."""
    old, dest = tmp_path / 'old', tmp_path / 'dest'
    (old / 'sub').mkdir(parents=True)
    (old / 'sub' / 'f').write_text('x')
    os.chmod(str(old / 'sub'), 0o755)
    os.chmod(str(old), 0o750)
    dest.mkdir()
    previous = os.umask(0o077)
    try:
        treewrite.restore_directory(str(old), str(dest))
    finally:
        os.umask(previous)
    assert (oct(dest.stat().st_mode & 0o777), oct((dest / 'sub').stat().st_mode & 0o777)) == ('0o750', '0o755')
    assert (dest / 'sub' / 'f').read_text() == 'x' and (old / 'sub' / 'f').exists()
    assert sorted(os.listdir(str(tmp_path))) == ['dest', 'old']


def test_a_destination_config_that_is_not_utf8_is_shown_as_such(tmp_path):
    src = source(tmp_path)
    dest = tmp_path / 'dest'
    dest.mkdir()
    (dest / 'adapter_config.json').write_bytes(b'{"r": "\xff\xfe"}')
    checked = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': str(dest)}, check=True)
    assert checked['diff'][0]['before'] == '' and 'is not UTF-8 text (byte 7)' in checked['diff'][0]['before_header']


def _config_text(src, text):
    with open(os.path.join(src, 'adapter_config.json'), 'w') as handle:
        handle.write(text)
    return src


def _overlapping(src):
    """lora_B of layer 1 v_proj made to point at layer 0's bytes: safetensors' Metadata::validate refuses it."""
    path = os.path.join(src, 'adapter_model.safetensors')
    with open(path, 'rb') as handle:
        data = handle.read()
    (length,) = np.frombuffer(data[:8], dtype='<u8')
    header = json.loads(data[8:8 + int(length)])
    names = sorted((k for k in header if k != '__metadata__'), key=lambda k: header[k]['data_offsets'])
    header[names[1]]['data_offsets'] = list(header[names[0]]['data_offsets'])
    header[names[1]]['shape'] = list(header[names[0]]['shape'])
    header[names[1]]['dtype'] = header[names[0]]['dtype']
    body = json.dumps(header).encode()
    with open(path, 'wb') as handle:
        handle.write(np.array([len(body)], dtype='<u8').tobytes() + body + data[8 + int(length):])
    from safetensors import safe_open
    with pytest.raises(Exception, match='invalid offset'):
        safe_open(path, framework='np')   # upstream refuses it too
    return src


def _catastrophic(tmp_path):
    src = str(tmp_path / 'src')
    write_adapter(src, config(rank_pattern={'(a+)+$': 4}, peft_version='0.21.2'),
                  modules=('model.layers.0.self_attn.q_proj', 'model.' + 'a' * 40 + '!'))
    return src


def _fifo_weights(src):
    os.unlink(os.path.join(src, 'adapter_model.safetensors'))
    os.mkfifo(os.path.join(src, 'adapter_model.safetensors'))
    return src


@pytest.mark.parametrize('case,make,fragment', [
    ('lora_alpha 0', lambda t: source(t, lora_alpha=0), 'lora_alpha is 0, so every module\'s base scale is 0'),
    ('r 1e400', lambda t: _config_text(source(t), '{"r": 1e400, "lora_alpha": 16}'), 'r is inf, not a positive whole'),
    ('a config 100,000 levels deep', lambda t: _config_text(source(t), '[' * 100000 + ']' * 100000),
     'nested deeper than 16 levels'),
    ('overlapping tensors', lambda t: _overlapping(source(t)), '(they overlap); safetensors refuses the file'),
    ('a catastrophic pattern key', _catastrophic, "rank_pattern key '(a+)+$' did not finish matching"),
    ('weights that are a named pipe', lambda t: _fifo_weights(source(t)), 'is a named pipe, not a regular file'),
])
def test_the_fold_refuses_what_it_cannot_fold_and_writes_nothing(tmp_path, case, make, fragment):
    src = make(tmp_path)
    before = snapshot(src)
    dest = str(tmp_path / 'dest')
    result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': dest})
    assert result['failed'] and fragment in result['msg'] and result['msg'].endswith('nothing was written'), result
    assert not os.path.lexists(dest) and snapshot(src) == before
    assert [n for n in os.listdir(str(tmp_path)) if '.fold-' in n] == []


@needs_root
def test_a_read_only_destination_leaves_everything_as_it_was(tmp_path):
    src = source(tmp_path)
    (tmp_path / 'ro' / 'dest').mkdir(parents=True)
    (tmp_path / 'ro' / 'dest' / 'keep.txt').write_text('old adapter')
    before = snapshot(tmp_path / 'ro')
    with mounted(str(tmp_path / 'view'), 'readonly', str(tmp_path / 'ro')) as view:
        dest = str(tmp_path / 'view' / 'dest')
        checked = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': dest}, check=True)
        result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': dest})
    said = 'mounted read-only: %s (%s)' % (view, dest)
    assert not checked.get('failed') and checked['changed'] and checked['msg'].endswith('; it cannot be written now: '
                                                                                        + said), checked
    assert result['failed'] and not result['changed'] and result['msg'] == said + '; nothing was changed', result
    assert snapshot(tmp_path / 'ro') == before


@needs_root
def test_a_full_filesystem_leaves_the_destination_as_it_was(tmp_path):
    src = str(tmp_path / 'src')
    # Enough modules that the folded weights (about 100 KiB) cannot fit in 64 KiB.
    modules = tuple('model.layers.%d.self_attn.%s' % (i, p) for i in range(40) for p in ('q_proj', 'v_proj'))
    write_adapter(src, config(**PATTERNED), ranks=dict((m, 4) for m in modules if m.endswith('v_proj')), modules=modules)
    with mounted(str(tmp_path / 'small'), 'tmpfs') as small:
        os.mkdir(os.path.join(small, 'dest'))
        with open(os.path.join(small, 'dest', 'keep.txt'), 'w') as handle:
            handle.write('old adapter')
        before = snapshot(small)
        dest = os.path.join(small, 'dest')
        result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': dest})
        after = snapshot(small)
    assert result['failed'], result
    assert 'No space left on device; it was removed, %s is unchanged' % dest in result['msg'], result['msg']
    assert after == before


def test_a_destination_that_cannot_be_swapped_into_place_is_left_as_it_was(tmp_path, monkeypatch):
    """A filesystem without renameat2's RENAME_EXCHANGE (EINVAL, as the kernel answers there): nothing changes,
    the new copy and the backup made for the swap are removed."""
    src = source(tmp_path)
    dest = str(tmp_path / 'dest')
    os.mkdir(dest)
    (tmp_path / 'dest' / 'keep.txt').write_text('old adapter')
    planned = fold.plan(adapters.load(src))

    def refused(_first, _second):
        raise OSError(errno.EINVAL, 'Invalid argument')
    monkeypatch.setattr(treewrite, 'exchange', refused)
    with pytest.raises(fold.FoldProblem) as failed:
        fold.write(planned, dest)
    assert str(failed.value) == ('could not swap the new directory into %s (renameat2 RENAME_EXCHANGE): Invalid argument; '
                                 'the new copy was removed, %s is unchanged' % (dest, dest))
    assert sorted(os.listdir(str(tmp_path))) == ['dest', 'src'] and os.listdir(dest) == ['keep.txt']


def test_a_replaced_destination_is_never_missing_and_its_backup_keeps_the_old_files(tmp_path):
    src = source(tmp_path)
    dest = str(tmp_path / 'dest')
    os.mkdir(dest)
    (tmp_path / 'dest' / 'keep.txt').write_text('old adapter')
    backup = fold.write(fold.plan(adapters.load(src)), dest)
    assert open(os.path.join(backup, 'keep.txt')).read() == 'old adapter'
    assert 'keep.txt' not in os.listdir(dest) and sorted(os.listdir(str(tmp_path))) == sorted(['dest', 'src', os.path.basename(backup)])


# --- ollama_gemma4_renderer_fix -------------------------------------------------------------------

AFFECTED = ['a:latest', 'b:latest', 'c:latest']


@pytest.fixture
def standin():
    """Three copies of the Gemma 4 12B without a size in their names: ModelType 11.9B < 12e9, so gemma4-small
    on 0.33.0-rc2 (renderer_resolution.go l.34-55): all affected."""
    server = OllamaStandIn('0.33.0-rc2', dict((name, dict(gemma4('11.9B'), system='Be %s.' % name[0]))
                                              for name in AFFECTED))
    yield server
    server.close()


def pin(tmp_path, standin, backup_dir, timeout=5, **extra):
    return run(tmp_path, 'ollama_gemma4_renderer_fix', dict({'url': standin.url, 'backup_dir': backup_dir,
                                                             'timeout': timeout}, **extra))


@pytest.mark.parametrize('make,what', [
    (lambda p: open(p, 'w').close(), 'a regular file'),
    (os.mkfifo, 'a named pipe'),
])
def test_a_backup_dir_that_is_no_directory_changes_nothing(tmp_path, standin, make, what):
    backup_dir = str(tmp_path / 'bk')
    make(backup_dir)
    result = pin(tmp_path, standin, backup_dir)
    assert result['failed'] and result['msg'] == 'backup_dir %s is %s, not a directory; nothing was changed' % (
        backup_dir, what), result
    assert standin.creates == []


def test_a_create_failure_on_the_second_model_names_it_and_what_was_re_created(tmp_path, standin):
    standin.fail_create['b:latest'] = (500, {'error': 'no space left on device'})
    result = pin(tmp_path, standin, str(tmp_path / 'bk'))
    assert result['failed'], result
    backups = sorted(os.listdir(str(tmp_path / 'bk')))
    first = [os.path.join(str(tmp_path / 'bk'), b) for b in backups if b.startswith('a_latest') and b.endswith('Modelfile')][0]
    assert result['msg'].startswith('could not pin model b:latest: /api/create failed: %s/api/create answered HTTP 500: '
                                    '{"error": "no space left on device"}; b:latest: it is unchanged' % standin.url), result
    assert 'already re-created with RENDERER gemma4-large and verified, and left so: a:latest (backup %s)' % first \
        in result['msg']
    assert result['msg'].endswith('not attempted: c:latest')
    assert [standin.models[n]['renderer'] for n in AFFECTED] == ['gemma4-large', 'gemma4', 'gemma4']
    assert [(m['model'], m['changed']) for m in result['models']] == [(n, True) for n in AFFECTED]


def test_a_hanging_create_ends_at_its_deadline_and_says_what_changed(tmp_path, standin):
    """/api/create never answers (a stuck proxy): it ends at the 1 s deadline, and /api/show read afterwards
    says the model is unchanged."""
    show = standin.show('a:latest')
    table = {'/api/version': (200, {'version': '0.33.0-rc2'}), '/api/show': (200, show), '/api/create': hs.silent}
    with hs.MisbehavingServer(hs.routes(table)) as server:
        result = run(tmp_path, 'ollama_gemma4_renderer_fix',
                     {'url': server.url, 'timeout': 1, 'models': ['a:latest'], 'backup_dir': str(tmp_path / 'bk')}, timeout=6)
    backup = [os.path.join(str(tmp_path / 'bk'), b) for b in os.listdir(str(tmp_path / 'bk')) if b.endswith('Modelfile')]
    assert result['failed'] and result['msg'] == (
        'could not pin model a:latest: /api/create failed: %s/api/create did not answer within 1.0 s; a:latest: it is '
        'unchanged; its backup is %s; no other model was changed' % (server.url, backup[0])), result


@pytest.mark.parametrize('answer,reason', [
    (['0.33.0'], '/api/version answered a list, not an object; nothing was changed'),
    ({'version': 7}, 'Ollama cannot pin a renderer here: it reports a version that is not a string (7)'),
    (b'[' * 100000 + b']' * 100000, 'answered JSON that cannot be used: nested deeper than 64 levels'),
])
def test_an_ollama_that_answers_no_version_is_refused_clearly(tmp_path, answer, reason):
    body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
    with hs.MisbehavingServer(hs.answer(body)) as server:
        result = run(tmp_path, 'ollama_gemma4_renderer_fix',
                     {'url': server.url, 'timeout': 1, 'backup_dir': str(tmp_path / 'bk')})
    assert result['failed'] and reason in result['msg'], result


@pytest.mark.parametrize('timeout', [0, 10 ** 10])
def test_a_timeout_out_of_range_is_refused_before_anything_is_sent(tmp_path, standin, timeout):
    result = pin(tmp_path, standin, str(tmp_path / 'bk'), timeout=timeout)
    assert result['failed'] and result['msg'] == 'timeout must be 1 to 3600 seconds, got %d' % timeout
    assert standin.requests == []


@needs_root
def test_a_read_only_backup_dir_changes_nothing(tmp_path, standin):
    (tmp_path / 'ro').mkdir()
    with mounted(str(tmp_path / 'view'), 'readonly', str(tmp_path / 'ro')):
        missing = pin(tmp_path, standin, str(tmp_path / 'view' / 'bk'))
        existing = pin(tmp_path, standin, str(tmp_path / 'view'))
        checked = run(tmp_path, 'ollama_gemma4_renderer_fix', {'url': standin.url, 'backup_dir': str(tmp_path / 'view'),
                                                               'timeout': 5}, check=True)
    view = tmp_path / 'view'
    assert not checked.get('failed') and checked['changed'] and checked['msg'].endswith(
        '; it cannot be written now: mounted read-only: %s (%s/)' % (view, view)), checked
    assert missing['msg'] == 'mounted read-only: %s (%s/bk/); nothing was changed' % (view, view), missing
    assert existing['msg'] == 'mounted read-only: %s (%s/); nothing was changed' % (view, view), existing
    assert standin.creates == []


@needs_root
def test_a_full_backup_filesystem_changes_nothing_and_leaves_no_partial_backup(tmp_path, standin):
    with mounted(str(tmp_path / 'small'), 'tmpfs') as small:
        fill(small)
        result = pin(tmp_path, standin, small)
        left = sorted(os.listdir(small))
    assert result['failed'] and result['msg'] == ('could not back up model a:latest to %s: No space left on device; '
                                                  'no model was changed (the backups of this run were removed)'
                                                  % small), result
    assert left == ['filler'] and standin.creates == []


@needs_root
def test_a_backup_filesystem_that_fills_up_half_way_removes_the_backups_of_the_run(tmp_path, standin):
    """Room for some backups but not all: none is kept (they are copies of models that did not change)."""
    big = 'x' * 12000
    for name in AFFECTED:
        standin.models[name]['license'] = big
    with mounted(str(tmp_path / 'small'), 'tmpfs') as small:
        result = pin(tmp_path, standin, small)
        left = sorted(os.listdir(small))
    assert result['failed'] and 'No space left on device; no model was changed' in result['msg'], result
    assert left == [] and standin.creates == []


def test_the_fold_refuses_in_check_mode_too(tmp_path):
    src = source(tmp_path)
    result = run(tmp_path, 'vllm_lora_fold', {'src': src, 'dest': os.path.join(src, 'x')}, check=True)
    assert result['failed'] and 'is inside src' in result['msg']
