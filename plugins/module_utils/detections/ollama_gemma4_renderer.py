# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_gemma4_renderer: a Gemma 4 model of 12B or more gets the small model's prompt template.

Models carry ``RENDERER gemma4``, which Ollama resolves per request to
gemma4-small or gemma4-large: by e2b/e4b or 12b/26b/31b in the model's name,
else by Config.ModelType against a threshold, else small. A copy (``ollama cp``,
``FROM``) without a size in its name falls back to the count, and the 12B
reports 11.9B, under the 12e9 threshold of 0.30.3 and later; a safetensors
import never sets ModelType at all (x/create/client/create.go @ v0.33.0-rc2
l.388-402), so every unnamed one resolves small, whatever its size. The small
template lacks the empty thought block the large models were trained with.
Nothing shows the resolved renderer, so this computes it with the rules of the
version the host runs, from what the resolver reads (the names and ModelType,
which /api/tags reports as ``details.parameter_size``), and judges it by the
model's real size (/api/show's model_info ``general.parameter_count``: /api/show
recomputes ``parameter_size`` for safetensors imports, server/routes.go @
v0.33.0-rc2 l.1429-1437, so it is not what the resolver reads). It loads no model.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    instance, make_finding, make_remediation, worst_instance)
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import common as ollama_common

