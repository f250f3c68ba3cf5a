"""PEFT itself is the oracle: adapters built and saved by PEFT 0.21.2 (CPU PyTorch 2.13), our
per-module scales checked against PEFT's own ``scaling``, and the folded adapter loaded back by
PEFT and checked to give the same outputs. PEFT runs in its own interpreter (tests/e2e/
peft_oracle.py: torch cannot start in a process where ansible-core has replaced sys.intern).
vLLM cannot run here (no GPU); its scaling rule is the one in vllm/lora/peft_helper.py,
unit-tested in tests/unit/plugins/module_utils/detections/test_vllm_lora_patterns.py.
"""
import json
import math
import os
import subprocess
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, fold, lora_scale
from helpers import run_module

ORACLE = os.path.join(os.path.dirname(__file__), 'peft_oracle.py')


def oracle(*args):
    proc = subprocess.run([sys.executable, ORACLE] + list(args), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


CASES = {
    'suffix-keys': dict(rank_pattern={'q_proj': 4}, alpha_pattern={'v_proj': 48}),
    'layer-specific': dict(rank_pattern={'layers.1.self_attn.v_proj': 2}, alpha_pattern={'layers.0.self_attn.q_proj': 4}),
    'alpha-only': dict(alpha_pattern={'v_proj': 64, 'embed_tokens': 8}),
    'rslora': dict(use_rslora=True, rank_pattern={'q_proj': 4}, alpha_pattern={'layers.1.self_attn.q_proj': 40}),
    # Matches under PEFT 0.15+ ((.*\.)?key$ may start at the beginning) and not under 0.14 (needs ".key").
    'rule-dependent': dict(rank_pattern={r'model\.layers\.1\.self_attn\.q_proj': 2}),
    'no-patterns': dict(),
    # PEFT 0.17+ wraps the experts' parameters; patterns match '<module>.<parameter>'.
    'moe-params': dict(target_parameters=['mlp.experts.gate_up_proj', 'mlp.experts.down_proj'],
                       rank_pattern={'gate_up_proj': 4, 'q_proj': 2}, alpha_pattern={'down_proj': 64}),
}


@pytest.fixture(scope='module')
def oracle_runs(tmp_path_factory):
    """Every case built by PEFT, folded by us, and the folds loaded back by PEFT: two PEFT processes."""
    root = tmp_path_factory.mktemp('peft')
    built = oracle('build', json.dumps(CASES), str(root))
    folded_paths = {}
    for case in CASES:
        folded_paths[case] = str(root / (case + '-folded'))
        fold.write(fold.plan(adapters.load(str(root / case))), folded_paths[case])
    loaded = oracle('load', *folded_paths.values())
    return dict((case, {'path': str(root / case), 'built': built[case], 'folded': loaded[folded_paths[case]]})
                for case in CASES)


@pytest.mark.parametrize('case', sorted(CASES))
def test_our_scales_are_peft_s_and_the_fold_is_equivalent_under_peft(oracle_runs, case):
    run = oracle_runs[case]
    adapter = adapters.load(run['path'])
    assert adapter.peft_version_recorded and adapter.peft_range.first >= (0, 21, 2)
    expected = run['built']['scalings']
    assert sorted(expected) == sorted(adapter.modules)
    for module, (rank, scaling) in expected.items():
        ours = adapter.trained(module, adapter.peft_range.first)
        assert len(ours) == 1, (module, ours)
        ours = ours.pop()
        assert ours[0] == rank and ours[1] == pytest.approx(scaling), (module, ours, (rank, scaling))
    assert run['folded']['output'] == pytest.approx(run['built']['output'], abs=1e-5, rel=1e-5)
    base = 16 / (math.sqrt(8) if CASES[case].get('use_rslora') else 8)
    for module, (rank, scaling) in run['folded']['scalings'].items():
        assert rank == expected[module][0] and scaling == pytest.approx(base), module


def test_the_rule_dependent_key_reads_differently_per_peft_version(oracle_runs):
    adapter = adapters.load(oracle_runs['rule-dependent']['path'])
    name = 'model.layers.1.self_attn.q_proj'
    assert lora_scale.peft_scale(adapter.config, name, (0, 21, 2))[0] == 2
    assert lora_scale.peft_scale(adapter.config, name, (0, 14, 0))[0] == 8


def test_the_module_check_mode_then_converge_then_idempotent(tmp_path, oracle_runs):
    path = oracle_runs['suffix-keys']['path']
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


def test_an_adapter_peft_0_13_trained_folded_and_loaded_by_todays_peft(tmp_path):
    """PEFT 0.13.2 trained this adapter (tests/unit/fixtures/peft/regenerate.sh: peft_oracle.py's tiny
    model, its outputs recorded). Its rank key 'q_proj' hid the alpha key for layers.1 q_proj, so
    that module trained at 16/4 = 4; today's PEFT reads alpha 64 (scale 16) and answers otherwise. The
    config tells PEFT 0.10-0.13, the fold keeps the trained scale, and today's PEFT loads the fold to
    the outputs PEFT 0.13.2 trained."""
    source = os.path.join(os.path.dirname(__file__), '..', 'unit', 'fixtures', 'peft', 'peft-0.13.2-adapter')
    trained = json.load(open(os.path.join(source, 'trained.json')))
    adapter = adapters.load(source)
    assert (adapter.peft_range.first, adapter.peft_range.last) == ((0, 10, 0), (0, 13, 2))
    folded = str(tmp_path / 'folded')
    fold.write(fold.plan(adapter), folded)
    loaded = oracle('load', source, folded)
    assert loaded[source]['scalings']['model.layers.1.self_attn.q_proj'] == [4, 16.0]
    assert loaded[source]['output'] != pytest.approx(trained['output'], abs=1e-3)
    assert loaded[folded]['output'] == pytest.approx(trained['output'], abs=1e-5, rel=1e-5)
