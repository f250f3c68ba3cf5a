"""vllm_weight_cache on fake /proc trees (command lines, environments, users, each process's root and
mount namespace) and real safetensors checkpoints. vLLM cannot run here (no GPU, CUDA IPC), so every
expected verdict below is what the code of the named vLLM wheel (PyPI) does, cited by file and line;
tests/unit/fixtures/vllm/weight_cache_key_fields.json lists the key's fields per release as read
from each wheel's protocol.py.
"""
import json
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import weight_cache

from ....helpers.paths import FIXTURES_DIR
from ....helpers.vllm import Host, engine_of, write_checkpoint

FIXTURES = os.path.join(FIXTURES_DIR, 'vllm')
W = 'vllm/model_executor/model_loader/weight_cache/'
FALLBACK_LINE = ('(EngineCore_DP0 pid=812) WARNING 10-20 09:14:02 [ipc_loader.py:140] Weight cache unusable '
                 '(WeightCacheKey mismatch on fields: [\'dtype\']); falling back to disk loading')
MAPPED_LINE = ('(EngineCore_DP0 pid=812) INFO 10-20 09:14:09 [ipc_loader.py:204] Mapped 291 tensors from the '
               'weight cache daemon (zero_copy mode)')


@pytest.fixture
def models(tmp_path):
    return {'base': write_checkpoint(str(tmp_path / 'base'), 1), 'tuned': write_checkpoint(str(tmp_path / 'tuned'), 2)}


def test_key_fields_per_release_are_the_wheels(tmp_path, models):
    """The fields we compare per release are exactly the WeightCacheKey fields of that wheel's protocol.py."""
    table = json.load(open(os.path.join(FIXTURES, 'weight_cache_key_fields.json')))
    # Fields that need no comparison of their own: ranks pair up when sizes match, and the quant hash is
    # compared together with the quantization method.
    paired = {'tp_rank': 'tp_size', 'dp_rank': 'dp_size', 'pp_rank': 'pp_size', 'quant_config_hash': 'quantization'}
    renamed = {'model_arch': 'model_arch'}
    for version, fields in table['releases'].items():
        host = Host(tmp_path / version, version=version)
        daemon = host.start('preload', '--model', models['base'])
        engine = host.start('serve', models['tuned'], '--load-format', 'ipc_cache')
        finding = host.audit()
        compared = set(engine_of(finding, engine)['evidence']['daemons'][0]['key'])
        expected = set(paired.get(f, renamed.get(f, f)) for f in fields['fields'])
        assert compared == expected, (version, compared ^ expected)
        assert daemon in finding['evidence']['daemons']


def test_an_engine_with_a_custom_socket_dir_is_served_the_daemons_weights(tmp_path, models):
    # ipc_loader.py (0.33.0 l.103-104) reads socket_path/socket_dir from --model-loader-extra-config; the
    # daemon binds under --weight-cache-socket-dir (cli/preload.py 0.33.0 l.142-147): the same directory.
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'], '--weight-cache-socket-dir', '/srv/wc')
    json_form = host.start('serve', models['tuned'], '--load-format', 'ipc_cache',
                           '--model-loader-extra-config', '{"socket_dir": "/srv/wc"}')
    dotted = host.start('serve', models['tuned'], '--load-format', 'ipc_cache',
                        '--model-loader-extra-config.socket_dir=/srv/wc')
    by_path = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', '--model-loader-extra-config',
                         '{"socket_path": "/srv/wc/vllm_weight_cache_3f1c0e5b.sock"}')
    # Without the extra config the engine looks in gettempdir()/vllm_weight_cache_<uid> (protocol.py
    # get_socket_dir, 0.33.0): not the daemon's directory, so it loads from disk.
    default = host.start('serve', models['tuned'], '--load-format', 'ipc_cache')
    finding = host.audit()
    for pid in (json_form, dotted, by_path):
        assert engine_of(finding, pid)['status'] == 'affected', engine_of(finding, pid)
    result = engine_of(finding, default)
    assert result['status'] == 'ok' and 'socket_dir differs' in result['summary']
    assert engine_of(finding, json_form)['evidence']['engine']['loader_extra_config'] == {'socket_dir': '/srv/wc'}


