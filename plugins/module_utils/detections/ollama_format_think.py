# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_format_think: with think and a format, a reply that skips thinking is not held to the schema.

Since 0.12.4-rc7 (PR #12460; rc0-rc6 do not have it) a request with ``think:
true`` and a ``format`` on the path Ollama renders itself runs a first pass
without the format and turns it on only after thinking was seen; a model that
answers at once, without thinking, is never constrained: bare text where JSON
was required, HTTP 200. From 0.21.1 ``think: false`` applies the format at
once. From v0.30.0-rc0 models on llama-server's native chat path never reach
that logic (server/routes.go @ v0.33.0-rc2 l.2674-2677, handleNativeChat sends
the format once), and cloud models are proxied. No release is known to fix the
direct-answer case.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import common as ollama_common


def _verdict():
    # Something accepts a connection where Ollama would be: the Ollama client and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import ollama_format_think as verdict
    return verdict


DETECTION = Detection(
    'ollama_format_think',
    group='ollama',
    title='Ollama does not hold a thinking model to the schema when it answers without thinking',
    applies={'image': False, 'binary': None, 'root': None},
    references=[
        'https://github.com/ollama/ollama/pull/12460 (77060d462: format only after thinking was seen, first tag v0.12.4-rc7)',
        'ollama/ollama server/routes.go @ v0.33.0-rc2 (= fb3076099) l.2764-2766: the first pass runs with currentFormat = nil',
        'ollama/ollama server/routes.go @ v0.33.0-rc2 l.2674-2677: native-path models go to handleNativeChat first (from v0.30.0-rc0)',
        'https://github.com/ollama/ollama/pull/15678 (5d1021603: think false applies the format at once, v0.21.1)',
        'https://github.com/ollama/ollama/pull/18479 ("a model that answers without thinking stays unconstrained"; merge and release NOT CONFIRMED)',
    ],
    remediation=make_remediation(
        manual=[
            'Send think: false with a format (0.21.1 and later apply the schema from the first token).',
            'Validate every structured reply against its schema in the client; retry when it does not parse.',
        ],
        disruption='none',
    ),
    probes=('format_think',),
    settings=dict(ollama_common.COMMON_SETTINGS, **{
        'fixed_in': {'type': 'version', 'default': None,
                     'description': 'First Ollama version that holds direct answers to the schema; unset while none is known.'},
        'probe_models': {'type': 'list', 'elements': 'str', 'default': [],
                         'description': 'Models the format_think probe asks (default: every thinking model, up to probe_max_models).'},
        'probe_max_models': {'type': 'int', 'default': 3, 'min': 1, 'max': 50,
                             'description': 'Models the probe asks, at most.'},
        'probe_seeds': {'type': 'int', 'default': 2, 'min': 1, 'max': 10,
                        'description': 'Seeds per prompt: the probe sends 3 prompts x this many requests per model.'},
        'probe_timeout': {'type': 'int', 'default': 120, 'min': 1, 'max': 1800,
                          'description': 'Seconds one probe request may take (the model may have to load).'},
    }),
    question=ollama_common.first_question,
    verdict=_verdict,
)
