"""The lora_cache probe's judgement on recorded runs, and the --no-cache-prompt edit.

The numbers in these runs are the ones the real server gave (tests/e2e measures it live):
cross-scale distances 0.14 to 0.32, same-scale 0 to 0.025.
"""
import math

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe


def run(cache_n, distance, disagrees=None, scale_effect=0.38):
    cross = {'cache_n': cache_n, 'distance': distance,
             'disagrees': distance > lora_probe.DISAGREE_DISTANCE if disagrees is None else disagrees,
             'answer': 'a', 'reference': 'b'}
    if scale_effect is not None:
        cross['scale_effect'] = scale_effect
        cross['informative'] = scale_effect > lora_probe.DISAGREE_DISTANCE
    return cross


def runs(cross, control):
    return [{'cross': c, 'control': k} for c, k in zip(cross, control)]


def test_contaminated_cross_runs_against_a_quiet_control_are_affected():
    result = lora_probe.judge('global_slot', runs([run(20, 0.27), run(18, 0.31), run(19, 0.24)],
                                                  [run(19, 0.02, scale_effect=None)] * 3), 3, 0)
    assert result['verdict'] == 'affected'
    assert result['cross_disagreed'] == 3 and result['control_disagreed'] == 0
    assert result['cross_cache_n'] == [20, 18, 19]


def test_a_noisy_control_makes_the_same_cross_runs_inconclusive_or_ok():
    noisy = [run(19, 0.2, scale_effect=None)] * 3
    # As noisy as the cross runs: nothing can be told, and nothing is called ok.
    noise = lora_probe.judge('global_slot', runs([run(20, 0.27)] * 3, noisy), 3, 0)
    assert noise['verdict'] == 'unknown' and 'hide a mix-up' in noise['reason']
    clean = lora_probe.judge('global_slot', runs([run(20, 0.01)] * 3, noisy), 3, 0)
    assert clean['verdict'] == 'ok' and clean['reason'].startswith('KV was reused across the scale change, but 0 of 3')
    some = [run(19, 0.2, scale_effect=None), run(19, 0.0, scale_effect=None), run(19, 0.0, scale_effect=None)]
    result = lora_probe.judge('global_slot', runs([run(20, 0.27)] * 3, some), 3, 0)
    assert result['verdict'] == 'affected'  # 3 against 1: still a margin of 2
    one_off = lora_probe.judge('global_slot', runs([run(20, 0.27), run(20, 0.0), run(20, 0.01)],
                                                   [run(19, 0.0, scale_effect=None)] * 3), 3, 0)
    assert one_off['verdict'] == 'unknown' and 'probe_markers' in one_off['reason']


def test_a_path_that_reused_nothing_is_ok_and_says_whether_the_control_did():
    result = lora_probe.judge('per_request_slot', runs([run(0, 0.0)], [run(19, 0.0, scale_effect=None)]), 3, 0)
    assert result['verdict'] == 'ok' and 'the same-scale control reused 19 tokens' in result['reason']
    off = lora_probe.judge('per_request_restore', runs([run(1, 0.0)], [run(1, 0.0, scale_effect=None)]), 3, 1)
    assert off['verdict'] == 'ok' and 'the path is off' in off['reason']


def test_an_adapter_that_changes_nothing_cannot_show_a_mix_up():
    result = lora_probe.judge('global_slot', runs([run(20, 0.0, scale_effect=0.0)] * 3,
                                                  [run(20, 0.0, scale_effect=None)] * 3), 3, 0)
    assert result['verdict'] == 'unknown' and 'does not change' in result['reason']


def test_the_margin_grows_with_the_markers():
    cross = [run(20, 0.3)] * 6 + [run(20, 0.0)] * 4
    control = [run(20, 0.0, scale_effect=None)] * 10
    assert lora_probe.judge('global_slot', runs(cross, control), 10, 0)['verdict'] == 'unknown'
    cross = [run(20, 0.3)] * 7 + [run(20, 0.0)] * 3
    assert lora_probe.judge('global_slot', runs(cross, control), 10, 0)['verdict'] == 'affected'


def reply(items):
    return {'completion_probabilities': [{'top_logprobs': items}]}


def test_first_token_distribution_reads_both_formats_and_refuses_nonsense():
    new = lora_probe.first_token_distribution(reply([{'token': ' a', 'logprob': math.log(0.5)},
                                                     {'token': ' b', 'logprob': math.log(0.25)}]))
    assert new == pytest.approx({' a': 0.5, ' b': 0.25})
    old = lora_probe.first_token_distribution({'completion_probabilities': [{'probs': [{'tok_str': ' a', 'prob': 0.9}]}]})
    assert old == {' a': 0.9}
    for bad in ([{'token': ' a', 'logprob': 'NaN'}], [{'token': ' a', 'logprob': 3.0}], [{'token': 5, 'logprob': -1.0}],
                ['x'], []):
        assert lora_probe.first_token_distribution(reply(bad)) is None
    assert lora_probe.first_token_distribution({'completion_probabilities': 'no'}) is None
    assert lora_probe.first_token_distribution(None) is None


def test_distance_bounds_tokens_outside_the_other_list():
    same = {' a': 0.6, ' b': 0.3}
    assert lora_probe.distance(same, dict(same)) == 0
    shifted = lora_probe.distance({' a': 0.6, ' b': 0.3}, {' c': 0.6, ' a': 0.3})
    # ' b' missing on the right counts as 0.3 there (its smallest), ' c' on the left as 0.3.
    assert shifted == pytest.approx(0.5 * (0.3 + 0.0 + 0.3))
    value, disagrees = lora_probe.compare({'distribution': None, 'content': 'x'}, {'distribution': same, 'content': 'y'})
    assert value is None and disagrees is True