@pytest.mark.parametrize('version,daemon_args,engine_args,status', [
    # kv_cache_dtype is a key field from 0.33.0 only (protocol.py 0.33.0 l.323, absent in 0.32.0).
    ('0.32.0', ['--kv-cache-dtype', 'fp8'], [], 'affected'),
    ('0.33.0', ['--kv-cache-dtype', 'fp8'], [], 'ok'),
    # pp_size from 0.32.0 (protocol.py 0.32.0 l.298-299).
    ('0.31.0', ['-pp', '2'], [], 'affected'),
    ('0.32.0', ['-pp', '2'], [], 'ok'),
    # dp_size from 0.31.0; the engine keys a dense model's DP ranks as DP 1 (v1/engine/core.py 0.31.0
    # l.1386-1395), the daemon keys its own --data-parallel-size in 0.31.0/0.32.0 (daemon.py 0.31.0 l.223-230)
    # and 1 for a dense model from 0.33.0 (daemon.py 0.33.0 get_engine_dp_placement l.628-637).
    ('0.30.0', ['-dp', '2'], [], 'affected'),
    ('0.31.0', ['-dp', '2'], [], 'ok'),
    ('0.33.0', ['-dp', '2'], [], 'affected'),
    ('0.31.0', [], ['-dp', '2'], 'affected'),
    # expert parallelism and kernel backends from 0.33.0 (protocol.py 0.33.0 l.333-339).
    ('0.32.0', [], ['--enable-expert-parallel'], 'affected'),
    ('0.33.0', [], ['-ep'], 'ok'),
    ('0.32.0', ['--moe-backend', 'triton'], [], 'affected'),
    ('0.33.0', ['--moe-backend', 'triton'], [], 'ok'),
    ('0.33.0', ['--kernel-config', '{"linear_backend": "humming"}'], [], 'ok'),
    # dtype: "auto" resolves from config.json (bfloat16 here) before the key is built (config/model.py
    # _get_and_verify_dtype 0.33.0 l.2467-2518, str(model_config.dtype) in the key).
    ('0.33.0', ['--dtype', 'bfloat16'], [], 'affected'),
    ('0.30.0', [], ['--dtype', 'bfloat16'], 'affected'),
    ('0.33.0', ['--dtype', 'float32'], [], 'ok'),
    # float16 against auto(bfloat16): auto gives float16 on a GPU below compute capability 8.0 (cuda.py
    # supported_dtypes l.257-266), bfloat16 above: not knowable from here.
    ('0.33.0', ['--dtype', 'float16'], [], 'at_risk'),
    # tensor parallel size in every release (protocol.py 0.30.0 l.266).
    ('0.30.0', ['-tp', '2'], [], 'ok'),
])
def test_the_key_fields_each_release_compares(tmp_path, models, version, daemon_args, engine_args, status):
    host = Host(tmp_path, version=version)
    host.start('preload', '--model', models['base'], *daemon_args)
    engine = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', *engine_args)
    result = engine_of(host.audit(), engine)
    assert result['status'] == status, result


def test_moe_data_parallel_is_keyed_from_0_31(tmp_path):
    config = {'num_local_experts': 8, 'architectures': ['MixtralForCausalLM'], 'model_type': 'mixtral'}
    base = write_checkpoint(str(tmp_path / 'moe-base'), 1, config)
    tuned = write_checkpoint(str(tmp_path / 'moe-tuned'), 2, config)
    for version, status in (('0.30.0', 'affected'), ('0.31.0', 'ok'), ('0.33.0', 'ok')):
        host = Host(tmp_path / version, version=version)
        host.start('preload', '--model', base)
        engine = host.start('serve', tuned, '--load-format', 'ipc_cache', '-dp', '2')
        assert engine_of(host.audit(), engine)['status'] == status, version


def test_rope_parameters_are_keyed_from_0_33(tmp_path):
    # protocol.py 0.33.0 hash_rope_parameters l.249-268: rope_parameters and max_position_embeddings.
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    tuned = write_checkpoint(str(tmp_path / 'long'), 2, {'max_position_embeddings': 32768, 'rope_theta': 500000.0})
    for version, status in (('0.32.0', 'affected'), ('0.33.0', 'ok')):
        host = Host(tmp_path / version, version=version)
        host.start('preload', '--model', base)
        engine = host.start('serve', tuned, '--load-format', 'ipc_cache')
        assert engine_of(host.audit(), engine)['status'] == status, version
    # 10000 and 10000.0 are one value to the hash (normalize_numbers, l.252-259).
    same = write_checkpoint(str(tmp_path / 'int-theta'), 3, {'rope_theta': 10000})
    host = Host(tmp_path / 'ints', version='0.33.0')
    host.start('preload', '--model', base)
    engine = host.start('serve', same, '--load-format', 'ipc_cache')
    assert engine_of(host.audit(), engine)['status'] == 'affected'


