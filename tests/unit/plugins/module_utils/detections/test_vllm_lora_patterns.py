"""vllm_lora_patterns and vllm_lora_fold on real safetensors files written here (numpy + the
safetensors package).

Expected scales come from upstream: fixtures/peft/peft_scales.json holds what PEFT 0.8.2, 0.13.2,
0.14.0, 0.15.2, 0.17.1 and 0.21.2 themselves saved and trained with (fixtures/peft/regenerate.sh, each release in its
own virtualenv on CPU PyTorch 2.13.0), and fixtures/vllm/peft_helper_served.json what each vLLM
wheel's own vllm/lora/peft_helper.py serves (fixtures/vllm/run_peft_helper.py, 0.28.0 to 0.33.0).
PEFT 0.21.2 runs again as the oracle in tests/e2e/test_vllm_lora_peft.py.
"""
import json
import math
import os
import struct

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.vllm_lora_patterns import DETECTION as vllm_lora_patterns
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters, fold, lora_scale, safetensors

from ....helpers.paths import FIXTURES_DIR
from ....helpers.vllm import MODULES, config, write_adapter


def scales(cfg, version):
    parsed, why = lora_scale.parse_config(cfg)
    assert parsed, why
    return dict((m, lora_scale.peft_scale(parsed, m, version)) for m in MODULES)


def test_peft_rules_per_version():
    # A rank key that matches q_proj and a different alpha key that matches layers.1's q_proj.
    cfg = config(rank_pattern={'q_proj': 4}, alpha_pattern={'layers.1.self_attn.q_proj': 32})
    old, separate, current = (scales(cfg, v) for v in ((0, 13, 2), (0, 14, 0), (0, 21, 2)))
    # 0.6-0.13: one lookup; the rank key 'q_proj' is found first and hides the alpha key.
    assert old['model.layers.1.self_attn.q_proj'] == (4, 16 / 4)
    # 0.14+: separate lookups, so layer 1's q_proj gets alpha 32.
    assert separate['model.layers.1.self_attn.q_proj'] == (4, 32 / 4)
    assert current['model.layers.1.self_attn.q_proj'] == (4, 32 / 4)
    assert old['model.layers.0.self_attn.v_proj'] == (8, 2.0)


def test_a_key_that_only_the_new_rule_matches():
    # '(.*\.)?(key)$' (0.15+) lets a key match from the start of the name; '.*\.key$' needs a dot before it.
    cfg = config(rank_pattern={'model.layers.0.self_attn.q_proj': 4, r'model\.layers\.1.*q_proj': 2})
    assert scales(cfg, (0, 14, 0))['model.layers.0.self_attn.q_proj'] == (4, 4.0)  # exact full-name lookup
    assert scales(cfg, (0, 14, 0))['model.layers.1.self_attn.q_proj'] == (8, 2.0)  # regex needs a leading dot
    assert scales(cfg, (0, 15, 0))['model.layers.1.self_attn.q_proj'] == (2, 8.0)


def test_rslora_and_vllm_versions():
    data = config(use_rslora=True, rank_pattern={'v_proj': 4})
    parsed = lora_scale.parse_config(data)[0]
    name = 'model.layers.0.self_attn.v_proj'
    assert lora_scale.peft_scale(parsed, name, (0, 21, 2)) == (4, 16 / math.sqrt(4))
    assert lora_scale.peft_scale(parsed, name, (0, 7, 1)) == (4, 16 / 4)  # no rsLoRA before PEFT 0.8.0
    assert lora_scale.vllm_scale(parsed, name, (0, 6, 4)) == 16 / 8  # rsLoRA and patterns ignored
    assert lora_scale.vllm_refusals(data, parsed, (0, 6, 5))         # refused
    assert lora_scale.vllm_scale(parsed, name, (0, 31, 0)) == 16 / math.sqrt(8)
    assert lora_scale.vllm_scale(parsed, name, (0, 32, 0)) == 16 / math.sqrt(4)


