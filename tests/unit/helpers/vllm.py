"""LoRA adapters, checkpoints and vLLM hosts written under a test's tmp_path."""
import json
import os

import numpy as np
from safetensors.numpy import save_file

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.vllm_weight_cache import DETECTION as vllm_weight_cache

PREFIX = 'base_model.model.'
MODULES = ['model.layers.0.self_attn.q_proj', 'model.layers.0.self_attn.v_proj',
           'model.layers.1.self_attn.q_proj', 'model.layers.1.self_attn.v_proj']


def config(**extra):
    data = {'r': 8, 'lora_alpha': 16, 'use_rslora': False, 'rank_pattern': {}, 'alpha_pattern': {},
            'peft_type': 'LORA', 'target_modules': ['q_proj', 'v_proj']}
    data.update(extra)
    return data


def write_adapter(path, cfg, ranks=None, dtype=np.float32, modules=tuple(MODULES), metadata=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, 'adapter_config.json'), 'w') as handle:
        json.dump(cfg, handle)
    rng = np.random.default_rng(7)
    tensors = {}
    for module in modules:
        rank = (ranks or {}).get(module, cfg['r'])
        tensors[PREFIX + module + '.lora_A.weight'] = rng.standard_normal((rank, 16)).astype(dtype)
        tensors[PREFIX + module + '.lora_B.weight'] = rng.standard_normal((24, rank)).astype(dtype)
    save_file(tensors, os.path.join(path, 'adapter_model.safetensors'), metadata=metadata or {'format': 'pt'})
    return tensors


def write_checkpoint(path, seed, config=None):
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(seed)
    tensors = dict(('model.layers.%d.mlp.weight' % i, rng.standard_normal((16, 8)).astype(np.float32)) for i in range(3))
    save_file(tensors, os.path.join(path, 'model.safetensors'), metadata={'format': 'pt'})
    data = {'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'torch_dtype': 'bfloat16',
            'rope_theta': 10000.0, 'max_position_embeddings': 4096}
    data.update(config or {})
    with open(os.path.join(path, 'config.json'), 'w') as handle:
        json.dump(data, handle)
    return path


class Host(object):
    """A fake /proc with vLLM processes, each with its own environment, user, root and mount namespace."""

    def __init__(self, tmp_path, version='0.33.0'):
        self.tmp = tmp_path
        self.proc = tmp_path / 'proc'
        self.proc.mkdir(parents=True)
        self.next_pid = 100
        self.journal = {}
        self.version = version
        self.root = self.make_root('shared')

    def make_root(self, name):
        """A directory tree standing for one mount namespace's view of the file system."""
        root = self.tmp / ('root-' + name)
        for directory in ('tmp/vllm_weight_cache_1000', 'var/tmp', 'srv/wc'):
            (root / directory).mkdir(parents=True, exist_ok=True)
        return root

    def prefix(self, version):
        prefix = self.tmp / ('venv-' + version)
        (prefix / 'lib' / 'python3.11' / 'site-packages' / ('vllm-%s.dist-info' % version)).mkdir(parents=True, exist_ok=True)
        return prefix

    def start(self, *args, env=None, uid=1000, root=None, mntns='mnt:[4026531840]', unit=None, version=None):
        pid = self.next_pid
        self.next_pid += 1
        folder = self.proc / str(pid)
        folder.mkdir()
        argv = [str(self.prefix(version or self.version) / 'bin' / 'python3'), str(self.prefix(version or self.version) / 'bin' / 'vllm')] + list(args)
        (folder / 'cmdline').write_bytes(b'\0'.join(a.encode() for a in argv) + b'\0')
        environment = {'PATH': '/usr/bin'}
        environment.update(env or {})
        (folder / 'environ').write_bytes(b'\0'.join(('%s=%s' % kv).encode() for kv in environment.items()) + b'\0')
        (folder / 'status').write_text('Name:\tpython3\nUid:\t%d\t%d\t%d\t%d\n' % (uid, uid, uid, uid))
        (folder / 'cgroup').write_text('0::/system.slice/%s\n' % unit if unit else '0::/user.slice/session-1.scope\n')
        os.symlink(str(self.tmp), str(folder / 'cwd'))
        os.symlink(str(root or self.root), str(folder / 'root'))
        (folder / 'ns').mkdir()
        os.symlink(mntns, str(folder / 'ns' / 'mnt'))
        return pid

    def run_command(self, argv):
        unit = argv[argv.index('--unit') + 1]
        return 0, '\n'.join(self.journal.get(unit, [])) + '\n', ''

    def audit(self, **settings):
        ctx = AuditContext(root='/', live=True, proc_root=str(self.proc), sys_root=str(self.tmp / 'sys'),
                           kernel_release='6.18.0', which=lambda name: '/usr/bin/' + name, run_command=self.run_command,
                           settings=registry.validate_settings({'vllm_weight_cache': settings}))
        return registry.run_one(ctx, vllm_weight_cache)


def engine_of(finding, pid):
    found = [i for i in finding['evidence']['instances'] if i['evidence'].get('engine', {}).get('pid') == pid]
    assert len(found) == 1, finding
    return found[0]
