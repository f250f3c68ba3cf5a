# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_sleep_race: a request that arrives just before sleep hangs or crashes the server.

With --sleep-idle-seconds >= 0 the idle timer can fire between a handler's wake
check and the queueing of its task: the request hangs until another one wakes
the server, or the tokenizer reads the freed vocabulary and the process dies
with SIGSEGV. This detection only reads configuration and process state. It
never sends a request: a probe of this race can crash the server.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation


def _first_question(ctx, detection, settings):
    running, problems = llama_processes.processes(ctx)
    if not running and not settings.get('preset_paths'):
        evidence = llama_processes.process_table_evidence(running, problems)
        if not ctx.live:
            evidence['note'] = 'image audit (root=%s): no processes to read; only listed preset files were checked' % ctx.root
        return make_finding(detection, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    return Found()


def _verdict():
    # A llama-server process or a preset to read: the configuration resolver and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import llama_sleep_race as verdict
    return verdict


DETECTION = Detection(
    'llama_sleep_race',
    group='llama',
    title='llama-server sleep mode loses or crashes on a request that arrives just before it sleeps',
    # Preset files can be read in an image; processes only on a live host.
    applies={'image': True, 'binary': None, 'root': None},
    references=[
        'https://github.com/ggml-org/llama.cpp/issues/29689',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.llama_server',
        role_vars={'llama_server_restart_on_failure': True, 'llama_server_restart': True},
        manual=[
            'Leave sleep mode off (--sleep-idle-seconds -1, the default) on servers that take long prompts or images.',
            'If sleep stays on, make sure a crash is restarted: Restart=on-failure in the systemd unit.',
            'Clients: send a 1-token completion right before the real request, and use a timeout with a retry.',
        ],
        disruption='restart',
    ),
    probes=(),
    settings={
        'preset_paths': {'type': 'list', 'elements': 'str', 'default': [],
                         'description': 'Router preset INI files to read besides those named by running routers.'},
        # As the other llama and the Ollama detections have theirs (#45): a build known to be fixed is ok, without
        # a new release of this collection. None is known on 2026-12-07 (llama.cpp issue 29689 is open).
        'fixed_in': {'type': 'str', 'default': None,
                     'description': ('First llama.cpp build with the sleep race fixed, as bNNNNN or NNNNN (the number '
                                     'llama-server --version prints); a server of that build or later is ok. Unset '
                                     'while none is known.')},
    },
    question=_first_question,
    verdict=_verdict,
)