@pytest.mark.parametrize('data,fragment', [
    ({'r': 0, 'lora_alpha': 16}, 'r is 0'),
    ({'r': 8, 'lora_alpha': 'sixteen'}, 'lora_alpha is'),
    ({'r': 8}, 'lora_alpha is None'),
    ({'r': 8, 'lora_alpha': 16, 'rank_pattern': {'q': 'four'}}, 'rank_pattern is not a map'),
    ({'r': 8, 'lora_alpha': 16, 'alpha_pattern': {'(': 4}}, 'not a regular expression'),
    ([1, 2], 'not a JSON object'),
])
def test_bad_configs_are_named(data, fragment):
    parsed, why = lora_scale.parse_config(data)
    assert parsed is None and fragment in why


def test_bad_safetensors_files_are_named(tmp_path):
    good = tmp_path / 'good'
    write_adapter(str(good), config())
    data = (good / 'adapter_model.safetensors').read_bytes()
    cases = {
        'short': data[:5],
        'huge-header': struct.pack('<Q', len(data) * 10) + data[8:],
        'not-json': struct.pack('<Q', 6) + b'{nope}' + data[8:],
        'truncated': data[:-10],
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.mkdir()
        (path / 'adapter_config.json').write_text(json.dumps(config()))
        (path / 'adapter_model.safetensors').write_bytes(content)
        with pytest.raises(adapters.AdapterProblem) as exc:
            adapters.load(str(path))
        assert str(path / 'adapter_model.safetensors') in str(exc.value), (name, exc.value)
    (tmp_path / 'bin-only').mkdir()
    (tmp_path / 'bin-only' / 'adapter_config.json').write_text(json.dumps(config()))
    (tmp_path / 'bin-only' / 'adapter_model.bin').write_bytes(b'pickle')
    with pytest.raises(adapters.AdapterProblem, match='only adapter_model.bin'):
        adapters.load(str(tmp_path / 'bin-only'))


@pytest.mark.parametrize('dtype,name', [(np.float32, 'F32'), (np.float16, 'F16')])
def test_scale_matches_numpy(dtype, name):
    values = np.array([1.5, -2.25, 3e-3, 0.0, 1000.0], dtype=dtype)
    out = np.frombuffer(safetensors.scale(values.tobytes(), name, 0.5), dtype=dtype)
    assert np.array_equal(out, (values.astype(np.float64) * 0.5).astype(dtype))


def test_bf16_scaling_rounds_to_nearest_even():
    raw = np.array([1.0, -3.5, 1e-20, 65504.0], dtype=np.float32)
    halves = (raw.view(np.uint32) >> 16).astype(np.uint16)
    values = (halves.astype(np.uint32) << 16).view(np.float32)  # what those bf16 values are
    out = np.frombuffer(safetensors.scale(halves.tobytes(), 'BF16', 2.0), dtype=np.uint16)
    assert np.array_equal((out.astype(np.uint32) << 16).view(np.float32), values * 2)  # x2 is exact
    # 1 + 2**-8 lies halfway between two bf16 values: it rounds to the even one, 1.0.
    third = np.frombuffer(safetensors.scale(np.array([0x3f80], dtype=np.uint16).tobytes(), 'BF16', 1 + 2 ** -8),
                          dtype=np.uint16)
    assert third[0] == 0x3f80
    with pytest.raises(safetensors.SafetensorsProblem, match='I8 cannot be scaled'):
        safetensors.scale(b'\x01', 'I8', 2.0)


def ctx(tmp_path, settings):
    os.makedirs(str(tmp_path / 'proc'), exist_ok=True)
    return AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                        kernel_release='6.18.0', which=lambda name: None,
                        settings=registry.validate_settings({'vllm_lora_patterns': settings}))


