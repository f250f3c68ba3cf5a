# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_spec_logprobs's verdict: the code that judges what the detection's first question found.

detections/llama_spec_logprobs.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import speculation as llama_speculation
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, worst_instance


# the rules llama_speculation.speculation reads
SPEC_RULES = ('spec_type_list', 'spec_type_accumulates', 'draft_needs_type', 'draft_simple_throws', 'draft_type_from_gguf')


def _draft_reader(view):
    def draft_kind(path):
        # Imported here: only a draft model with no --spec-type on b10423 or later needs its header.
        from ansible_collections.homelab.postmortem.plugins.module_utils.llama import gguf
        try:
            return gguf.draft_kind(view.host_path(path))
        except hostio.ReadProblem as problem:
            return None, problem.reason
    return draft_kind


def _instance(ctx, inst):
    draft_kind = _draft_reader(inst.server.view)

    def judge_config(config):
        spec = llama_speculation.speculation(config, draft_kind)
        evidence = {'speculation': spec['on'], 'spec_types': spec['types'], 'spec_type_sources': spec['where'],
                    'draft_model': spec['draft_model'], 'reason': spec['reason']}
        if spec['on'] is True:
            return 'at_risk', ('%s speculates (%s): logprobs of tokens after the first will be 0.0 with no '
                               'alternatives.' % (inst.name, spec['reason'])), evidence
        if spec['on'] is None:
            return 'at_risk', ('%s may speculate: %s; logprobs after the first token would then be placeholders.'
                               % (inst.name, spec['reason'])), evidence
        return 'ok', '%s does not speculate (%s).' % (inst.name, spec['reason']), evidence

    entry = llama_server.judge(inst, judge_config, SPEC_RULES)
    if 'spec_logprobs' in ctx.probes:
        _probe(inst, entry)
    return entry


def _probe(inst, entry):
    # Imported here, when the probe runs: probes are opt-in, and every module the audit imports
    # is compiled from the payload on every host, every run.
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import probes as llama_probes
    base, key, reason = llama_server.probe_target(inst, inst.config(inst.rule_sets[-1]))
    measured = llama_probes.spec_logprobs(base, key) if base else {'verdict': 'unknown', 'reason': reason}
    entry['evidence']['probe'] = measured
    if measured['verdict'] == 'affected':
        entry['status'], entry['summary'] = 'affected', (
            'Measured: %d of %d tokens after the first came back with logprob 0.0 and no alternatives (asked for %d).'
            % (measured['empty_alternatives'], measured['after_first'], measured['n_probs']))
    elif measured['verdict'] == 'ok':
        entry['status'], entry['summary'] = 'ok', 'Measured: %s.' % measured['reason']
    else:
        entry['summary'] = '%s (probe: %s)' % (entry['summary'], measured.get('reason'))


def judge(ctx, detection, settings):
    found, evidence = llama_server.instances(ctx)
    instances = [i if isinstance(i, dict) else _instance(ctx, i) for i in found]
    evidence['probe_requested'] = 'spec_logprobs' in ctx.probes
    if not instances:
        return make_finding(detection, 'not_applicable', 'No llama-server process found.', evidence=evidence)
    bad = [i for i in instances if i['status'] != 'ok']
    worst = worst_instance(bad)
    summary = worst['summary'] if worst else 'No llama-server instance speculates.'
    if len(bad) > 1:
        summary = '%d of %d llama-server instances: %s' % (len(bad), len(instances), summary)
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
