# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_schema_order: Ollama's native chat path re-sorts a JSON schema's keys alphabetically.

From v0.30.0-rc0 models that Ollama does not render itself take llama-server's
native chat path, whose llamaServerChatResponseFormat() decodes the schema into
a Go map and encodes it again: keys come back sorted, and llama-server's grammar
enforces the order it receives. Which path a model takes is chatModeForModel's
decision (ollama/ollama server/routes.go @ v0.33.0-rc2 l.2357-2385), modelled in
ollama/chat_path.py from what /api/tags, /api/show and the serve process's
environment show. Valid JSON, HTTP 200, and the values in the wrong fields when
the model fills them in order. v0.5.0-rc1 to v0.5.2-rc3 re-sorted every model's
schema (llm/server.go @ v0.5.0 l.749-760), fixed in v0.5.2 by #8002 and #8055.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import common as ollama_common


def _verdict():
    # Something accepts a connection where Ollama would be: the Ollama client and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import ollama_schema_order as verdict
    return verdict


DETECTION = Detection(
    'ollama_schema_order',
    group='ollama',
    title="Ollama's native chat path re-sorts JSON schema keys, so values land in the wrong fields",
    applies={'image': False, 'binary': None, 'root': None},
    references=[
        'https://github.com/ollama/ollama/pull/16031 (the native/rendered split; its branch is in every tag from v0.30.0-rc0)',
        'ollama/ollama server/routes.go @ v0.33.0-rc2 (= fb3076099) l.2357-2385 chatModeForModel, l.2674-2677 handleNativeChat',
        'ollama/ollama llm/llama_server.go @ v0.33.0-rc2 l.2308-2337: llamaServerChatResponseFormat() decodes the schema into map[string]any',
        'ollama/ollama server/routes.go @ v0.33.0-rc2 l.1572, l.1623-1630: /api/show answers the GGUF chat template on the native path',
        'ollama/ollama envconfig/config.go @ v0.33.0-rc2 l.177-190, l.218: OLLAMA_GO_TEMPLATE through strconv.ParseBool, default true',
        'ollama/ollama llm/server.go @ v0.5.0 l.749-760 (every schema re-sorted); fixed in v0.5.2 by '
        'https://github.com/ollama/ollama/pull/8002 and https://github.com/ollama/ollama/pull/8055',
        'ollama/ollama#18717 and PR #18721 (the write-up\'s report and fix): not found upstream',
    ],
    remediation=make_remediation(
        manual=[
            'Name schema keys so that their alphabetical order is the order you want the model to fill them.',
            'Leave OLLAMA_GO_TEMPLATE unset or true (set to false, every model without a renderer takes the native path).',
            'Give the model a renderer/parser, or a Go TEMPLATE with OLLAMA_GO_TEMPLATE=true set explicitly (unset, a '
            'GGUF chat template with more capabilities still wins), so it takes the rendered path, which keeps key order.',
            'On Ollama 0.5.0 and 0.5.1 (and 0.5.2-rc0 to rc3) every schema is re-sorted: upgrade to 0.5.2 or later.',
        ],
        disruption='none',
    ),
    probes=('schema_order',),
    settings=dict(ollama_common.COMMON_SETTINGS, **{
        'probe_models': {'type': 'list', 'elements': 'str', 'default': [],
                         'description': 'Models the schema_order probe asks (default: every model at risk, up to probe_max_models).'},
        'probe_max_models': {'type': 'int', 'default': 5, 'min': 1, 'max': 100,
                             'description': 'Models the probe sends one short request to, at most.'},
        'probe_timeout': {'type': 'int', 'default': 120, 'min': 1, 'max': 1800,
                          'description': 'Seconds one probe request may take (the model may have to load).'},
    }),
    question=ollama_common.first_question,
    verdict=_verdict,
)
