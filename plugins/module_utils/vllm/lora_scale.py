# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LoRA scale each module was trained with (PEFT's rule, by version) and the one vLLM serves.

PEFT (peft/tuners/lora/model.py and peft/utils/other.py, wheels 0.5.0 to 0.21.2 on PyPI):
- before 0.6.0 there are no rank_pattern/alpha_pattern (huggingface/peft#873);
- 0.6.0 to 0.13.2: one lookup over the rank keys then the alpha keys, regex ``.*\\.<key>$``;
  the key found is used for both, so a matching rank key hides a different alpha key;
- 0.14.0: ``get_pattern_key``, the same regex, looked up separately for rank and alpha;
- 0.15.0 and later: ``(.*\\.)?(<key>)$``, first key in dict order.
When no key matches, the module's full name is looked up as is, so a full-path key works in
every version. Scale = alpha / r, or alpha / sqrt(r) with use_rslora (PEFT 0.8.0 and later).

vLLM (vllm/lora/peft_helper.py, wheels 0.6.4.post1 to 0.33.0):
- up to 0.6.4.post1: alpha / r for every module; use_rslora ignored; patterns ignored;
- 0.6.5 and 0.6.6: rsLoRA adapters refused; patterns ignored;
- 0.7.0 to 0.31.x: alpha / r (or / sqrt(r) with rsLoRA) for every module; patterns dropped
  without a word (``from_dict`` keeps only its own fields);
- 0.32.0 and later: patterns honoured with PEFT's 0.15.0 rule (``get_rank_and_scaling``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

PATTERNS_SINCE = (0, 6, 0)
RSLORA_SINCE = (0, 8, 0)
SEPARATE_LOOKUP_SINCE = (0, 14, 0)
OPTIONAL_PREFIX_SINCE = (0, 15, 0)
VLLM_PATTERNS_SINCE = (0, 32, 0)
VLLM_RSLORA_SINCE = (0, 7, 0)
VLLM_RSLORA_REFUSED = ((0, 6, 5), (0, 7, 0))  # [first, first fixed)
# The rules a pattern key can be read with (the shared lookup of 0.6-0.13 as 0.8, the first with
# rsLoRA); the fold must work under each of them.
PEFT_RULES = ((0, 8, 0), (0, 14, 0), (0, 15, 0))


class AdapterConfig(object):
    """The fields of adapter_config.json the scales depend on, checked."""

    def __init__(self, r, alpha, use_rslora, rank_pattern, alpha_pattern):
        self.r = r
        self.alpha = alpha
        self.use_rslora = use_rslora
        self.rank_pattern = rank_pattern
        self.alpha_pattern = alpha_pattern


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def parse_config(data):
    """(AdapterConfig, None) or (None, what is wrong)."""
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
        for key in value:
            try:
                re.compile(key)
            except re.error as exc:
                return None, '%s key %r is not a regular expression PEFT can use: %s' % (field, key, exc)
        patterns.append(value)
    return AdapterConfig(r, float(alpha), bool(data.get('use_rslora')), patterns[0], patterns[1]), None


def _suffix(key, name):
    return re.match(r'.*\.%s$' % key, name) is not None


def _optional_prefix(key, name):
    return re.match(r'(.*\.)?(%s)$' % key, name) is not None


def peft_rank_alpha(config, name, version):
    """(r, alpha) PEFT ``version`` gives module ``name``."""
    if version < PATTERNS_SINCE or not (config.rank_pattern or config.alpha_pattern):
        return config.r, config.alpha
    if version < SEPARATE_LOOKUP_SINCE:
        keys = list(config.rank_pattern) + list(config.alpha_pattern)
        found = next((k for k in keys if _suffix(k, name)), name)
        return config.rank_pattern.get(found, config.r), config.alpha_pattern.get(found, config.alpha)
    match = _suffix if version < OPTIONAL_PREFIX_SINCE else _optional_prefix
    rank_key = next((k for k in config.rank_pattern if match(k, name)), name)
    alpha_key = next((k for k in config.alpha_pattern if match(k, name)), name)
    return config.rank_pattern.get(rank_key, config.r), config.alpha_pattern.get(alpha_key, config.alpha)


def _scale(alpha, rank, rslora):
    return alpha / math.sqrt(rank) if rslora else alpha / rank


def peft_scale(config, name, version):
    """(rank, scale) the adapter was trained with under PEFT ``version``."""
    rank, alpha = peft_rank_alpha(config, name, version)
    return rank, _scale(alpha, rank, config.use_rslora and version >= RSLORA_SINCE)


def vllm_scale(config, name, version):
    """(scale, None) vLLM ``version`` serves module ``name`` with, or (None, why it refuses the adapter)."""
    if VLLM_RSLORA_REFUSED[0] <= version < VLLM_RSLORA_REFUSED[1] and config.use_rslora:
        return None, 'vLLM %s refuses rsLoRA adapters ("vLLM does not yet support RSLoRA")' % dotted(version)
    rslora = config.use_rslora and version >= VLLM_RSLORA_SINCE
    if version < VLLM_PATTERNS_SINCE or not (config.rank_pattern or config.alpha_pattern):
        return _scale(config.alpha, config.r, rslora), None
    rank = next((v for k, v in config.rank_pattern.items() if _optional_prefix(k, name)), config.r)
    alpha = next((v for k, v in config.alpha_pattern.items() if _optional_prefix(k, name)), config.alpha)
    return _scale(alpha, rank, rslora), None


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
