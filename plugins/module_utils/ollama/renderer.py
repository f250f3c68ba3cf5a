# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How each Ollama version resolves ``RENDERER gemma4``, and Ollama's model names.

Read from ollama/ollama (server/renderer_resolution.go, model/renderers/renderer.go,
types/model/name.go); the sources are cited per rule set. The resolved renderer
is never shown by Ollama, so it is computed here with the rules of the version
the host runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

SMALL, LARGE, LEGACY = 'gemma4-small', 'gemma4-large', 'gemma4'
SMALL_NAMES = ('e2b', 'e4b')
# A model this large was trained with the large template; e2b/e4b report far less.
LARGE_MODEL_MIN = 10e9

# (first version, rule set); the last one whose first version <= the host's applies.
RULE_SETS = (
    ((0, 0, 0), {'name': 'before 0.21.0', 'resolves': False,
                 'source': 'model/renderers/renderer.go @ v0.20.7: one gemma4 renderer, no gemma4-small/-large'}),
    ((0, 21, 0), {'name': '0.21.0 - 0.30.2', 'resolves': True, 'large_names': ('26b', '31b'), 'threshold': 16e9,
                  'source': 'e585ecd11 (https://github.com/ollama/ollama/pull/15612), first tag v0.21.0'}),
    ((0, 30, 3), {'name': '0.30.3 and later', 'resolves': True, 'large_names': ('12b', '26b', '31b'), 'threshold': 12e9,
                  'source': '50bbda566 (https://github.com/ollama/ollama/pull/16457), tag v0.30.3'}),
)
# The 11.5e9 threshold (commit 122c7dab) has no known release: it applies only from the setting fixed_in.
LOWERED = {'name': 'threshold 11.5e9 (from setting fixed_in)', 'resolves': True, 'large_names': ('12b', '26b', '31b'),
           'threshold': 11.5e9, 'source': 'ollama/ollama server/renderer_resolution.go @ 122c7dab (release not confirmed)'}

_COUNT_RE = re.compile(r'^([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*([BMK])$', re.IGNORECASE)
_SCALE = {'B': 1e9, 'M': 1e6, 'K': 1e3}


def rule_set(version, fixed_in=None):
    """The rule set of Ollama ``version`` (a tuple); None when the version is unknown."""
    if version is None:
        return None
    if fixed_in is not None and version >= fixed_in:
        return LOWERED
    chosen = None
    for first, rules in RULE_SETS:
        if version >= first:
            chosen = rules
    return chosen


def parameter_count(text):
    """'11.9B' -> 11.9e9, like parseHumanParameterCount (suffix B, M or K); None when it does not parse."""
    match = _COUNT_RE.match(str(text or '').strip())
    if not match:
        return None
    return float(match.group(1)) * _SCALE[match.group(2).upper()]


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
    """{'RENDERER': value, 'PARSER': value} from /api/show's modelfile text: the stored values."""
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
    """(renderer, how it was decided) for one model under ``rules``; renderer None when it cannot be told."""
    if stored != LEGACY:
        return stored, 'explicit RENDERER %s is used as is' % stored
    if not rules['resolves']:
        return LEGACY, 'this version has one gemma4 renderer (no empty thought block when thinking is off)'
    for name in (short, full_name(short)):
        renderer, why = _by_name(name, rules)
        if renderer:
            return renderer, 'name: %s' % why
    count = parameter_count(model_type)
    if count is None:
        return None, 'model type %r does not parse as a parameter count' % (model_type,)
    if count >= rules['threshold']:
        return LARGE, 'parameter count %s >= %.3g' % (model_type, rules['threshold'])
    return SMALL, 'parameter count %s < %.3g' % (model_type, rules['threshold'])


def version_tuple(text):
    return hostio.version_tuple(str(text or ''))
