# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LoRA scale each module was trained with (PEFT's rule, by version), the PEFT releases that can
have saved an adapter, and the scale vLLM serves (by version).

PEFT (peft/tuners/lora/model.py ``_create_and_replace`` and peft/utils/other.py ``get_pattern_key``,
every PyPI wheel 0.6.0 to 0.21.2):
- before 0.6.0 there are no rank_pattern/alpha_pattern (huggingface/peft#873);
- 0.6.0 to 0.13.2: one lookup over the rank keys then the alpha keys, regex ``.*\\.<key>$``;
  the key found is used for both, so a matching rank key hides a different alpha key;
- 0.14.0: ``get_pattern_key``, the same regex, looked up separately for rank and alpha;
- 0.15.0 and later: ``(.*\\.)?(<key>)$``, first key in dict order.
When no key matches, the module's full name is looked up as is, so a full-path key works in
every version. Keys are matched with re.match as PEFT matches them (peft/utils/other.py 0.21.2
l.1524-1532 ``re.match(rf"(.*\\.)?({key})$", key_to_match)``; peft/tuners/lora/model.py 0.13.0
l.188-189 ``re.match(rf".*\\.{key}$", current_key)``), in this process, each match within the time
left of MATCH_SECONDS per adapter config (KeyMatcher): a key PEFT accepts is judged as PEFT judges
it, and a key whose matching would backtrack without end (``(a+)+$`` against a long run of ``a``)
is named instead of hanging the audit.
Scale = alpha / r, or alpha / sqrt(r) with use_rslora (PEFT 0.8.0 and later).
From 0.17.0, ``target_parameters`` wraps a module's parameters (fused MoE experts); the patterns
are matched against ``<module>.<parameter>`` (tuners_utils.py ``_inject_parameters``:
``key = f"{module_name}.{param_name}"``, passed as ``current_key``; 0.17.0 l.735-761).

vLLM (vllm/lora/peft_helper.py, lora_weights.py; wheels 0.6.4.post1 to 0.33.0):
- up to 0.6.4.post1: alpha / r for every module; use_rslora ignored; patterns ignored;
- 0.6.5 and 0.6.6: rsLoRA adapters refused; patterns ignored;
- 0.7.0 to 0.31.x: alpha / r (or / sqrt(r) with rsLoRA) for every module; patterns dropped
  without a word (``from_dict`` keeps only its own fields); except that 0.28.0's and 0.29.0's
  ``pack_moe`` and ``pack_moe_stacked`` scale MoE expert LoRAs with ``lora_alpha / rank`` whatever
  use_rslora says (0.29.0 lora_weights.py l.204-205 and l.253; 0.30.0 uses the adapter's scaling,
  l.204-206 and l.254);
- 0.32.0 and later: patterns honoured with PEFT's 0.15.0 rule (``get_rank_and_scaling``,
  peft_helper.py l.122-153 in 0.32.0 and 0.33.0), fused MoE experts matched as
  ``experts.base_layer`` -> ``experts.gate_up_proj`` and ``experts`` -> ``experts.down_proj``
  (l.140-146).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.homelab.postmortem.plugins.module_utils.vllm.key_matcher import MATCH_SECONDS, KeyMatcher

PATTERNS_SINCE = (0, 6, 0)
RSLORA_SINCE = (0, 8, 0)
SEPARATE_LOOKUP_SINCE = (0, 14, 0)
OPTIONAL_PREFIX_SINCE = (0, 15, 0)
VLLM_PATTERNS_SINCE = (0, 32, 0)
VLLM_RSLORA_SINCE = (0, 7, 0)
VLLM_RSLORA_REFUSED = ((0, 6, 5), (0, 7, 0))  # [first, first fixed)
# 0.28.0 and 0.29.0 pack expert LoRAs with lora_alpha / rank (lora_weights.py l.205 and l.253 in both);
# 0.30.0 fixed it. Releases before 0.28.0 were not read for this.
VLLM_MOE_RSLORA_IGNORED = ((0, 28, 0), (0, 30, 0))
# validate_legal as read in the 0.28.0 to 0.33.0 wheels; older releases are not judged on it.
VLLM_REFUSALS_READ_SINCE = (0, 28, 0)
VLLM_CLASSIFIER_MODULES_SINCE = (0, 30, 0)
VLLM_NEW_REFUSALS_SINCE = (0, 32, 0)
VLLM_DEFAULT_MAX_LORA_RANK = 16  # vllm/config/lora.py max_lora_rank, 0.29.0 to 0.33.0
# peft_helper.py _init_is_supported (0.32.0 l.89-101): inits that only set the first weights.
VLLM_SUPPORTED_INITS = ('gaussian', 'eva', 'orthogonal', 'mica', 'lora_ga')

