# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How each Ollama version resolves ``RENDERER gemma4``, and Ollama's model names.

Read from ollama/ollama (server/renderer_resolution.go, model/renderers/renderer.go,
types/model/name.go); the sources are cited per rule set. The resolved renderer
is never shown by Ollama, so it is computed here with the rules of the version
the host runs, from what the resolver itself reads: the model's names and
``Config.ModelType``, which ``/api/tags`` reports as ``details.parameter_size``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import modelfile as modelfile_reader

SMALL, LARGE, LEGACY = 'gemma4-small', 'gemma4-large', 'gemma4'
SMALL_NAMES = ('e2b', 'e4b')
# What a model really is, to judge the resolved renderer by: Gemma 4 e2b/e4b count about 5e9 and 8e9
# parameters, 12b/26b/31b 11.9e9, 25.8e9 and 30.7e9; the large template is theirs.
LARGE_MODEL_MIN = 10e9

# (first tag, rule set, what changed): the last step whose first tag the host's build has applies.
RULE_STEPS = (
    (None, {'name': 'before 0.21.0', 'resolves': False,
            'source': 'model/renderers/renderer.go @ v0.20.7 l.84: one gemma4 renderer, no gemma4-small/-large'},
     'the gemma4 renderer of v0.20'),
    ('0.21.0-rc0', {'name': '0.21.0 - 0.30.2', 'resolves': True, 'large_names': ('26b', '31b'), 'threshold': 16e9,
                    'source': 'server/renderer_resolution.go @ v0.21.0 l.18, l.34-55 (e585ecd11, '
                              'https://github.com/ollama/ollama/pull/15612), first tag v0.21.0-rc0'},
     'the name and size resolution of PR 15612'),
    ('0.30.3', {'name': '0.30.3 and later', 'resolves': True, 'large_names': ('12b', '26b', '31b'), 'threshold': 12e9,
                'source': 'server/renderer_resolution.go @ v0.33.0-rc2 l.18, l.34-55 (50bbda566, '
                          'https://github.com/ollama/ollama/pull/16457), first tag v0.30.3'},
     'the 12b name and 12e9 threshold of PR 16457'),
)
# The 11.5e9 threshold (commit 122c7dab) has no known release: it applies only from the setting fixed_in.
LOWERED = {'name': 'threshold 11.5e9 (from setting fixed_in)', 'resolves': True, 'large_names': ('12b', '26b', '31b'),
           'threshold': 11.5e9, 'source': 'ollama/ollama server/renderer_resolution.go @ 122c7dab (release not confirmed)'}

# strconv.ParseFloat's syntax: decimal, hexadecimal (with its required p exponent), and Inf/NaN.
_GO_DECIMAL_RE = re.compile(r'^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$')
_GO_HEX_RE = re.compile(r'^[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+$')
_GO_INF_NAN_RE = re.compile(r'^(?:[+-]?(?:inf|infinity)|nan)$', re.IGNORECASE)
_SCALE = {'B': 1e9, 'M': 1e6, 'K': 1e3}


def rule_set(version, fixed_in=None):
    """(rule set, None) for an OllamaVersion, or (None, reason) for a build between two steps."""
    if fixed_in:
        tag = ollama_version.setting_tag(fixed_in)
        if tag is None:
            return None, 'setting fixed_in %r is not an Ollama release or rc (like 0.35.0 or 0.35.0-rc2)' % (fixed_in,)
        has = version.has(tag)
        if has:
            return LOWERED, None
        if has is None:
            return None, ollama_version.undecided(version, tag, 'the 11.5e9 threshold (setting fixed_in)')
    return ollama_version.choose(version, RULE_STEPS)


def parameter_count(text):
    """(count, None) as parseHumanParameterCount computes it (server/renderer_resolution.go @ v0.33.0-rc2
    l.77-101: last character B/M/K in any case, the rest through strconv.ParseFloat, then uint64(value *
    multiplier)); (None, None) when it does not parse, where the resolver falls back to small (l.54);
    (None, reason) when Go's uint64 conversion of the value is implementation-specific."""
    if not isinstance(text, str) or not text:
        return None, None
    unit = text[-1:].upper()
    if unit not in _SCALE:
        return None, None
    number = text[:-1]
    if _GO_INF_NAN_RE.match(number):
        return None, '%r parses in Go as Inf or NaN, whose conversion to a count depends on the platform' % (text[:40],)
    if _GO_DECIMAL_RE.match(number):
        value = float(number)
    elif _GO_HEX_RE.match(number):
        try:
            value = float.fromhex(number)
        except OverflowError:
            return None, None   # ParseFloat answers ErrRange: not ok, so small
    else:
        return None, None
    if value in (float('inf'), float('-inf')):
        return None, None   # ParseFloat answers ErrRange: not ok, so small
    product = value * _SCALE[unit]
    if product < 0 or product >= 2.0 ** 64:
        return None, '%r is outside what a uint64 holds; the conversion depends on the platform' % (text[:40],)
    return int(product), None


