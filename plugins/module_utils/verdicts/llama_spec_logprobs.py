# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_spec_logprobs's verdict: the code that judges what the detection's first question found.

detections/llama_spec_logprobs.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, worst_instance
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_spec_logprobs as DETECTION


def _process_instance(ctx, process):
    environ = process.environ() or {}
    evidence = llama_server.process_evidence(process)
    value, source = llama_server.resolve(llama_server.SPEC_TYPE, process.argv, environ)
    types = [t.strip() for t in (value or '').split(',') if t.strip() and t.strip() != 'none']
    draft, _draft_source = llama_server.resolve(llama_server.SPEC_DRAFT_MODEL, process.argv, environ)
    spec_default = llama_server.has_flag(process.argv, '--spec-default')
    if spec_default and not types:
        types = ['default']
    evidence.update(spec_types=types, spec_type_source=source, draft_model=draft, spec_default=spec_default)
    name = llama_server.describe_process(process)
    if types:
        status, summary = 'at_risk', ('%s speculates (%s): logprobs of tokens after the first will be 0.0 '
                                      'with no alternatives.' % (name, ', '.join(types)))
    else:
        status, summary = 'ok', '%s does not speculate.' % name
        if draft:
            evidence['note'] = 'a draft model is loaded (-md) but no --spec-type: -md alone does not turn speculation on'
    if 'spec_logprobs' in ctx.probes:
        # Imported here, when the probe runs: probes are opt-in, and every module the audit imports
        # is compiled from the payload on every host, every run.
        from ansible_collections.homelab.postmortem.plugins.module_utils.llama import probes as llama_probes
        base, key, reason = llama_server.probe_target(process)
        measured = llama_probes.spec_logprobs(base, key) if base else {'verdict': 'unknown', 'reason': reason}
        evidence['probe'] = measured
        if measured['verdict'] == 'affected':
            status, summary = 'affected', ('Measured: %d of %d tokens after the first came back with logprob 0.0 and '
                                           'no alternatives (asked for %d).'
                                           % (measured['empty_alternatives'], measured['after_first'], measured['n_probs']))
        elif measured['verdict'] == 'ok':
            status, summary = 'ok', 'Measured: %s.' % measured['reason']
        else:
            summary = '%s (probe: %s)' % (summary, measured.get('reason'))
    return instance(name, status, summary, evidence)


def judge(ctx):
    instances, evidence = llama_server.collect(ctx, None, _process_instance)
    evidence['probe_requested'] = 'spec_logprobs' in ctx.probes
    if not instances:
        return make_finding(DETECTION, 'not_applicable', 'No llama-server process found.', evidence=evidence)
    bad = [i for i in instances if i['status'] != 'ok']
    worst = worst_instance(bad)
    summary = worst['summary'] if worst else 'No llama-server instance speculates.'
    if len(bad) > 1:
        summary = '%d of %d llama-server instances: %s' % (len(bad), len(instances), summary)
    return make_finding(DETECTION, 'ok', summary, evidence=evidence, instances=instances)