# Every PEFT release on PyPI from the one that added the patterns.
PEFT_RELEASES = (
    (0, 6, 0), (0, 6, 1), (0, 6, 2), (0, 7, 0), (0, 7, 1), (0, 8, 0), (0, 8, 1), (0, 8, 2), (0, 9, 0),
    (0, 10, 0), (0, 11, 0), (0, 11, 1), (0, 12, 0), (0, 13, 0), (0, 13, 1), (0, 13, 2), (0, 14, 0),
    (0, 15, 0), (0, 15, 1), (0, 15, 2), (0, 16, 0), (0, 17, 0), (0, 17, 1), (0, 18, 0), (0, 18, 1),
    (0, 19, 0), (0, 19, 1), (0, 20, 0), (0, 21, 0), (0, 21, 1), (0, 21, 2),
)
NEWEST_PEFT = PEFT_RELEASES[-1]
# The dataclass fields of LoraConfig and its bases (peft/tuners/lora/config.py, peft/config.py) in
# each wheel. PeftConfigMixin.to_dict() is asdict(self), so a config PEFT saved holds every field
# of its release (but runtime_config, 0.12.0 and later, which LoraConfig.to_dict pops: 0.13.2
# lora/config.py l.322): a field tells the release is at least the one that added it, and a missing
# field that every release since some version writes tells it is older than that version. Checked
# against the adapter_config.json PEFT 0.8.2, 0.13.2, 0.14.0, 0.15.2, 0.17.1 and 0.21.2 wrote
# (tests/unit/fixtures/peft/peft_scales.json).
PEFT_BASE_FIELDS = (
    'alpha_pattern', 'auto_mapping', 'base_model_name_or_path', 'bias', 'fan_in_fan_out', 'inference_mode',
    'init_lora_weights', 'layers_pattern', 'layers_to_transform', 'lora_alpha', 'lora_dropout',
    'modules_to_save', 'peft_type', 'r', 'rank_pattern', 'revision', 'target_modules', 'task_type',
)
PEFT_FIELDS_SINCE = {
    'loftq_config': (0, 7, 0), 'megatron_config': (0, 7, 0), 'megatron_core': (0, 7, 0),
    'use_rslora': (0, 8, 0), 'use_dora': (0, 9, 0), 'layer_replication': (0, 10, 0),
    'eva_config': (0, 14, 0), 'exclude_modules': (0, 14, 0), 'lora_bias': (0, 14, 0),
    'corda_config': (0, 15, 0), 'trainable_token_indices': (0, 15, 0),
    'qalora_group_size': (0, 16, 0), 'use_qalora': (0, 16, 0),
    'target_parameters': (0, 17, 0),
    'alora_invocation_tokens': (0, 18, 0), 'arrow_config': (0, 18, 0), 'ensure_weight_tying': (0, 18, 0),
    'peft_version': (0, 18, 0),
    'lora_ga_config': (0, 19, 0), 'use_bdlora': (0, 19, 0),
    'monteclora_config': (0, 20, 0), 'velora_config': (0, 20, 0),
    'kasa_config': (0, 21, 0),
}


class AdapterConfig(object):
    """The fields of adapter_config.json the scales depend on, checked."""

    def __init__(self, r, alpha, use_rslora, rank_pattern, alpha_pattern, target_parameters=(), seconds=MATCH_SECONDS):
        self.r = r
        self.alpha = alpha
        self.use_rslora = use_rslora
        self.rank_pattern = rank_pattern
        self.alpha_pattern = alpha_pattern
        self.target_parameters = tuple(target_parameters or ())
        self.matcher = KeyMatcher(rank_pattern, alpha_pattern, seconds)


