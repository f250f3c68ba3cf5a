# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_schema_order: Ollama's native chat path re-sorts a JSON schema's keys alphabetically.

From 0.30.0 (PR #16031) models without a renderer or parser can take a native
chat path, whose llamaServerChatResponseFormat() decodes the schema into a Go
map and encodes it again: keys come back sorted, and llama-server's grammar
enforces the order it receives. OLLAMA_GO_TEMPLATE=false sends every such model
there; unset, a GGUF chat template can still win for a model. Valid JSON, HTTP
200, and the values in the wrong fields when the model fills them in order.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys
from collections import OrderedDict

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4

ID = 'ollama_schema_order'
GROUP = 'ollama'
APPLIES = {'image': False, 'binary': None, 'root': None}
TITLE = "Ollama's native chat path re-sorts JSON schema keys, so values land in the wrong fields"
REFERENCES = [
    'https://github.com/ollama/ollama/pull/16031 (9db4bdbad: the native/rendered split, first tag v0.30.0)',
    'ollama/ollama llm/llama_server.go llamaServerChatResponseFormat() decodes the schema into map[string]any',
    'ollama/ollama envconfig/config.go OLLAMA_GO_TEMPLATE (since v0.30.0, default true)',
    'ollama/ollama#18717 and PR #18721 (the write-up\'s report and fix): not found upstream',
]
REMEDIATION = make_remediation(
    manual=[
        'Name schema keys so that their alphabetical order is the order you want the model to fill them.',
        'Leave OLLAMA_GO_TEMPLATE unset or true (set to false, every model without a renderer takes the native path).',
        'Give the model a renderer/parser or a Go TEMPLATE so it takes the rendered path, which keeps key order.',
    ],
    disruption='none',
)
PROBES = ('schema_order',)
SETTINGS = dict(ollama_api.COMMON_SETTINGS, **{
    'probe_models': {'type': 'list', 'elements': 'str', 'default': [],
                     'description': 'Models the schema_order probe asks (default: every model at risk, up to probe_max_models).'},
    'probe_max_models': {'type': 'int', 'default': 5, 'min': 1, 'max': 100,
                         'description': 'Models the probe sends one short request to, at most.'},
    'probe_timeout': {'type': 'int', 'default': 120, 'min': 1, 'max': 1800,
                      'description': 'Seconds one probe request may take (the model may have to load).'},
})

_SELF = sys.modules[__name__]
NATIVE_FROM = (0, 30, 0)
# Declared in reverse alphabetical order: a re-sorted schema shows at once.
SCHEMA = OrderedDict([('type', 'object'),
                      ('properties', OrderedDict([('zeta_colour', {'type': 'string'}), ('alpha_animal', {'type': 'string'})])),
                      ('required', ['zeta_colour', 'alpha_animal'])])
DECLARED = ['zeta_colour', 'alpha_animal']


def _go_template(ctx):
    value, source = ollama_api.serve_setting(ctx, 'OLLAMA_GO_TEMPLATE')
    if value is None:
        return None, source
    return str(value).strip().lower() not in ('0', 'false', 'no', 'off'), source


def _probe(settings, model):
    body = {'model': model, 'stream': False, 'format': SCHEMA, 'think': False,
            'messages': [{'role': 'user', 'content': 'Name a colour and an animal.'}],
            'options': {'temperature': 0, 'num_predict': 64}}
    reply = ollama_api.call(settings, '/api/chat', body, timeout=settings['probe_timeout'])
    content = ((reply or {}).get('message') or {}).get('content') if isinstance(reply, dict) else None
    try:
        keys = list(json.loads(content or '', object_pairs_hook=OrderedDict))
    except (TypeError, ValueError):
        return None, {'reply': str(content)[:200]}
    return keys, {'keys': keys, 'reply': str(content)[:200]}


def _model_instance(ctx, server, model, go_template, probe_budget):
    name = 'model %s' % model
    show = server.show(model)
    if show is None:
        return instance(name, 'ok', '%s was removed while the list was read.' % name, {'model': model})
    directives = gemma4.stored_directives(show.get('modelfile'))
    evidence = {'model': model, 'renderer': directives.get('RENDERER'), 'parser': directives.get('PARSER'),
                'go_template': bool(show.get('template'))}
    if directives:
        return instance(name, 'ok', '%s has a renderer or parser: rendered path, key order kept.' % name, evidence)
    if go_template is True and show.get('template'):
        status, summary = 'ok', '%s is rendered with its Go TEMPLATE (OLLAMA_GO_TEMPLATE set true).' % name
    elif go_template is False:
        status, summary = 'at_risk', '%s takes the native path (OLLAMA_GO_TEMPLATE=false): schema keys come back sorted.' % name
    else:
        status, summary = 'at_risk', ('%s has no renderer or parser: it takes the native path when its GGUF chat '
                                      'template is preferred, and schema keys come back sorted.' % name)
    wanted = ctx.settings_for(_SELF)['probe_models']
    if status == 'at_risk' and 'schema_order' in ctx.probes and probe_budget[0] > 0 and (not wanted or model in wanted):
        probe_budget[0] -= 1
        try:
            keys, measured = _probe(server.settings, model)
        except loopback_http.ProbeFailure as exc:
            evidence['probe'] = {'error': str(exc)}
            return instance(name, exc.finding_status, '%s: the probe failed: %s' % (name, exc), evidence)
        evidence['probe'] = measured
        if keys is None:
            return instance(name, 'unknown', '%s: the probe reply is not JSON; cannot tell.' % name, evidence)
        if keys == sorted(DECLARED) and keys != DECLARED:
            return instance(name, 'affected', '%s: measured, a schema declared as %s came back as %s.'
                            % (name, ', '.join(DECLARED), ', '.join(keys)), evidence)
        return instance(name, 'ok', '%s: measured, the declared key order was kept (%s).' % (name, ', '.join(keys)), evidence)
    return instance(name, status, summary, evidence)


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    server, early = ollama_api.connect(ctx, _SELF, settings)
    if early:
        return early
    evidence = server.evidence()
    go_template, source = _go_template(ctx)
    evidence.update(ollama_go_template=go_template, ollama_go_template_from=source, probe='schema_order' in ctx.probes)
    if server.version < NATIVE_FROM:
        return make_finding(_SELF, 'ok', 'Ollama %s has no native chat path (it arrived in 0.30.0).' % server.version_text,
                            evidence=evidence)
    budget = [settings['probe_max_models']]
    instances = []
    for model in server.models:
        try:
            instances.append(_model_instance(ctx, server, model, go_template, budget))
        except loopback_http.ProbeFailure as exc:
            instances.append(instance('model %s' % model, exc.finding_status, 'model %s: %s' % (model, exc), {'model': model}))
    if not instances:
        return make_finding(_SELF, 'not_applicable', 'Ollama %s has no models.' % server.version_text, evidence=evidence)
    bad = [i for i in instances if i['status'] == 'affected']
    risky = [i for i in instances if i['status'] == 'at_risk']
    if bad:
        summary = 'Measured: %d model(s) return schema keys re-sorted: %s.' % (len(bad), ', '.join(i['evidence']['model'] for i in bad))
    elif risky:
        summary = '%d model(s) can take the native chat path, which re-sorts schema keys: %s.' % (
            len(risky), ', '.join(i['evidence']['model'] for i in risky[:10]))
    else:
        summary = 'No model takes the native chat path on Ollama %s.' % server.version_text
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
