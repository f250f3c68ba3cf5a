# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_format_think's verdict: the code that judges what the detection's first question found.

detections/ollama_format_think.py loads it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import chat_path
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

AFFECTED_FROM = '0.12.4-rc7'   # the first tag with 77060d462 (v0.12.4-rc0 to rc6 do not have it)
NATIVE_PATH_FROM = '0.30.0-rc0'
SCHEMA = {'type': 'object', 'properties': {'answer': {'type': 'string'}}, 'required': ['answer']}
PROMPTS = ('What is the capital of France?', 'How many legs does a spider have?', 'Say hello.')


def _holds(content):
    if not isinstance(content, str):
        return False
    try:
        data = bounded_json.loads(content, 'the reply')
    except bounded_json.JsonInputError:
        return False
    return isinstance(data, dict) and isinstance(data.get('answer'), str)


def _probe(server, settings, model):
    counts = {'requests': 0, 'skipped_thinking': 0, 'broke_schema_without_thinking': 0, 'broke_schema_with_thinking': 0}
    examples = []
    for prompt in PROMPTS:
        for seed in range(1, settings['probe_seeds'] + 1):
            body = {'model': model, 'stream': False, 'think': True, 'format': SCHEMA,
                    'messages': [{'role': 'user', 'content': prompt}],
                    'options': {'seed': seed, 'temperature': 0.7, 'num_predict': 256}}
            reply = server.call('/api/chat', body, timeout=settings['probe_timeout'])
            content, thinking = ollama_api.chat_message('/api/chat of %s' % model, reply)
            counts['requests'] += 1
            thought = bool(thinking.strip())
            held = _holds(content)
            if not thought:
                counts['skipped_thinking'] += 1
            if not held:
                counts['broke_schema_with_thinking' if thought else 'broke_schema_without_thinking'] += 1
                if len(examples) < 3:
                    examples.append({'prompt': prompt, 'seed': seed, 'thinking': thought, 'content': content[:160]})
    return counts, examples


def _model_instance(server, model, settings, budget, setting):
    name = 'model %s' % model
    show = server.show(model)
    if show is None:
        return None
    capabilities = show.get('capabilities') if isinstance(show.get('capabilities'), list) else []
    capabilities = [str(c) for c in capabilities if c]
    if 'thinking' not in capabilities:
        return None
    evidence = {'model': model, 'capabilities': capabilities}
    try:
        path, why = chat_path.decide(server.version, None, show, setting)
    except ValueError as exc:
        return instance(name, 'error', '%s: %s.' % (name, exc), evidence)
    evidence.update(chat_path=path, chat_path_reason=why)
    if path == chat_path.NO_CHAT:
        return None
    if path == chat_path.PROXIED:
        return instance(name, 'not_applicable', '%s is %s.' % (name, why), evidence)
    if path == chat_path.NATIVE:
        return instance(name, 'ok', '%s takes the native chat path (%s): the format goes to llama-server once, with '
                        'no pass that waits for thinking.' % (name, why), evidence)
    if budget.take(model):
        try:
            counts, examples = _probe(server, settings, model)
        except loopback_http.ProbeFailure as exc:
            return instance(name, exc.finding_status, '%s: the probe failed: %s' % (name, exc), evidence)
        evidence['probe'] = dict(counts, examples=examples)
        broke = counts['broke_schema_without_thinking'] + counts['broke_schema_with_thinking']
        if broke:
            return instance(name, 'affected', '%s: measured, %d of %d replies skipped thinking and %d broke the schema '
                            '(%d of those without thinking).' % (name, counts['skipped_thinking'], counts['requests'],
                                                                 broke, counts['broke_schema_without_thinking']), evidence)
        return instance(name, 'ok', '%s: measured, %d of %d replies skipped thinking and every reply held the schema.'
                        % (name, counts['skipped_thinking'], counts['requests']), evidence)
    where = 'rendered by Ollama' if path == chat_path.RENDERED else 'possibly rendered by Ollama: %s' % why
    return instance(name, 'at_risk', '%s thinks and is %s: with think true and a format, a reply that skips '
                    'thinking is not held to the schema.' % (name, where), evidence)


def judge(ctx, detection, settings):
    server, early = ollama_api.connect(ctx, detection, settings)
    if early:
        return early  # nothing that answers as Ollama, or a version that does not parse
    evidence = dict(server.evidence(), probe='format_think' in ctx.probes)
    version = server.version
    fixed_in = None
    if settings.get('fixed_in'):
        fixed_in = ollama_version.setting_tag(settings['fixed_in'])
        if fixed_in is None:
            return make_finding(detection, 'error', 'Setting fixed_in %r is not an Ollama release or rc (like 0.35.0 or '
                                '0.35.0-rc2).' % (settings['fixed_in'],), evidence=evidence)
    for first, change in ((AFFECTED_FROM, 'PR 12460'), (fixed_in, 'the fix (setting fixed_in)')):
        if first and version.has(first) is None:
            return make_finding(detection, 'unknown', '%s.' % ollama_version.undecided(version, first, change), evidence=evidence)
    if not version.has(AFFECTED_FROM):
        return make_finding(detection, 'ok', 'Ollama %s applies the format from the first token: the pass that waits for '
                            'thinking came with v0.12.4-rc7 (PR 12460).' % server.version_text, evidence=evidence)
    if fixed_in and version.has(fixed_in):
        return make_finding(detection, 'ok', 'Ollama %s is at or after fixed_in %s.' % (server.version_text, settings['fixed_in']),
                            evidence=evidence)
    setting = chat_path.go_template_setting(ctx) if version.has(NATIVE_PATH_FROM) is not False else None
    if setting is not None:
        evidence['ollama_go_template'] = setting.evidence()
    local = ollama_api.local_models(server, evidence, runs_there='the format logic')
    budget = ollama_api.ProbeBudget(ctx, settings, 'format_think')
    instances = ollama_api.judge_models(server, local, lambda model: _model_instance(server, model, settings, budget, setting))
    if not instances:
        return make_finding(detection, 'not_applicable', 'No local thinking model on Ollama %s.' % server.version_text,
                            evidence=evidence)
    bad = [i for i in instances if i['status'] == 'affected']
    risky = [i for i in instances if i['status'] == 'at_risk']
    if bad:
        summary = 'Measured: %d thinking model(s) broke the schema: %s%s.' % (
            len(bad), ', '.join(i['evidence']['model'] for i in bad[:10]),
            ' and %d more' % (len(bad) - 10) if len(bad) > 10 else '')
    elif risky:
        summary = ('%d thinking model(s) are not held to a schema when they answer without thinking (think: true): %s.'
                   % (len(risky), ', '.join(i['evidence']['model'] for i in risky[:10])))
    else:
        summary = ollama_api.worst_summary(instances, 'No thinking model reaches the pass that waits for thinking on '
                                                      'Ollama %s.' % server.version_text)
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