def test_detection_without_vllm_reports_what_before_0_32_would_do(tmp_path):
    root = tmp_path / 'adapters'
    write_adapter(str(root / 'patterned'), config(alpha_pattern={'v_proj': 32}, peft_version='0.21.2'))
    write_adapter(str(root / 'plain'), config())
    write_adapter(str(root / 'equal'), config(rank_pattern={'v_proj': 4}, alpha_pattern={'v_proj': 8}),
                  ranks=dict((m, 4) for m in MODULES if m.endswith('v_proj')))
    (root / 'broken').mkdir()
    (root / 'broken' / 'adapter_config.json').write_text('{"r": "x"}')
    finding = registry.run_one(ctx(tmp_path, {'adapter_paths': [str(root)]}), vllm_lora_patterns)
    found = dict((os.path.basename(i['evidence'].get('path', '')), i) for i in finding['evidence']['instances'])
    assert found['patterned']['status'] == 'at_risk'
    judged = found['patterned']['evidence']['judged'][0]
    assert judged['modules_off'] == 2 and judged['factors'] == {'0.5': 2}
    assert judged['modules_listed'][0]['trained_scale'] == 4.0 and judged['modules_listed'][0]['served_scale'] == 2.0
    assert found['plain']['status'] == 'ok' and found['equal']['status'] == 'ok'
    assert found['broken']['status'] == 'error' and 'adapter_config.json' in found['broken']['summary']
    assert found['plain']['evidence']['peft_version'] is None
    assert 'missing fields say nothing' in found['plain']['evidence']['peft_range_why']
    assert finding['status'] == 'error' or finding['status'] == 'at_risk'


def test_detection_with_vllm_installed_under_a_prefix(tmp_path):
    root = tmp_path / 'adapters'
    write_adapter(str(root / 'patterned'), config(alpha_pattern={'v_proj': 32}))
    for version in ('0.31.0', '0.32.0'):
        prefix = tmp_path / ('venv-' + version)
        (prefix / 'lib' / 'python3.11' / 'site-packages' / ('vllm-%s.dist-info' % version)).mkdir(parents=True)
    settings = {'adapter_paths': [str(root)], 'vllm_prefixes': [str(tmp_path / 'venv-0.31.0')]}
    finding = registry.run_one(ctx(tmp_path, settings), vllm_lora_patterns)
    assert finding['status'] == 'affected', finding['summary']
    assert 'vLLM 0.31.0 serves 2 of 4 modules' in finding['summary']
    settings['vllm_prefixes'] = [str(tmp_path / 'venv-0.32.0')]
    assert registry.run_one(ctx(tmp_path, settings), vllm_lora_patterns)['status'] == 'ok'


def test_a_ten_thousand_adapter_tree_is_bounded(tmp_path):
    root = tmp_path / 'many'
    cfg = json.dumps(config())
    for index in range(10000):
        folder = root / ('a%05d' % index)
        folder.mkdir(parents=True)
        (folder / 'adapter_config.json').write_text(cfg)
    found, problems, skipped = adapters.find(ctx(tmp_path, {}), [str(root)], 25)
    assert len(found) == 25 and skipped == 9975 and problems == []
    finding = registry.run_one(ctx(tmp_path, {'adapter_paths': [str(root)], 'max_adapters': 25}), vllm_lora_patterns)
    assert len(finding['evidence']['instances']) == 25
    assert 'stopped after 25 adapters' in finding['evidence']['note'] and finding['evidence']['adapters_skipped'] == 9975


def test_unreadable_and_missing_paths_are_errors(tmp_path):
    finding = registry.run_one(ctx(tmp_path, {'adapter_paths': [str(tmp_path / 'nowhere')]}), vllm_lora_patterns)
    assert finding['evidence']['instances'][0]['status'] == 'error'
    assert 'nowhere is not a directory' in finding['evidence']['instances'][0]['summary']