class PeftRange(object):
    """The PEFT releases that can have saved an adapter: ``releases`` (sorted), and why."""

    def __init__(self, releases, recorded, why):
        self.releases = releases
        self.recorded = recorded
        self.why = why

    @property
    def first(self):
        return self.releases[0]

    @property
    def last(self):
        return self.releases[-1]

    def text(self):
        if self.first == self.last:
            return dotted(self.first)
        return '%s to %s' % (dotted(self.first), dotted(self.last))

    def candidates(self):
        """One release per distinct scale rule in the range (the first release of each)."""
        seen, found = set(), []
        for release in self.releases:
            key = rule_key(release)
            if key not in seen:
                seen.add(key)
                found.append(release)
        return found


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_config(data, seconds=MATCH_SECONDS):
    """(AdapterConfig, None) or (None, what is wrong). ``seconds``: the time all pattern matching of
    this config may take (KeyMatcher)."""
    if not isinstance(data, dict):
        return None, 'adapter_config.json is not a JSON object'
    r, alpha = data.get('r'), data.get('lora_alpha')
    if not (isinstance(r, int) and not isinstance(r, bool) and r > 0):
        return None, 'r is %r, not a positive whole number' % (r,)
    if not _number(alpha):
        return None, 'lora_alpha is %r, not a number' % (alpha,)
    patterns = []
    for field, check in (('rank_pattern', lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0),
                         ('alpha_pattern', _number)):
        value = data.get(field) or {}
        if not isinstance(value, dict) or not all(isinstance(k, str) and check(v) for k, v in value.items()):
            return None, '%s is not a map of module patterns to %s' % (
                field, 'positive whole numbers' if field == 'rank_pattern' else 'numbers')
        patterns.append(value)
    target_parameters = data.get('target_parameters') or []
    if not isinstance(target_parameters, list) or not all(isinstance(t, str) for t in target_parameters):
        return None, 'target_parameters is not a list of parameter names'
    config = AdapterConfig(r, float(alpha), bool(data.get('use_rslora')), patterns[0], patterns[1],
                           target_parameters, seconds)
    problem = config.matcher.compile_all()
    if problem:
        return None, problem
    return config, None


def infer_peft_range(data, recorded_version):
    """The PeftRange of the releases that can have saved ``data`` (adapter_config.json as a dict).

    ``recorded_version`` is the parsed ``peft_version`` (PEFT 0.18.0 and later write it), or None.
    """
    if recorded_version is not None:
        return PeftRange([recorded_version], True, 'peft_version %s in adapter_config.json' % dotted(recorded_version))
    present = [f for f in PEFT_FIELDS_SINCE if f in data]
    first = max([PEFT_FIELDS_SINCE[f] for f in present] or [PATTERNS_SINCE])
    why = ['fields of PEFT %s and later: %s' % (dotted(first), ', '.join(sorted(
        f for f in present if PEFT_FIELDS_SINCE[f] == first))) if present else 'no field newer than PEFT 0.6.0']
    before = None
    if all(f in data for f in PEFT_BASE_FIELDS):
        missing = sorted((PEFT_FIELDS_SINCE[f], f) for f in PEFT_FIELDS_SINCE if f not in data)
        if missing and missing[0][0] > first:
            before = missing[0][0]
            why.append('no %s, which every PEFT from %s writes' % (missing[0][1], dotted(before)))
        elif missing:
            why.append('fields of different PEFT releases (%s missing), so not saved as PEFT wrote it' % missing[0][1])
    else:
        why.append('not every field PEFT 0.6.0 writes is there, so missing fields say nothing')
    releases = [v for v in PEFT_RELEASES if v >= first and (before is None or v < before)]
    if not releases:
        releases = [first]
    return PeftRange(releases, False, '; '.join(why))


def rule_key(version):
    """What decides a module's scale in PEFT ``version``: the lookup rule and rsLoRA."""
    if version < PATTERNS_SINCE:
        lookup = 'none'
    elif version < SEPARATE_LOOKUP_SINCE:
        lookup = 'shared'
    elif version < OPTIONAL_PREFIX_SINCE:
        lookup = 'separate'
    else:
        lookup = 'prefix'
    return lookup, version >= RSLORA_SINCE


