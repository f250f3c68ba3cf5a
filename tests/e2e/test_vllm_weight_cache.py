"""vllm_weight_cache on real processes and real safetensors checkpoints.

vLLM itself cannot run here (no GPU; its weight cache needs CUDA IPC), and its
``hash_checkpoint`` cannot be imported (it needs vLLM, CUDA PyTorch and transformers). So: the
daemons and engines are stand-ins started by the test with vLLM's real command lines
(``vllm preload --model ...``, ``vllm serve MODEL --load-format ipc_cache``, the 0.30.0 daemon
module, a --config file) from a Python prefix that holds a ``vllm-0.33.0.dist-info`` (the
process table and that directory are what the detection reads); the checkpoints are real
safetensors files; and the header fingerprint is checked against vLLM's algorithm recomputed
here from protocol.py (md5 over each sorted shard's base name and raw header).
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
from safetensors.numpy import save_file

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.vllm_weight_cache import DETECTION as vllm_weight_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import checkpoint


def write_checkpoint(path, seed, dtype=np.float32, shape=(64, 32), shards=2):
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    weight_map = {}
    for shard in range(shards):
        name = 'model-%05d-of-%05d.safetensors' % (shard + 1, shards)
        tensors = dict(('model.layers.%d.mlp.weight' % (shard * 2 + i), rng.standard_normal(shape).astype(dtype))
                       for i in range(2))
        save_file(tensors, os.path.join(path, name), metadata={'format': 'pt'})
        weight_map.update((t, name) for t in tensors)
    with open(os.path.join(path, 'model.safetensors.index.json'), 'w') as handle:
        json.dump({'metadata': {}, 'weight_map': weight_map}, handle)
    with open(os.path.join(path, 'config.json'), 'w') as handle:
        json.dump({'architectures': ['LlamaForCausalLM'], 'torch_dtype': 'bfloat16'}, handle)
    return path


def vllm_algorithm(path):
    """hash_checkpoint as vllm 0.33.0 protocol.py does it, written out independently."""
    digest = hashlib.md5()
    for name in sorted(n for n in os.listdir(path) if n.endswith('.safetensors')):
        with open(os.path.join(path, name), 'rb') as handle:
            size = handle.read(8)
            digest.update(name.encode())
            digest.update(size + handle.read(struct.unpack('<Q', size)[0]))
    return digest.hexdigest()


@pytest.fixture
def fleet(tmp_path):
    """A Python prefix with vLLM 0.33.0's dist-info, and a function that starts vLLM stand-ins from it."""
    prefix = tmp_path / 'venv'
    (prefix / 'bin').mkdir(parents=True)
    (prefix / 'lib' / 'python3.11' / 'site-packages' / 'vllm-0.33.0.dist-info').mkdir(parents=True)
    os.symlink(sys.executable, str(prefix / 'bin' / 'python3'))
    script = prefix / 'bin' / 'vllm'
    script.write_text('import time\ntime.sleep(600)\n')
    started = []

    # The daemon creates its socket directory, gettempdir()/vllm_weight_cache_<uid> (protocol.py
    # ensure_private_socket_dir); the stand-ins share a TMPDIR where it exists, as a real daemon leaves it.
    (tmp_path / 'tmp' / ('vllm_weight_cache_%d' % os.getuid())).mkdir(parents=True)
    (tmp_path / 'wc').mkdir()

    def start(*args, module=None):
        # -m runs a sleeper saved under the daemon module's name (tmp_path/mods), so the command line is vLLM's.
        head = [str(prefix / 'bin' / 'python3')] + (['-m', module] if module else [str(script)])
        env = dict(os.environ, PYTHONPATH=str(tmp_path / 'mods'), TMPDIR=str(tmp_path / 'tmp'))
        env.pop('CUDA_VISIBLE_DEVICES', None)
        proc = subprocess.Popen(head + list(args), cwd=str(tmp_path), env=env)
        started.append(proc)
        return proc

    (tmp_path / 'mods' / 'vllm' / 'model_executor' / 'model_loader' / 'weight_cache').mkdir(parents=True)
    for folder in ('vllm', 'vllm/model_executor', 'vllm/model_executor/model_loader',
                   'vllm/model_executor/model_loader/weight_cache'):
        (tmp_path / 'mods' / folder / '__init__.py').write_text('')
    (tmp_path / 'mods' / 'vllm/model_executor/model_loader/weight_cache/daemon.py').write_text(
        'import time\ntime.sleep(600)\n')
    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def audit(tmp_path, **settings):
    time.sleep(0.3)  # let the stand-ins exec
    ctx = AuditContext(root='/', live=True, proc_root='/proc', sys_root='/sys', kernel_release=os.uname().release,
                       which=shutil.which, settings=registry.validate_settings({'vllm_weight_cache': settings}))
    return registry.run_one(ctx, vllm_weight_cache)


def engine_instance(finding, pid):
    return [i for i in finding['evidence']['instances'] if i['evidence'].get('engine', {}).get('pid') == pid]


def test_fingerprint_is_vllm_s(tmp_path):
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    fingerprint, headers = checkpoint.header_fingerprint(base)
    assert fingerprint == vllm_algorithm(base) and len(headers) == 2
    tuned = write_checkpoint(str(tmp_path / 'tuned'), 2)
    assert checkpoint.header_fingerprint(tuned)[0] == fingerprint  # same layout, other weights: same key
    assert checkpoint.header_fingerprint(write_checkpoint(str(tmp_path / 'wide'), 1, shape=(64, 48)))[0] != fingerprint
    assert checkpoint.header_fingerprint(write_checkpoint(str(tmp_path / 'half'), 1, dtype=np.float16))[0] != fingerprint
    assert checkpoint.content(headers)[0] != checkpoint.content(checkpoint.header_fingerprint(tuned)[1])[0]