@pytest.mark.parametrize('dtype', [np.float32, np.float16])
def test_fold_scales_lora_b_keeps_everything_else_and_is_idempotent(tmp_path, dtype):
    src, dest = str(tmp_path / 'src'), str(tmp_path / 'dest')
    ranks = {'model.layers.0.self_attn.v_proj': 4, 'model.layers.1.self_attn.v_proj': 4}
    cfg = config(rank_pattern={'v_proj': 4}, alpha_pattern={'layers.1.self_attn.v_proj': 32}, peft_version='0.21.2')
    original = write_adapter(src, cfg, ranks=ranks, dtype=dtype, metadata={'format': 'pt', 'note': 'keep me'})
    plan = fold.plan(adapters.load(src))
    # base 16/8 = 2; layer-0 v_proj trained 16/4 = 4 (x2), layer-1 v_proj 32/4 = 8 (x4).
    assert plan.factors == {'model.layers.0.self_attn.q_proj': 1.0, 'model.layers.0.self_attn.v_proj': 2.0,
                            'model.layers.1.self_attn.q_proj': 1.0, 'model.layers.1.self_attn.v_proj': 4.0}
    assert fold.write(plan, dest) is None
    folded = load_file(os.path.join(dest, 'adapter_model.safetensors'))
    for name, tensor in original.items():
        factor = 4.0 if 'layers.1.self_attn.v_proj.lora_B' in name else 2.0 if 'layers.0.self_attn.v_proj.lora_B' in name else 1.0
        assert folded[name].dtype == tensor.dtype
        assert np.array_equal(folded[name], (tensor.astype(np.float64) * factor).astype(dtype)), name
    new_cfg = json.load(open(os.path.join(dest, 'adapter_config.json')))
    assert new_cfg['r'] == 8 and new_cfg['lora_alpha'] == 16 and new_cfg['target_modules'] == ['q_proj', 'v_proj']
    assert new_cfg['rank_pattern'] == ranks
    assert new_cfg['alpha_pattern'] == {'model.layers.0.self_attn.v_proj': 8.0, 'model.layers.1.self_attn.v_proj': 8.0}
    header = safetensors.read_header(os.path.join(dest, 'adapter_model.safetensors'))
    assert header.metadata['note'] == 'keep me' and fold.PROVENANCE_KEY in header.metadata
    assert fold.up_to_date(dest, plan.fingerprint)
    # Every rule and vLLM version now reads every module at the base scale.
    folded_adapter = adapters.load(dest)
    for version in ((0, 31, 0), (0, 32, 0)):
        rows, _refused = adapters.judge(folded_adapter, version)
        assert not [r for r in rows if r['off']]
    # Changing the source makes the output stale.
    write_adapter(src, dict(cfg, lora_alpha=32), ranks=ranks, dtype=dtype)
    assert not fold.up_to_date(dest, fold.plan(adapters.load(src)).fingerprint)


def test_a_second_fold_keeps_the_first_as_a_backup_a_server_can_read(tmp_path):
    """The replaced adapter is kept under the backup name every fix module uses; the new directory is
    readable by a server running as another user (mkdtemp would leave it 0700)."""
    src, dest = str(tmp_path / 'src'), str(tmp_path / 'dest')
    ranks = {'model.layers.0.self_attn.v_proj': 4, 'model.layers.1.self_attn.v_proj': 4}
    write_adapter(src, config(rank_pattern={'v_proj': 4}, peft_version='0.21.2'), ranks=ranks)
    os.chmod(src, 0o755)
    assert fold.write(fold.plan(adapters.load(src)), dest) is None
    assert oct(os.stat(dest).st_mode & 0o777) == '0o755'
    assert oct(os.stat(os.path.join(dest, 'adapter_model.safetensors')).st_mode & 0o777) == '0o644'
    backup = fold.write(fold.plan(adapters.load(src)), dest)
    assert os.path.basename(backup).startswith('dest.') and backup.endswith('Z.bak') and ':' not in backup
    assert os.path.isfile(os.path.join(backup, 'adapter_config.json'))


def test_fold_refuses_what_it_cannot_do(tmp_path):
    src = str(tmp_path / 'int8')
    write_adapter(src, config(alpha_pattern={'v_proj': 32}), dtype=np.int8)
    with pytest.raises(fold.FoldProblem, match='cannot be scaled'):
        fold.plan(adapters.load(src))
    overlap = str(tmp_path / 'overlap')
    # 'vision.model.layers.0.self_attn.q_proj' ends with '.model.layers.0.self_attn.q_proj': a full-name key
    # for the shorter module would also match the longer one under PEFT 0.6-0.14.
    names = ['model.layers.0.self_attn.q_proj', 'vision.model.layers.0.self_attn.q_proj']
    write_adapter(overlap, config(rank_pattern={'^model.layers.0.self_attn.q_proj': 4}, peft_version='0.21.2'),
                  ranks={names[0]: 4, names[1]: 8}, modules=names)
    with pytest.raises(fold.FoldProblem, match='module names overlap'):
        fold.plan(adapters.load(overlap))


