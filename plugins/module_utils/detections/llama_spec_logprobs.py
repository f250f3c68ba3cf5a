# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_spec_logprobs: with speculative decoding, logprobs after the first token are placeholders.

Tokens from the speculative loop are sent with logprob 0.0 and no
alternatives ("// set later", never set). /props always says
speculative.types "none"; /slots tells the truth. Without the probe the
command line decides; the spec_logprobs probe reads /slots and sends one
logprob request.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation


def _first_question(ctx, detection, settings):
    running, problems = llama_processes.processes(ctx)
    if not running:
        evidence = dict(llama_processes.process_table_evidence(running, problems), probe_requested='spec_logprobs' in ctx.probes)
        return make_finding(detection, 'not_applicable', 'No llama-server process found.', evidence=evidence)
    return Found()


def _verdict():
    # A llama-server process or a preset to read: the configuration resolver and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import llama_spec_logprobs as verdict
    return verdict


DETECTION = Detection(
    'llama_spec_logprobs',
    group='llama',
    title="llama-server's logprobs are placeholders when speculative decoding is on",
    # Speculation is a property of running processes.
    applies={'image': False, 'binary': None, 'root': None},
    references=[
        'https://github.com/ggml-org/llama.cpp/issues/27972',
        'https://github.com/ggml-org/llama.cpp/issues/29975',
    ],
    remediation=make_remediation(
        manual=[
            'Send requests that need logprobs to an instance started without -md/--spec-type '
            '(there is no per-request switch).',
            'Check /slots (speculative), not /props, to see whether a server speculates.',
            'Treat an empty top_logprobs on a request that asked for alternatives as a missing value.',
        ],
        disruption='restart',
    ),
    probes=('spec_logprobs',),
    settings={},
    question=_first_question,
    verdict=_verdict,
)