def test_a_fine_tune_with_the_same_layout_is_served_the_base_weights(tmp_path, fleet):
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    tuned = write_checkpoint(str(tmp_path / 'tuned'), 2)
    copy = str(tmp_path / 'base-copy')
    shutil.copytree(base, copy)
    relayout = write_checkpoint(str(tmp_path / 'relayout'), 3, shape=(32, 64))
    daemon = fleet('preload', '--model', base, '-tp', '1')
    victim = fleet('serve', tuned, '--load-format', 'ipc_cache')
    same = fleet('serve', copy, '--load-format=ipc_cache', '--dtype', 'auto')
    (tmp_path / 'serve.yaml').write_text('load-format: ipc_cache\ndtype: float16\n')
    other_dtype = fleet('serve', tuned, '--config', 'serve.yaml')
    other_layout = fleet('serve', relayout, '--load-format', 'ipc_cache')
    from_disk = fleet('serve', tuned)

    finding = audit(tmp_path)
    hit = engine_instance(finding, victim.pid)
    assert hit and hit[0]['status'] == 'affected', finding
    evidence = hit[0]['evidence']
    assert evidence['daemon_pid'] == daemon.pid and evidence['daemon_model'] == base
    assert evidence['engine']['header_fingerprint'] == evidence['daemon_header_fingerprint'] == vllm_algorithm(base)
    assert evidence['engine']['vllm_version'] == '0.33.0'
    assert evidence['tensors_compared'] == 4 and evidence['tensors_differing'] == 4
    assert evidence['differing'][0] == 'model-00001-of-00002.safetensors/model.layers.0.mlp.weight'
    assert 'is served the weights of %s' % base in hit[0]['summary']

    assert engine_instance(finding, same.pid)[0]['status'] == 'ok'
    assert 'same checkpoint content' in engine_instance(finding, same.pid)[0]['summary']
    # float16 against auto with a bfloat16 config.json: the same key on a GPU without bfloat16 (vLLM's
    # _resolve_auto_dtype falls back to float16 there), another one from compute capability 8.0.
    dtype = engine_instance(finding, other_dtype.pid)[0]
    assert dtype['status'] == 'at_risk' and 'dtype cannot be compared' in dtype['summary'], dtype
    layout = engine_instance(finding, other_layout.pid)[0]
    assert layout['status'] == 'ok' and 'checkpoint differs' in layout['summary']
    assert from_disk.pid not in finding['evidence']['ipc_cache_engines']
    assert finding['status'] == 'affected'

    full = engine_instance(audit(tmp_path, content_check='full'), victim.pid)[0]
    assert full['status'] == 'affected' and full['evidence']['content_check'] == 'full'
    off = engine_instance(audit(tmp_path, content_check='off'), victim.pid)[0]
    assert off['status'] == 'at_risk' and 'not compared' in off['summary']


def test_an_engine_with_the_daemons_socket_dir_in_its_loader_config(tmp_path, fleet):
    # vllm serve has no socket option; ipc_loader.py reads socket_dir from --model-loader-extra-config.
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    tuned = write_checkpoint(str(tmp_path / 'tuned'), 2)
    fleet('preload', '--model', base, '--weight-cache-socket-dir', str(tmp_path / 'wc'))
    mapped = fleet('serve', tuned, '--load-format', 'ipc_cache', '--model-loader-extra-config',
                   json.dumps({'socket_dir': str(tmp_path / 'wc')}))
    default = fleet('serve', tuned, '--load-format', 'ipc_cache')
    finding = audit(tmp_path)
    assert engine_instance(finding, mapped.pid)[0]['status'] == 'affected', finding
    missed = engine_instance(finding, default.pid)[0]
    assert missed['status'] == 'ok' and 'socket_dir differs' in missed['summary'], missed


def test_the_0_30_daemon_module_and_bad_checkpoints(tmp_path, fleet):
    base = write_checkpoint(str(tmp_path / 'base'), 1)
    tuned = write_checkpoint(str(tmp_path / 'tuned'), 2)
    daemon = fleet('--model', base, module='vllm.model_executor.model_loader.weight_cache.daemon')
    victim = fleet('serve', tuned, '--load-format', 'ipc_cache')
    finding = audit(tmp_path)
    assert daemon.pid in finding['evidence']['daemons']
    assert engine_instance(finding, victim.pid)[0]['status'] == 'affected'

    broken = str(tmp_path / 'broken')
    shutil.copytree(tuned, broken)
    shard = os.path.join(broken, 'model-00002-of-00002.safetensors')
    with open(shard, 'r+b') as handle:
        handle.truncate(20)
    bad = fleet('serve', broken, '--load-format', 'ipc_cache')
    finding = audit(tmp_path)
    errors = [i for i in finding['evidence']['instances'] if i['status'] == 'error']
    assert any(shard in i['summary'] and i['evidence']['pid'] == bad.pid for i in errors), finding
    assert engine_instance(finding, victim.pid)[0]['status'] == 'affected'  # one bad engine costs no other finding


def test_no_engine_with_ipc_cache(tmp_path, fleet):
    fleet('serve', str(tmp_path), '--port', '8000')
    finding = audit(tmp_path)
    assert finding['status'] == 'not_applicable'
    assert finding['summary'] == 'No vLLM engine loads from the weight cache (--load-format ipc_cache).'