FIXTURES = os.path.join(FIXTURES_DIR)
PEFT_SCALES = json.load(open(os.path.join(FIXTURES, 'peft', 'peft_scales.json')))
SERVED = json.load(open(os.path.join(FIXTURES, 'vllm', 'peft_helper_served.json')))


def write_recorded(path, record, config_override=None):
    """An adapter directory with the config PEFT wrote and tensors of the shapes it saved."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, 'adapter_config.json'), 'w') as handle:
        json.dump(config_override if config_override is not None else record['adapter_config'], handle)
    rng = np.random.default_rng(3)
    save_file(dict((name, rng.standard_normal(shape).astype(np.float32)) for name, shape in record['tensors'].items()),
              os.path.join(path, 'adapter_model.safetensors'), metadata={'format': 'pt'})
    return path


def recorded(version, case):
    return PEFT_SCALES[version]['cases'][case]


@pytest.mark.parametrize('version,case', sorted((v, c) for v in PEFT_SCALES for c in PEFT_SCALES[v]['cases']))
def test_trained_scales_are_the_ones_peft_trained_with(tmp_path, version, case):
    record = recorded(version, case)
    adapter = adapters.load(write_recorded(str(tmp_path / case), record))
    saved_by = hostio.version_tuple(version)
    # The range inferred from the config's fields holds the release that wrote it.
    assert adapter.peft_range.first <= saved_by <= adapter.peft_range.last, adapter.peft_range.why
    for module, (rank, scaling) in record['scalings'].items():
        readings = set()
        for candidate in adapter.candidates:
            readings |= set((r, round(s, 8)) for r, s in adapter.trained(module, candidate))
        # Every release the config allows trains this module as PEFT did.
        assert readings == {(rank, round(scaling, 8))}, (module, readings, (rank, scaling))


def test_the_config_fields_tell_the_peft_release():
    def saved(version):
        return adapters.lora_scale.infer_peft_range(recorded(version, 'plain')['adapter_config'], None)
    # 0.8.2 writes use_rslora (0.8.0) and not use_dora (0.9.0).
    assert (saved('0.8.2').first, saved('0.8.2').last) == ((0, 8, 0), (0, 8, 2))
    # 0.15.2 writes corda_config (0.15.0) and not use_qalora (0.16.0).
    assert (saved('0.15.2').first, saved('0.15.2').last) == ((0, 15, 0), (0, 15, 2))
    # 0.13.2 writes layer_replication (0.10.0) and not exclude_modules (0.14.0).
    assert (saved('0.13.2').first, saved('0.13.2').last) == ((0, 10, 0), (0, 13, 2))
    assert (saved('0.14.0').first, saved('0.14.0').last) == ((0, 14, 0), (0, 14, 0))
    # 0.17.1 writes target_parameters (0.17.0), not peft_version (0.18.0).
    assert (saved('0.17.1').first, saved('0.17.1').last) == ((0, 17, 0), (0, 17, 1))
    # 0.21.2 records peft_version itself; without it its fields (kasa_config) say 0.21.x.
    config = recorded('0.21.2', 'plain')['adapter_config']
    assert config['peft_version'] == '0.21.2'
    assert adapters.lora_scale.infer_peft_range(config, (0, 21, 2)).releases == [(0, 21, 2)]
    assert (saved('0.21.2').first, saved('0.21.2').last) == ((0, 21, 0), (0, 21, 2))
    # A config not written by PEFT (fields missing that every release writes) proves nothing by absence.
    assert adapters.lora_scale.infer_peft_range({'r': 8, 'lora_alpha': 16, 'exclude_modules': None}, None).last \
        == adapters.lora_scale.NEWEST_PEFT


@pytest.mark.parametrize('release', sorted(SERVED['releases']))
def test_served_scales_are_the_ones_each_vllm_wheels_peft_helper_gives(release):
    version = hostio.version_tuple(release)
    for case, results in SERVED['releases'][release].items():
        data = SERVED['cases'][case]
        parsed, why = lora_scale.parse_config(data)
        assert parsed, why
        refusals = lora_scale.vllm_refusals(data, parsed, version, max_lora_rank=16)
        assert bool(refusals) == bool(results['refused']), (release, case, refusals, results['refused'])
        for module in SERVED['modules']:
            expected = results[module][1]
            if (case == 'rslora' and lora_scale.is_expert(module) and version < (0, 30, 0)):
                # pack_moe / pack_moe_stacked scale expert LoRAs with lora_alpha / rank in 0.28.0 and 0.29.0
                # (lora_weights.py l.205 and l.253), not with the adapter's rsLoRA scaling.
                expected = data['lora_alpha'] / data['r']
            assert lora_scale.vllm_scale(parsed, module, version) == pytest.approx(expected), (release, case, module)


def judge_dir(tmp_path, path, vllm_version, extra=None):
    prefix = tmp_path / ('venv-' + vllm_version)
    dist_info = prefix / 'lib' / 'python3.11' / 'site-packages' / ('vllm-%s.dist-info' % vllm_version)
    dist_info.mkdir(parents=True, exist_ok=True)
    settings = {'adapter_paths': [path], 'vllm_prefixes': [str(prefix)]}
    settings.update(extra or {})
    finding = registry.run_one(ctx(tmp_path, settings), vllm_lora_patterns)
    return finding['evidence']['instances'][0]


def test_an_adapter_peft_0_13_saved_is_judged_by_the_0_13_rule(tmp_path):
    # PEFT 0.13.2 trained layers.1 q_proj at 16/4 = 4 (its rank key hid the alpha key); vLLM 0.32.0+
    # reads alpha 64 for it (peft_helper.py get_rank_and_scaling): 16, four times the trained scale.
    path = write_recorded(str(tmp_path / 'a'), recorded('0.13.2', 'rank-hides-alpha'))
    result = judge_dir(tmp_path, path, '0.32.0')
    assert result['status'] == 'affected' and 'factor 4.0' in result['summary'], result
    # vLLM 0.31 serves 16/8 = 2 where 4 was trained: half, not the 1/8 the newest PEFT rule would say.
    result = judge_dir(tmp_path, path, '0.31.0')
    listed = dict((row['module'], row) for row in result['evidence']['judged'][0]['modules_listed'])
    assert listed['model.layers.1.self_attn.q_proj']['factor'] == 0.5
    # The fold multiplies lora_B by trained / base = 4 / 2.
    assert fold.plan(adapters.load(path)).factors['model.layers.1.self_attn.q_proj'] == 2.0
    # Saved by PEFT 0.14.0 the same patterns trained layers.1 q_proj at 16, which vLLM 0.32 serves.
    path = write_recorded(str(tmp_path / 'b'), recorded('0.14.0', 'rank-hides-alpha'))
    assert judge_dir(tmp_path, path, '0.32.0')['status'] == 'ok'


def test_a_config_that_does_not_tell_the_peft_release(tmp_path):
    record = recorded('0.14.0', 'rank-hides-alpha')
    bare = dict((k, record['adapter_config'][k]) for k in ('r', 'lora_alpha', 'target_modules', 'rank_pattern',
                                                           'alpha_pattern', 'peft_type'))
    path = write_recorded(str(tmp_path / 'bare'), record, bare)
    # Trained at 4 (PEFT 0.6-0.13) or 16 (0.14+), served at 16 by vLLM 0.32: never ok.
    result = judge_dir(tmp_path, path, '0.32.0')
    assert result['status'] == 'at_risk' and 'depends on the PEFT that saved it' in result['summary'], result
    # vLLM 0.31 serves 2: wrong under every PEFT rule.
    assert judge_dir(tmp_path, path, '0.31.0')['status'] == 'affected'
    with pytest.raises(fold.FoldProblem, match='depends on the PEFT that saved the adapter'):
        fold.plan(adapters.load(path))
    assert fold.plan(adapters.load(path), (0, 13, 2)).factors['model.layers.1.self_attn.q_proj'] == 2.0
    # Without rank or alpha patterns every PEFT release trains the same scale: ok.
    plain = dict(bare, rank_pattern={}, alpha_pattern={})
    path = write_recorded(str(tmp_path / 'plain'), recorded('0.14.0', 'plain'), plain)
    assert judge_dir(tmp_path, path, '0.32.0')['status'] == 'ok'


def test_tensor_ranks_narrow_the_peft_rules(tmp_path):
    # PEFT 0.17.1 gave layers.1 q_proj rank 2 through a key only the 0.15+ rule matches; the tensors
    # carry rank 2, which no earlier rule gives, so a bare config is still judged by one rule.
    record = recorded('0.17.1', 'start-anchored')
    bare = dict((k, record['adapter_config'][k]) for k in ('r', 'lora_alpha', 'target_modules', 'rank_pattern'))
    path = write_recorded(str(tmp_path / 'bare'), record, bare)
    adapter = adapters.load(path)
    assert [lora_scale.rule_key(v)[0] for v in adapter.candidates] == ['prefix']
    assert judge_dir(tmp_path, path, '0.32.0')['status'] == 'ok'
    # Saved by PEFT 0.14.0, the module kept rank 8 (scale 2); vLLM 0.32 matches the key and serves 16/2 = 8.
    path = write_recorded(str(tmp_path / 'old'), recorded('0.14.0', 'start-anchored'))
    result = judge_dir(tmp_path, path, '0.32.0')
    assert result['status'] == 'affected' and 'factor 4.0' in result['summary'], result


def test_moe_target_parameters_are_matched_as_module_and_parameter(tmp_path):
    # PEFT 0.17.1: experts.base_layer (gate_up_proj) rank 4 scale 4, experts (down_proj) alpha 64 scale 8;
    # vLLM 0.32.0+ maps the names the same way (peft_helper.py 0.32.0 l.140-146) and serves both right.
    record = recorded('0.17.1', 'moe-params')
    path = write_recorded(str(tmp_path / 'moe'), record)
    assert judge_dir(tmp_path, path, '0.32.0')['status'] == 'ok'
    assert judge_dir(tmp_path, path, '0.31.0')['status'] == 'affected'
    plan = fold.plan(adapters.load(path))
    assert plan.factors['model.layers.0.mlp.experts'] == 4.0 and plan.factors['model.layers.0.mlp.experts.base_layer'] == 2.0


def test_vllm_0_29_packs_rslora_experts_with_alpha_over_r(tmp_path):
    names = ['model.layers.0.mlp.experts.0.w1', 'model.layers.0.mlp.experts.0.w2', 'model.layers.0.self_attn.q_proj']
    path = str(tmp_path / 'rs')
    write_adapter(path, config(use_rslora=True, peft_version='0.21.2'), modules=names)
    result = judge_dir(tmp_path, path, '0.29.0')
    assert result['status'] == 'affected', result
    assert result['evidence']['judged'][0]['modules_off'] == 2
    assert judge_dir(tmp_path, path, '0.30.0')['status'] == 'ok'


def test_refusals_new_in_0_32(tmp_path):
    path = str(tmp_path / 'pissa')
    write_adapter(path, config(peft_version='0.21.2', init_lora_weights='pissa_niter_4'))
    assert judge_dir(tmp_path, path, '0.31.0')['status'] == 'ok'
    result = judge_dir(tmp_path, path, '0.32.0')
    assert result['status'] == 'at_risk' and 'init_lora_weights' in result['summary']
    wide = str(tmp_path / 'wide')
    write_adapter(wide, config(peft_version='0.21.2', rank_pattern={'v_proj': 32}, alpha_pattern={'v_proj': 64}),
                  ranks=dict((m, 32) for m in MODULES if m.endswith('v_proj')))
    result = judge_dir(tmp_path, wide, '0.32.0')
    assert result['status'] == 'at_risk' and 'pattern rank 32' in result['summary'], result


def test_tensor_ranks_no_peft_rule_gives(tmp_path):
    # r 8 in the config, rank 4 in every lora_A: PEFT builds rank-8 layers and refuses these tensors
    # (PEFT 0.21.2 PeftModel.from_pretrained: RuntimeError, size mismatch for ...lora_A.default.weight),
    # so no scale was ever trained with this config.
    path = str(tmp_path / 'edited')
    write_adapter(path, config(peft_version='0.21.2'), ranks=dict((m, 4) for m in MODULES))
    result = judge_dir(tmp_path, path, '0.32.0')
    assert result['status'] == 'at_risk' and 'gives every module the rank its lora_A has' in result['summary']
