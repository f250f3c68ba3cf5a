# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_gemma4_renderer: a Gemma 4 model of 12B or more gets the small model's prompt template.

Models carry ``RENDERER gemma4``, which Ollama resolves per request to
gemma4-small or gemma4-large: by e2b/e4b or 12b/26b/31b in the model's name,
else by its parameter count against a threshold. A copy (``ollama cp``, ``FROM``)
without a size in its name falls back to the count, and the 12B reports 11.9B,
under the 12e9 threshold of 0.30.3 and later: the small template, without the
empty thought block the model was trained with. Nothing shows the resolved
renderer, so this computes it with the rules of the version the host runs. It
reads /api/version, /api/tags and /api/show; it loads no model.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4

ID = 'ollama_gemma4_renderer'
GROUP = 'ollama'
APPLIES = {'image': False, 'binary': None, 'root': None}
TITLE = 'Ollama resolves a Gemma 4 copy of 12B or more to the small prompt template'
REFERENCES = [
    'https://github.com/ollama/ollama/pull/15612 (e585ecd11: name and 16e9 threshold, first in v0.21.0)',
    'https://github.com/ollama/ollama/pull/16457 (50bbda566: 12b and the 12e9 threshold, v0.30.3)',
    'ollama/ollama server/renderer_resolution.go @ 122c7dab (11.5e9; release not confirmed)',
    'ollama/ollama#18824 (the write-up\'s report; not found upstream)',
]
REMEDIATION = make_remediation(
    role='homelab.postmortem.ollama_gemma4_renderer',
    module='homelab.postmortem.ollama_gemma4_renderer_fix',
    manual=[
        'Pin the renderer: re-create the model with RENDERER gemma4-large (and PARSER gemma4) in its Modelfile, '
        'or POST /api/create with "renderer": "gemma4-large"; needs Ollama 0.21.0 or later.',
        'Or give the copy a name with its size (assistant:12b): the name check runs before the count.',
        'On Ollama before 0.21.0 there is nothing to pin: upgrade to 0.21.0 or later.',
    ],
    disruption='none',
)
PROBES = ()
SETTINGS = dict(ollama_api.COMMON_SETTINGS, **{
    'fixed_in': {'type': 'version', 'default': None,
                 'description': 'First Ollama version with the 11.5e9 threshold (commit 122c7dab); unset while no release is confirmed.'},
})

_SELF = sys.modules[__name__]


def _model_instance(server, short, rules):
    name = 'model %s' % short
    version_text = server.version_text
    try:
        show = server.show(short)
    except loopback_http.ProbeFailure as exc:
        return instance(name, exc.finding_status, '%s: /api/show failed: %s' % (name, exc), {'model': short})
    if show is None:
        return instance(name, 'ok', '%s was removed while the list was read.' % name, {'model': short})
    details = show.get('details') if isinstance(show.get('details'), dict) else {}
    stored = gemma4.stored_renderer(show.get('modelfile'))
    families = [str(f) for f in (details.get('families') or []) if f] + [str(details.get('family') or '')]
    evidence = {'model': short, 'full_name': gemma4.full_name(short), 'stored_renderer': stored,
                'parameter_size': details.get('parameter_size'), 'ollama_version': version_text,
                'rule_set': rules['name'], 'rule_source': rules['source']}
    if stored is None or not stored.startswith('gemma4'):
        if 'gemma4' in ' '.join(families).lower():
            return instance(name, 'ok', '%s is a Gemma 4 model with renderer %s, used as is.' % (name, stored or 'none'),
                            evidence)
        return instance(name, 'not_applicable', '%s has no gemma4 renderer.' % name, evidence)
    resolved, how = gemma4.resolve(stored, short, details.get('parameter_size'), rules)
    evidence.update(resolved_renderer=resolved, decided_by=how)
    count = gemma4.parameter_count(details.get('parameter_size'))
    if resolved is None:
        return instance(name, 'unknown', '%s: %s; Ollama would fall back to the small template.' % (name, how), evidence)
    if not rules['resolves'] and stored in (gemma4.SMALL, gemma4.LARGE):
        return instance(name, 'affected', '%s names RENDERER %s, which Ollama %s does not know: requests fail with '
                        '"unknown renderer". Upgrade to 0.21.0 or later.' % (name, stored, version_text), evidence)
    big = count is not None and count >= gemma4.LARGE_MODEL_MIN
    if resolved in (gemma4.SMALL, gemma4.LEGACY) and big:
        if not rules['resolves']:
            return instance(name, 'affected', '%s (%s) gets the one gemma4 template of Ollama %s, without the empty '
                            'thought block of the large template; pinning is impossible here: upgrade to 0.21.0 or later.'
                            % (name, details.get('parameter_size'), version_text), evidence)
        return instance(name, 'affected', '%s (%s) resolves to %s (%s): the small template, without the empty thought '
                        'block it was trained with. Pin RENDERER gemma4-large.'
                        % (name, details.get('parameter_size'), resolved, how), evidence)
    return instance(name, 'ok', '%s resolves to %s (%s).' % (name, resolved, how), evidence)


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    server, early = ollama_api.connect(ctx, _SELF, settings)
    if early:
        return early
    fixed = gemma4.version_tuple(settings['fixed_in']) if settings.get('fixed_in') else None
    rules = gemma4.rule_set(server.version, fixed)
    evidence = server.evidence()
    evidence.update(rule_set=rules['name'], rule_source=rules['source'])
    instances = [_model_instance(server, short, rules) for short in server.models]
    relevant = [i for i in instances if i['status'] != 'not_applicable']
    version_text = server.version_text
    if not relevant:
        return make_finding(_SELF, 'not_applicable', 'No Gemma 4 model with a gemma4 renderer on Ollama %s (%d model(s)).'
                            % (version_text, server.total), evidence=evidence)
    bad = [i for i in relevant if i['status'] == 'affected']
    if bad:
        summary = '%d Gemma 4 model(s) of 12B or more get the wrong template on Ollama %s: %s.' % (
            len(bad), version_text, ', '.join(i['evidence']['model'] for i in bad))
    else:
        worst = [i for i in relevant if i['status'] in ('error', 'unknown')]
        summary = worst[0]['summary'] if worst else 'Every Gemma 4 model resolves to the template of its size on Ollama %s.' % version_text
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=relevant)
