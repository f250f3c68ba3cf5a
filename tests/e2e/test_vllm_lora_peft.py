"""PEFT itself is the oracle: adapters built and saved by PEFT 0.21.2 (CPU PyTorch 2.13), our
per-module scales checked against PEFT's own ``scaling``, and the folded adapter loaded back by
PEFT and checked to give the same outputs. vLLM cannot run here (no GPU); its scaling rule is
the one in vllm/lora/peft_helper.py, unit-tested in tests/unit/test_vllm_lora.py.
"""
import json
import math
import os

import pytest

torch = pytest.importorskip('torch', reason='make test-env installs torch and peft (requirements/test-peft.txt)')
peft = pytest.importorskip('peft')

from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, fold, lora_scale  # noqa: E402
from helpers import run_module  # noqa: E402


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(16, 16)
        self.v_proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.q_proj(x) + self.v_proj(x)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()

    def forward(self, x):
        return x + self.self_attn(x)


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(32, 16)
        self.layers = torch.nn.ModuleList([Layer(), Layer()])

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return x


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Inner()

    def forward(self, ids):
        return self.model(ids)


def base_model():
    torch.manual_seed(0)
    return Tiny().eval()


CASES = {
    'suffix-keys': dict(rank_pattern={'q_proj': 4}, alpha_pattern={'v_proj': 48}),
    'layer-specific': dict(rank_pattern={'layers.1.self_attn.v_proj': 2}, alpha_pattern={'layers.0.self_attn.q_proj': 4}),
    'alpha-only': dict(alpha_pattern={'v_proj': 64, 'embed_tokens': 8}),
    'rslora': dict(use_rslora=True, rank_pattern={'q_proj': 4}, alpha_pattern={'layers.1.self_attn.q_proj': 40}),
    # Matches under PEFT 0.15+ ((.*\.)?key$ may start at the beginning) and not under 0.14 (needs ".key").
    'rule-dependent': dict(rank_pattern={r'model\.layers\.1\.self_attn\.q_proj': 2}),
    'no-patterns': dict(),
}


def build(tmp_path, name, extra):
    config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj', 'embed_tokens'],
                             init_lora_weights=False, **extra)
    torch.manual_seed(1)
    model = peft.get_peft_model(base_model(), config).eval()
    path = str(tmp_path / name)
    model.save_pretrained(path)
    return model, path


def peft_scalings(model):
    found = {}
    for name, module in model.named_modules():
        if hasattr(module, 'scaling') and isinstance(getattr(module, 'scaling'), dict) and 'default' in module.scaling:
            found[name[len('base_model.model.'):]] = (module.r['default'], module.scaling['default'])
    return found


@pytest.mark.parametrize('case', sorted(CASES))
def test_our_scales_are_peft_s_and_the_fold_is_equivalent_under_peft(tmp_path, case):
    model, path = build(tmp_path, case, CASES[case])
    adapter = adapters.load(path)
    assert adapter.peft_version_recorded and adapter.peft_version == (0, 21, 2)
    expected = peft_scalings(model)
    assert sorted(expected) == sorted(adapter.modules)
    for module, (rank, scaling) in expected.items():
        ours = lora_scale.peft_scale(adapter.config, module, adapter.peft_version)
        assert ours[0] == rank and ours[1] == pytest.approx(scaling), (module, ours, (rank, scaling))

    ids = torch.tensor([[1, 5, 9, 30]])
    with torch.no_grad():
        reference = model(ids)
    dest = str(tmp_path / (case + '-folded'))
    fold.write(fold.plan(adapter), dest)
    folded = peft.PeftModel.from_pretrained(base_model(), dest).eval()
    with torch.no_grad():
        got = folded(ids)
    assert torch.allclose(got, reference, atol=1e-5, rtol=1e-5), (got - reference).abs().max()
    base = 16 / (math.sqrt(8) if CASES[case].get('use_rslora') else 8)
    for module, (rank, scaling) in peft_scalings(folded).items():
        assert rank == expected[module][0] and scaling == pytest.approx(base), module
    with open(os.path.join(dest, 'adapter_config.json')) as handle:
        saved = json.load(handle)
    assert saved['r'] == 8 and saved['lora_alpha'] == 16 and saved.get('use_rslora', False) == bool(CASES[case].get('use_rslora'))


def test_the_rule_dependent_key_reads_differently_per_peft_version(tmp_path):
    _model, path = build(tmp_path, 'rules', CASES['rule-dependent'])
    adapter = adapters.load(path)
    name = 'model.layers.1.self_attn.q_proj'
    assert lora_scale.peft_scale(adapter.config, name, (0, 21, 2))[0] == 2
    assert lora_scale.peft_scale(adapter.config, name, (0, 14, 0))[0] == 8


def test_the_module_check_mode_then_converge_then_idempotent(tmp_path):
    _model, path = build(tmp_path, 'module', CASES['suffix-keys'])
    dest = str(tmp_path / 'module-folded')
    checked = run_module(tmp_path, 'homelab.postmortem.vllm_lora_fold', {'src': path, 'dest': dest}, check=True)
    assert 'CHANGED' in checked.stdout and not os.path.exists(dest), checked.stdout + checked.stderr
    payload = json.loads(checked.stdout.split(' => ', 1)[1])
    assert payload['modules'] == 5 and payload['modules_scaled'] == 4
    done = run_module(tmp_path, 'homelab.postmortem.vllm_lora_fold', {'src': path, 'dest': dest})
    assert 'CHANGED' in done.stdout and os.path.isdir(dest), done.stdout + done.stderr
    again = run_module(tmp_path, 'homelab.postmortem.vllm_lora_fold', {'src': path, 'dest': dest})
    assert 'SUCCESS' in again.stdout and '"changed": false' in again.stdout, again.stdout
    refused = run_module(tmp_path, 'homelab.postmortem.vllm_lora_fold', {'src': path, 'dest': path})
    assert 'FAILED' in refused.stdout and 'never modified' in refused.stdout