def rule_name(version):
    lookup = rule_key(version)[0]
    return {
        'none': 'PEFT before 0.6: no patterns',
        'shared': 'PEFT 0.6-0.13: one lookup over rank then alpha keys, .*\\.<key>$',
        'separate': 'PEFT 0.14: separate lookups, .*\\.<key>$',
        'prefix': 'PEFT 0.15+: separate lookups, (.*\\.)?(<key>)$',
    }[lookup]


def _suffix(config, key, name):
    return config.matcher.matches('suffix', key, name)


def _optional_prefix(config, key, name):
    return config.matcher.matches('prefix', key, name)


def peft_match_names(config, module):
    """The names PEFT can have matched the patterns against for the saved module ``module``.

    One name for an ordinary module. For a parameter wrapped through ``target_parameters``
    (saved as ``<module>`` and, for a second parameter of the same module, ``<module>.base_layer``
    for the one wrapped first) the name is ``<module>.<parameter>``. PEFT wraps parameters in the
    order the model registers them, which the adapter does not record; for fused experts with
    gate_up_proj and down_proj that order is gate_up_proj first (what vLLM assumes, peft_helper.py
    0.32.0 l.140-146). For other pairs every order is returned.
    """
    if not config.target_parameters:
        return [module]
    base, depth = module, 0
    while base.endswith('.base_layer'):
        base, depth = base[:-len('.base_layer')], depth + 1
    params = []
    for target in config.target_parameters:
        param = target.rpartition('.')[2]
        key = '%s.%s' % (base, param)
        if (key == target or key.endswith('.' + target)) and param not in params:
            params.append(param)
    if not params:
        return [module]
    if len(params) == 1:
        return ['%s.%s' % (base, params[0])]
    if sorted(params) == ['down_proj', 'gate_up_proj'] and depth <= 1:
        return ['%s.%s' % (base, 'gate_up_proj' if depth == 1 else 'down_proj')]
    return ['%s.%s' % (base, p) for p in params]


def peft_rank_alpha(config, name, version):
    """(r, alpha) PEFT ``version`` gives the module it matched as ``name``."""
    if version < PATTERNS_SINCE or not (config.rank_pattern or config.alpha_pattern):
        return config.r, config.alpha
    if version < SEPARATE_LOOKUP_SINCE:
        keys = list(config.rank_pattern) + list(config.alpha_pattern)
        found = next((k for k in keys if _suffix(config, k, name)), name)
        return config.rank_pattern.get(found, config.r), config.alpha_pattern.get(found, config.alpha)
    match = _suffix if version < OPTIONAL_PREFIX_SINCE else _optional_prefix
    rank_key = next((k for k in config.rank_pattern if match(config, k, name)), name)
    alpha_key = next((k for k in config.alpha_pattern if match(config, k, name)), name)
    return config.rank_pattern.get(rank_key, config.r), config.alpha_pattern.get(alpha_key, config.alpha)


def _scale(alpha, rank, rslora):
    return alpha / math.sqrt(rank) if rslora else alpha / rank


def peft_scale(config, name, version):
    """(rank, scale) PEFT ``version`` trains the module it matched as ``name`` with."""
    rank, alpha = peft_rank_alpha(config, name, version)
    return rank, _scale(alpha, rank, config.use_rslora and version >= RSLORA_SINCE)


def peft_module_scales(config, module, version):
    """{(rank, scale)} PEFT ``version`` can have trained saved module ``module`` with (one unless
    the wrapping order of its parameters is unknown)."""
    return set(peft_scale(config, name, version) for name in peft_match_names(config, module))


def is_expert(module):
    """A MoE expert LoRA: per-expert modules (``experts.<n>.w1``) or fused ones (``experts``)."""
    return '.experts.' in module or module.endswith('.experts')


def vllm_pattern_name(module):
    """The name vLLM 0.32.0+ matches the patterns against (peft_helper.py 0.32.0 l.140-146)."""
    if module.endswith('.experts.base_layer'):
        return module[:-len('.base_layer')] + '.gate_up_proj'
    if module.endswith('.experts'):
        return module + '.down_proj'
    return module