def test_whether_the_engine_reaches_the_daemon(tmp_path, models):
    host = Host(tmp_path)
    private = host.make_root('private-tmp')
    host.start('preload', '--model', models['base'], env={'CUDA_VISIBLE_DEVICES': '0'})
    # The socket is named by the GPU (protocol.py get_socket_path 0.33.0): another GPU, another socket.
    other_gpu = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', env={'CUDA_VISIBLE_DEVICES': '1'})
    same_gpu = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', env={'CUDA_VISIBLE_DEVICES': '0,1'})
    # gettempdir() follows TMPDIR: the engine looks in /var/tmp/vllm_weight_cache_1000.
    tmpdir = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', env={'TMPDIR': '/var/tmp'})
    # PrivateTmp=yes gives the unit its own /tmp: the same path is another directory.
    private_tmp = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', root=private,
                             mntns='mnt:[4026532999]')
    # Another user: another directory name and the ownership checks (protocol.py verify_private_dir).
    other_user = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', uid=1001)
    finding = host.audit()
    assert engine_of(finding, same_gpu)['status'] == 'affected'
    for pid, part in ((other_gpu, 'gpu'), (tmpdir, 'socket_dir'), (private_tmp, 'socket_dir'), (other_user, 'uid')):
        result = engine_of(finding, pid)
        assert result['status'] == 'ok', result
        assert result['evidence']['daemons'][0]['socket'][part]['verdict'] == 'differs', (part, result)


def test_a_directory_that_cannot_be_compared_is_at_risk(tmp_path, models):
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'])
    engine = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', mntns='mnt:[4026532555]')
    # Neither process's root is readable (another user's process, no root): same path, other namespace.
    for pid in os.listdir(str(host.proc)):
        os.unlink(str(host.proc / pid / 'root'))
        os.symlink('/nonexistent-root-%s' % pid, str(host.proc / pid / 'root'))
    result = engine_of(host.audit(), engine)
    # Nothing says the daemon is out of reach and the weights differ: never ok.
    assert result['status'] != 'ok', result


def test_the_engines_log_decides_what_cannot_be_compared(tmp_path, models):
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'])
    args = ('serve', models['tuned'], '--load-format', 'ipc_cache', '--dtype', 'float16')
    fell_back = host.start(*args, unit='fell-back.service')
    mapped = host.start(*args, unit='mapped.service')
    silent = host.start(*args, unit='silent.service')
    host.journal['fell-back.service'] = [MAPPED_LINE, 'INFO restarting', FALLBACK_LINE]
    host.journal['mapped.service'] = [FALLBACK_LINE, MAPPED_LINE]
    finding = host.audit()
    # ipc_loader.py 0.33.0 l.250-265: the fallback line is logged instead of mapping; l.322 after mapping.
    assert engine_of(finding, fell_back)['status'] == 'ok'
    assert 'fell back to disk loading' in engine_of(finding, fell_back)['summary']
    assert engine_of(finding, mapped)['status'] == 'affected'
    assert engine_of(finding, silent)['status'] == 'at_risk'
    assert engine_of(finding, mapped)['evidence']['journal'] == MAPPED_LINE
    # A matching key is not overruled by a missing log, and the log is not read with journal_lines 0.
    assert engine_of(host.audit(journal_lines=0), fell_back)['status'] == 'at_risk'


def test_last_load_reads_the_last_weight_cache_line():
    assert weight_cache.last_load([MAPPED_LINE, FALLBACK_LINE]) == ('fell_back', FALLBACK_LINE)
    assert weight_cache.last_load([FALLBACK_LINE, 'other', MAPPED_LINE])[0] == 'mapped'
    assert weight_cache.last_load(['Weight cache IPC loading failed; falling back to disk loading'])[0] == 'fell_back'
    assert weight_cache.last_load(['nothing here']) == (None, None)


