# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_gemma4_renderer's verdict: the code that judges what the detection's first question found.

detections/ollama_gemma4_renderer.py loads it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, worst_instance
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4


def _is_gemma4(details):
    families = [str(f) for f in (details.get('families') or []) if f] if isinstance(details.get('families'), list) else []
    return 'gemma4' in ' '.join(families + [str(details.get('family') or '')]).lower()


def _model_instance(server, short, rules):
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


def judge(ctx, detection, settings):
    server, early = ollama_api.connect(ctx, detection, settings)
    if early:
        return early  # nothing that answers as Ollama, or a version that does not parse
    evidence = server.evidence()
    if settings.get('fixed_in') and ollama_version.setting_tag(settings['fixed_in']) is None:
        return make_finding(detection, 'error', 'Setting fixed_in %r is not an Ollama release or rc (like 0.35.0 or '
                            '0.35.0-rc2).' % (settings['fixed_in'],), evidence=evidence)
    rules, problem = gemma4.rule_set(server.version, settings.get('fixed_in'))
    if rules is None:
        return make_finding(detection, 'unknown', '%s.' % problem, evidence=evidence)
    evidence.update(rule_set=rules['name'], rule_source=rules['source'])
    instances = ollama_api.judge_models(server, server.models, lambda short: _model_instance(server, short, rules))
    relevant = [i for i in instances if i['status'] != 'not_applicable']
    version_text = server.version_text
    if not relevant:
        return make_finding(detection, 'not_applicable', 'No local Gemma 4 model with a gemma4 renderer on Ollama %s '
                            '(%d model(s)).' % (version_text, server.total), evidence=evidence, instances=instances)
    bad = [i for i in relevant if i['status'] == 'affected']
    if bad:
        summary = '%d large Gemma 4 model(s) get the wrong template on Ollama %s: %s%s.' % (
            len(bad), version_text, ', '.join(i['evidence']['model'] for i in bad[:10]), ' and %d more' % (len(bad) - 10) if len(bad) > 10 else '')
    else:
        worst = worst_instance(relevant, among=('error', 'unknown'))
        summary = worst['summary'] if worst else 'Every Gemma 4 model resolves to the template of its size on Ollama %s.' % version_text
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