def vllm_scale(config, module, version):
    """The scale vLLM ``version`` serves saved module ``module`` with."""
    rslora = config.use_rslora and version >= VLLM_RSLORA_SINCE
    if version < VLLM_PATTERNS_SINCE or not (config.rank_pattern or config.alpha_pattern):
        if rslora and is_expert(module) and VLLM_MOE_RSLORA_IGNORED[0] <= version < VLLM_MOE_RSLORA_IGNORED[1]:
            return config.alpha / config.r
        return _scale(config.alpha, config.r, rslora)
    name = vllm_pattern_name(module)
    rank = next((v for k, v in config.rank_pattern.items() if _optional_prefix(config, k, name)), config.r)
    alpha = next((v for k, v in config.alpha_pattern.items() if _optional_prefix(config, k, name)), config.alpha)
    return _scale(alpha, rank, rslora)


def vllm_refusals(data, config, version, max_lora_rank=None):
    """Why vLLM ``version`` refuses to load the adapter (PEFTHelper.validate_legal), [] when it loads it.

    ``max_lora_rank`` is the engine's --max-lora-rank; None when no engine names the adapter (then
    only a pattern rank above both r and the default is reported: one that 0.31 would have taken).
    """
    reasons = []
    if VLLM_RSLORA_REFUSED[0] <= version < VLLM_RSLORA_REFUSED[1] and config.use_rslora:
        reasons.append('vLLM %s refuses rsLoRA adapters ("vLLM does not yet support RSLoRA")' % dotted(version))
    if version < VLLM_REFUSALS_READ_SINCE:
        return reasons
    # peft_helper.py _validate_features and validate_legal (0.29.0 l.41-50 and l.118-131; 0.32.0 l.53-87 and l.188-202)
    modules_to_save = data.get('modules_to_save') or []
    if modules_to_save:
        allowed = ('classifier', 'score') if version >= VLLM_CLASSIFIER_MODULES_SINCE else ()
        others = [m for m in modules_to_save if m not in allowed] if isinstance(modules_to_save, list) else [modules_to_save]
        if others:
            reasons.append('modules_to_save %s is refused' % (others,))
    if data.get('use_dora'):
        reasons.append('DoRA (use_dora) is refused')
    if data.get('bias', 'none') not in ('none', None):
        reasons.append('bias %r is refused' % (data.get('bias'),))
    largest = max([config.r] + list(config.rank_pattern.values())) if version >= VLLM_NEW_REFUSALS_SINCE else config.r
    if max_lora_rank is not None and largest > max_lora_rank:
        reasons.append('LoRA rank %d is above --max-lora-rank %d' % (largest, max_lora_rank))
    elif max_lora_rank is None and largest > max(config.r, VLLM_DEFAULT_MAX_LORA_RANK):
        reasons.append('pattern rank %d is above r and the default --max-lora-rank %d (vLLM 0.32.0 and later check '
                       'the largest pattern rank)' % (largest, VLLM_DEFAULT_MAX_LORA_RANK))
    if version >= VLLM_NEW_REFUSALS_SINCE:
        init = data.get('init_lora_weights', True)
        if isinstance(init, str) and init.lower() not in VLLM_SUPPORTED_INITS:
            reasons.append('init_lora_weights %r (PiSSA, OLoRA, CorDA, LoftQ change the base weights) is refused' % init)
        for field, what in (('lora_bias', 'LoRA bias'), ('alora_invocation_tokens', 'aLoRA'),
                            ('layer_replication', 'layer_replication'), ('use_bdlora', 'BD-LoRA'),
                            ('use_qalora', 'QALoRA')):
            if data.get(field):
                reasons.append('%s (%s) is refused' % (what, field))
    return reasons


def dotted(version):
    return '.'.join(str(v) for v in version)


def module_name(tensor_name):
    """(module, part) for a PEFT tensor key, or (None, None) when it is not a LoRA weight.

    ``base_model.model.<module>.lora_A.weight`` / ``.lora_B.weight``, and
    ``base_model.model.<module>.lora_embedding_A`` / ``_B`` for embeddings.
    """
    name = tensor_name[len('base_model.model.'):] if tensor_name.startswith('base_model.model.') else tensor_name
    for suffix, part in (('.lora_A.weight', 'A'), ('.lora_B.weight', 'B'),
                         ('.lora_embedding_A', 'A'), ('.lora_embedding_B', 'B')):
        if name.endswith(suffix):
            return name[:-len(suffix)], part
    return None, None