ID = 'ollama_gemma4_renderer'
GROUP = 'ollama'
APPLIES = {'image': False, 'binary': None, 'root': None}
TITLE = 'Ollama resolves a Gemma 4 copy of 12B or more to the small prompt template'
REFERENCES = [
    'https://github.com/ollama/ollama/pull/15612 (e585ecd11: name and 16e9 threshold, first in v0.21.0)',
    'https://github.com/ollama/ollama/pull/16457 (50bbda566: 12b and the 12e9 threshold, v0.30.3)',
    'ollama/ollama server/renderer_resolution.go @ v0.33.0-rc2 l.34-55 (names, then Config.ModelType, else small)',
    'ollama/ollama server/routes.go @ v0.33.0-rc2 l.1429-1437 (/api/show recomputes parameter_size for safetensors) '
    'and x/create/client/create.go l.388-402 (safetensors imports: RENDERER gemma4, no ModelType)',
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
SETTINGS = dict(ollama_common.COMMON_SETTINGS, **{
    'fixed_in': {'type': 'version', 'default': None,
                 'description': 'First Ollama version with the 11.5e9 threshold (commit 122c7dab); unset while no release is confirmed.'},
})

_SELF = sys.modules[__name__]


def _is_gemma4(details):
    families = [str(f) for f in (details.get('families') or []) if f] if isinstance(details.get('families'), list) else []
    return 'gemma4' in ' '.join(families + [str(details.get('family') or '')]).lower()


def _model_instance(server, short, rules):
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4
    name = 'model %s' % short
    version_text = server.version_text
    tag_details = server.tag(short).get('details')
    tag_details = tag_details if isinstance(tag_details, dict) else {}
    remote = server.remote_host(short)
    if remote:
        if not _is_gemma4(tag_details):
            return None
        return instance(name, 'not_applicable', '%s is a cloud model proxied to %s: its renderer is resolved there, '
                        'not by this Ollama.' % (name, remote), {'model': short, 'remote_host': remote})
    try:
        show = server.show(short)
    except loopback_http.ProbeFailure as exc:
        return instance(name, exc.finding_status, '%s: /api/show failed: %s' % (name, exc), {'model': short})
    if show is None:
        return instance(name, 'ok', '%s was removed while the list was read.' % name, {'model': short})
    details = show.get('details') if isinstance(show.get('details'), dict) else {}
    stored = gemma4.stored_renderer(show.get('modelfile'))
    model_type = tag_details.get('parameter_size')
    evidence = {'model': short, 'full_name': gemma4.full_name(short), 'stored_renderer': stored,
                'format': details.get('format'), 'model_type': model_type,
                'show_parameter_size': details.get('parameter_size'), 'ollama_version': version_text,
                'rule_set': rules['name'], 'rule_source': rules['source']}
    if stored is None or not stored.startswith('gemma4'):
        if _is_gemma4(details):
            return instance(name, 'ok', '%s is a Gemma 4 model with renderer %s, used as is.' % (name, stored or 'none'),
                            evidence)
        return None
    if not rules['resolves'] and stored in (gemma4.SMALL, gemma4.LARGE):
        return instance(name, 'affected', '%s names RENDERER %s, which Ollama %s does not know: requests fail with '
                        '"unknown renderer". Upgrade to 0.21.0 or later.' % (name, stored, version_text), evidence)
    if model_type is not None and not isinstance(model_type, str):
        return instance(name, 'error', '%s: /api/tags field details.parameter_size is a %s, not a string.'
                        % (name, type(model_type).__name__), evidence)
    resolved, how = gemma4.resolve(stored, short, model_type, rules)
    size, size_from = gemma4.real_size(show)
    evidence.update(resolved_renderer=resolved, decided_by=how, real_parameter_count=size, real_size_from=size_from)
    if resolved is None:
        return instance(name, 'unknown', '%s: %s.' % (name, how), evidence)
    if resolved == gemma4.LARGE:
        return instance(name, 'ok', '%s resolves to %s (%s).' % (name, resolved, how), evidence)
    if size is None:
        return instance(name, 'unknown', '%s resolves to %s (%s), and its real size cannot be read: %s.'
                        % (name, resolved, how, size_from), evidence)
    if size < gemma4.LARGE_MODEL_MIN:
        return instance(name, 'ok', '%s resolves to %s (%s), the template of its size (%.3g parameters).'
                        % (name, resolved, how, size), evidence)
    if not rules['resolves']:
        return instance(name, 'affected', '%s (%.3g parameters) gets the one gemma4 template of Ollama %s, without the '
                        'empty thought block of the large template; pinning is impossible here: upgrade to 0.21.0 or '
                        'later.' % (name, size, version_text), evidence)
    return instance(name, 'affected', '%s (%.3g parameters, %s) resolves to %s (%s): the small template, without the '
                    'empty thought block it was trained with. Pin RENDERER gemma4-large.'
                    % (name, size, size_from, resolved, how), evidence)


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    # Nothing listening is the common case: answered before the Ollama client is loaded (ollama/common.py).
    server, early = ollama_common.connect(ctx, _SELF, settings)
    if early:
        return early
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4
    evidence = server.evidence()
    if settings.get('fixed_in') and ollama_version.setting_tag(settings['fixed_in']) is None:
        return make_finding(_SELF, 'error', 'Setting fixed_in %r is not an Ollama release or rc (like 0.35.0 or '
                            '0.35.0-rc2).' % (settings['fixed_in'],), evidence=evidence)
    rules, problem = gemma4.rule_set(server.version, settings.get('fixed_in'))
    if rules is None:
        return make_finding(_SELF, 'unknown', '%s.' % problem, evidence=evidence)
    evidence.update(rule_set=rules['name'], rule_source=rules['source'])
    instances = ollama_api.judge_models(server, server.models, lambda short: _model_instance(server, short, rules))
    relevant = [i for i in instances if i['status'] != 'not_applicable']
    version_text = server.version_text
    if not relevant:
        return make_finding(_SELF, 'not_applicable', 'No local Gemma 4 model with a gemma4 renderer on Ollama %s '
                            '(%d model(s)).' % (version_text, server.total), evidence=evidence, instances=instances)
    bad = [i for i in relevant if i['status'] == 'affected']
    if bad:
        summary = '%d large Gemma 4 model(s) get the wrong template on Ollama %s: %s%s.' % (
            len(bad), version_text, ', '.join(i['evidence']['model'] for i in bad[:10]), ' and %d more' % (len(bad) - 10) if len(bad) > 10 else '')
    else:
        worst = worst_instance(relevant, among=('error', 'unknown'))
        summary = worst['summary'] if worst else 'Every Gemma 4 model resolves to the template of its size on Ollama %s.' % version_text
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