def full_name(short):
    """Name.String() for a /api/tags name: registry.ollama.ai/library/ for bare names, the tag always."""
    name = short if ':' in short.rsplit('/', 1)[-1] else short + ':latest'
    parts = name.split('/')
    if len(parts) >= 3 or ('.' in parts[0] and len(parts) > 1):
        return name
    if len(parts) == 2:
        return 'registry.ollama.ai/' + name
    return 'registry.ollama.ai/library/' + name


def stored_directives(modelfile):
    """{'RENDERER': value, 'PARSER': value} from /api/show's modelfile text: the stored values, read as
    Ollama's parser reads them (ollama/modelfile.py), so a TEMPLATE or SYSTEM text holding a line that
    starts with "PARSER" is not taken for one. Text that parser refuses is scanned line by line."""
    try:
        commands = modelfile_reader.parse(str(modelfile or ''))
    except modelfile_reader.ModelfileError:
        commands = None
    if commands is not None:
        return dict((name.upper(), value) for name, value in commands if name in ('renderer', 'parser'))
    found = {}
    for line in str(modelfile or '').splitlines():
        words = line.strip().split(None, 1)
        if len(words) == 2 and words[0].upper() in ('RENDERER', 'PARSER'):
            found[words[0].upper()] = words[1].strip().strip('"')
    return found


def stored_renderer(modelfile):
    return stored_directives(modelfile).get('RENDERER')


def _by_name(name, rules):
    lowered = name.lower()
    if any(n in lowered for n in SMALL_NAMES):
        return SMALL, '%r contains e2b/e4b' % name
    for n in rules['large_names']:
        if n in lowered:
            return LARGE, '%r contains %s' % (name, n)
    return None, None


def resolve(stored, short, model_type, rules):
    """(renderer, how it was decided) for one model under ``rules``, in resolveGemma4Renderer's order
    (server/renderer_resolution.go @ v0.33.0-rc2 l.34-55): short name, full name, Config.ModelType,
    else small. ``model_type`` is /api/tags' details.parameter_size; None when it lists none (Ollama always
    does: api/types.go ModelDetails has no omitempty on it). Renderer None where that leaves the result open
    or Go's own result depends on the platform."""
    if stored != LEGACY:
        return stored, 'explicit RENDERER %s is used as is' % stored
    if not rules['resolves']:
        return LEGACY, 'this version has one gemma4 renderer (no empty thought block when thinking is off)'
    for name in (short, full_name(short)):
        renderer, why = _by_name(name, rules)
        if renderer:
            return renderer, 'name: %s' % why
    if model_type is None:
        return None, '/api/tags lists no details.parameter_size (Config.ModelType) for it'
    count, problem = parameter_count(model_type)
    if problem:
        return None, 'model type %s' % problem
    if count is None:
        return SMALL, ('model type %r is not a parameter count (a safetensors import never sets one); the '
                       'resolver falls back to small' % (model_type,))
    if count >= rules['threshold']:
        return LARGE, 'model type %s >= %.3g' % (model_type, rules['threshold'])
    return SMALL, 'model type %s < %.3g' % (model_type, rules['threshold'])


def real_size(show):
    """(parameter count, where it was read) of the model itself from /api/show, or (None, why not).

    model_info's general.parameter_count is counted from the tensors: GGUF (fs/ggml/gguf.go @ v0.33.0-rc2
    l.251) and safetensors (x/server/show.go l.72). details.parameter_size is the same count rounded
    (GGUF: Config.ModelType; safetensors: recomputed from config.json, server/routes.go l.1429-1437)."""
    info = show.get('model_info')
    count = info.get('general.parameter_count') if isinstance(info, dict) else None
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count, 'model_info general.parameter_count'
    details = show.get('details') if isinstance(show.get('details'), dict) else {}
    size, _problem = parameter_count(details.get('parameter_size'))
    if size:
        return size, '/api/show details.parameter_size %s' % details.get('parameter_size')
    return None, '/api/show has no parameter count (model_info general.parameter_count, details.parameter_size %r)' % (
        details.get('parameter_size'),)


def version_tuple(text):
    return hostio.version_tuple(str(text or ''))