@pytest.mark.parametrize('ours,theirs,verdict', [
    (('explicit', 'bfloat16'), ('auto', 'bfloat16', 'llama'), 'same'),
    (('auto', 'float16', 'llama'), ('auto', 'float16', 'llama'), 'same'),
    (('explicit', 'float32'), ('auto', 'bfloat16', 'llama'), 'differs'),
    # float32 configs downcast to the platform's first dtype: bfloat16 from compute capability 8.0, else
    # float16; an explicit bfloat16 process runs only from 8.0 (cuda.py check_if_supports_dtype l.638-656).
    (('explicit', 'bfloat16'), ('auto', 'float32', 'llama'), 'same'),
    (('explicit', 'float16'), ('auto', 'float32', 'llama'), 'unknown'),
    # gemma3 cannot run float16 (_FLOAT16_NOT_SUPPORTED_MODELS): auto float16 becomes bfloat16 on Ampere,
    # float32 before it.
    (('explicit', 'float16'), ('auto', 'float16', 'gemma3'), 'differs'),
    (('auto', None, 'llama'), ('explicit', 'bfloat16'), 'unknown'),
])
def test_dtype_resolution(monkeypatch, ours, theirs, verdict):
    class Fake(object):
        def __init__(self, spec):
            self.spec = spec

    monkeypatch.setattr(weight_cache, '_dtype', lambda side: side.spec)
    assert weight_cache.compare_dtype(Fake(ours), Fake(theirs))[0] == verdict


def test_an_engine_asking_for_the_draft_group(tmp_path, models):
    # is_draft (0.31.0+) sends the engine to the <gpu>_draft.sock group (protocol.py get_socket_path) keyed
    # is_draft=True: a daemon without a cached draft (utils.py WEIGHT_CACHE_DRAFT_METHODS) has no such group.
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'])
    asks = host.start('serve', models['tuned'], '--load-format', 'ipc_cache',
                      '--model-loader-extra-config', '{"is_draft": true}')
    assert engine_of(host.audit(), asks)['status'] == 'ok'
    host = Host(tmp_path / 'with-draft')
    host.start('preload', '--model', models['base'], '--speculative-config', '{"method": "eagle3", "model": "/srv/d"}')
    asks = host.start('serve', models['tuned'], '--load-format', 'ipc_cache',
                      '--model-loader-extra-config', '{"is_draft": true}')
    result = engine_of(host.audit(), asks)
    assert result['status'] == 'at_risk' and '/srv/d' in result['summary'], result


def test_what_cannot_be_read_is_never_a_reason_for_ok(tmp_path, models):
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'])
    engine = host.start('serve', models['tuned'], '--load-format', 'ipc_cache')
    (host.proc / str(engine) / 'environ').unlink()    # another user's process, read without root
    (host.proc / str(engine) / 'status').write_text('Name:\tpython3\n')
    result = engine_of(host.audit(), engine)
    socket = result['evidence']['daemons'][0]['socket']
    assert socket['uid']['verdict'] == socket['gpu']['verdict'] == socket['socket_dir']['verdict'] == 'unknown'
    assert result['status'] == 'at_risk', result


def test_private_tmp_read_from_the_units_when_the_views_cannot_be(tmp_path, models):
    host = Host(tmp_path)
    host.start('preload', '--model', models['base'], unit='vllm-preload.service')
    private = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', unit='engine-a.service')
    joined = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', unit='engine-b.service')
    plain = host.start('serve', models['tuned'], '--load-format', 'ipc_cache', unit='engine-c.service')
    for pid in os.listdir(str(host.proc)):
        for name in ('root', 'ns/mnt'):
            os.unlink(str(host.proc / pid / name))
            os.symlink('/nonexistent-%s' % pid, str(host.proc / pid / name))
    shown = {'engine-a.service': 'PrivateTmp=yes\nJoinsNamespaceOf=\n',
             'engine-b.service': 'PrivateTmp=yes\nJoinsNamespaceOf=vllm-preload.service\n',
             'engine-c.service': 'PrivateTmp=no\nJoinsNamespaceOf=\n',
             'vllm-preload.service': 'PrivateTmp=yes\nJoinsNamespaceOf=\n'}
    journal = host.run_command

    def run_command(argv):
        if argv[0].endswith('systemctl'):
            return 0, shown[argv[argv.index('show') + 1]], ''
        return journal(argv)
    host.run_command = run_command
    finding = host.audit(journal_lines=0)
    # systemd.exec(5): PrivateTmp=yes gives a unit /tmp and /var/tmp of its own; systemd.unit(5):
    # JoinsNamespaceOf= shares them when both units have PrivateTmp=.
    for pid in (private, plain):
        result = engine_of(finding, pid)
        assert result['status'] == 'ok' and 'PrivateTmp=yes' in result['summary'], result
    assert engine_of(finding, joined)['status'] == 'at_risk'
