# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_schema_order's verdict: the code that judges what the detection's first question found.

detections/ollama_schema_order.py loads it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import OrderedDict

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import chat_path

SCHEMA_FORMAT_FROM = '0.5.0-rc1'   # 630e7dc6f (PR 7900): format may be a schema; before it, a string
RESORT_FIXED_IN = '0.5.2'          # 9039c821a (#8002) and 18f6a98bd (#8055); v0.5.2-rc0 to rc3 have neither
NATIVE_PATH_FROM = '0.30.0-rc0'
# Declared in reverse alphabetical order: a re-sorted schema shows at once.
SCHEMA = OrderedDict([('type', 'object'),
                      ('properties', OrderedDict([('zeta_colour', {'type': 'string'}), ('alpha_animal', {'type': 'string'})])),
                      ('required', ['zeta_colour', 'alpha_animal'])])
DECLARED = ['zeta_colour', 'alpha_animal']


def _probe(server, settings, model):
    """(the reply's keys in the order the model wrote them, evidence); keys None when the reply is no JSON object."""
    body = {'model': model, 'stream': False, 'format': SCHEMA, 'think': False,
            'messages': [{'role': 'user', 'content': 'Name a colour and an animal.'}],
            'options': {'temperature': 0, 'num_predict': 64}}
    reply = server.call('/api/chat', body, timeout=settings['probe_timeout'])
    content, _thinking = ollama_api.chat_message('/api/chat of %s' % model, reply)
    try:
        # dicts keep the order keys came in (Python 3.7+), which is what is compared.
        data = bounded_json.loads(content, 'the reply')
    except bounded_json.JsonInputError:
        data = None
    if not isinstance(data, dict):
        return None, {'reply': content[:200]}
    keys = [str(key) for key in data]
    return keys, {'keys': keys, 'reply': content[:200]}


def _model_instance(server, settings, model, setting, probe_budget):
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama.renderer import stored_directives
    name = 'model %s' % model
    show = server.show(model)
    if show is None:
        return instance(name, 'ok', '%s was removed while the list was read.' % name, {'model': model})
    directives = stored_directives(show.get('modelfile'))
    details = show.get('details') if isinstance(show.get('details'), dict) else {}
    evidence = {'model': model, 'renderer': directives.get('RENDERER'), 'parser': directives.get('PARSER'),
                'format': details.get('format'), 'family': details.get('family'),
                'template_is_default': show.get('template') == chat_path.DEFAULT_TEMPLATE}
    try:
        path, why = chat_path.decide(server.version, None, show, setting)
    except ValueError as exc:
        return instance(name, 'error', '%s: %s.' % (name, exc), evidence)
    evidence.update(chat_path=path, chat_path_reason=why)
    if path == chat_path.RENDERED:
        return instance(name, 'ok', '%s is rendered by Ollama (%s): the schema reaches llama-server as sent.' % (name, why),
                        evidence)
    if path in (chat_path.NO_CHAT, chat_path.PROXIED):
        return instance(name, 'not_applicable', '%s: %s.' % (name, why), evidence)
    if path == chat_path.NATIVE:
        return instance(name, 'affected', '%s takes the native chat path (%s): every schema sent to it reaches '
                        'llama-server with its keys sorted.' % (name, why), evidence)
    if probe_budget.take(model):
        try:
            keys, measured = _probe(server, settings, model)
        except loopback_http.ProbeFailure as exc:
            evidence['probe'] = {'error': str(exc)}
            return instance(name, exc.finding_status, '%s: the probe failed: %s' % (name, exc), evidence)
        evidence['probe'] = measured
        if keys is None:
            return instance(name, 'unknown', '%s: the probe reply is not a JSON object; cannot tell.' % name, evidence)
        if keys == sorted(DECLARED) and keys != DECLARED:
            return instance(name, 'affected', '%s: measured, a schema declared as %s came back as %s.'
                            % (name, ', '.join(DECLARED), ', '.join(keys)), evidence)
        return instance(name, 'ok', '%s: measured, the declared key order was kept (%s).' % (name, ', '.join(keys)), evidence)
    return instance(name, 'at_risk', '%s may take the native chat path, which re-sorts schema keys: %s.' % (name, why),
                    evidence)


def _by_version(detection, server, evidence):
    """The finding when the version alone decides, else None."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version
    version, text = server.version, server.version_text
    for first, change in ((SCHEMA_FORMAT_FROM, 'JSON schema formats (PR 7900)'),
                          (RESORT_FIXED_IN, 'the key-order fixes #8002 and #8055'),
                          (NATIVE_PATH_FROM, 'the native chat path')):
        if version.has(first) is None:
            return make_finding(detection, 'unknown', '%s.' % ollama_version.undecided(version, first, change), evidence=evidence)
    if not version.has(SCHEMA_FORMAT_FROM):
        return make_finding(detection, 'ok', 'Ollama %s takes format only as "json" (schemas came with v0.5.0-rc1): no key '
                            'order to lose.' % text, evidence=evidence)
    if not version.has(RESORT_FIXED_IN):
        return make_finding(detection, 'affected', 'Ollama %s decodes every schema into a struct whose properties are a Go '
                            'map (llm/server.go @ v0.5.0 l.749-760, llama/llama.go l.706-712): keys come back sorted for '
                            'every model (%d here). Upgrade to 0.5.2 or later (#8002, #8055).' % (text, server.total),
                            evidence=evidence)
    if not version.has(NATIVE_PATH_FROM):
        return make_finding(detection, 'ok', 'Ollama %s has no native chat path (it came with v0.30.0-rc0): every schema '
                            'reaches the grammar as sent.' % text, evidence=evidence)
    return None


def judge(ctx, detection, settings):
    server, early = ollama_api.connect(ctx, detection, settings)
    if early:
        return early  # nothing that answers as Ollama, or a version that does not parse
    evidence = dict(server.evidence(), probe='schema_order' in ctx.probes)
    decided = _by_version(detection, server, evidence)
    if decided:
        return decided
    setting = chat_path.go_template_setting(ctx)
    evidence['ollama_go_template'] = setting.evidence()
    local = ollama_api.local_models(server, evidence, runs_there='the chat path')
    budget = ollama_api.ProbeBudget(ctx, settings, 'schema_order')
    instances = ollama_api.judge_models(server, local, lambda model: _model_instance(server, settings, model, setting, budget))
    if not instances:
        return make_finding(detection, 'not_applicable', 'Ollama %s has no local models.' % server.version_text, evidence=evidence)
    bad = [i for i in instances if i['status'] == 'affected']
    risky = [i for i in instances if i['status'] == 'at_risk']
    if bad:
        summary = '%d model(s) take the native chat path, which re-sorts schema keys: %s.' % (
            len(bad), ', '.join(i['evidence']['model'] for i in bad[:10]))
    elif risky:
        summary = '%d model(s) may take the native chat path, which re-sorts schema keys: %s.' % (
            len(risky), ', '.join(i['evidence']['model'] for i in risky[:10]))
    else:
        summary = ollama_api.worst_summary(instances, 'No model takes the native chat path on Ollama %s.'
                                           % server.version_text)
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
