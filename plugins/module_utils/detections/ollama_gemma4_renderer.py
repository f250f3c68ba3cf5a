# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ollama_gemma4_renderer: a Gemma 4 model of 12B or more gets the small model's prompt template.

Models carry ``RENDERER gemma4``, which Ollama resolves per request to
gemma4-small or gemma4-large: by e2b/e4b or 12b/26b/31b in the model's name,
else by Config.ModelType against a threshold, else small. A copy (``ollama cp``,
``FROM``) without a size in its name falls back to the count, and the 12B
reports 11.9B, under the 12e9 threshold of 0.30.3 and later; a safetensors
import never sets ModelType at all (x/create/client/create.go @ v0.33.0-rc2
l.388-402), so every unnamed one resolves small, whatever its size. The small
template lacks the empty thought block the large models were trained with.
Nothing shows the resolved renderer, so this computes it with the rules of the
version the host runs, from what the resolver reads (the names and ModelType,
which /api/tags reports as ``details.parameter_size``), and judges it by the
model's real size (/api/show's model_info ``general.parameter_count``: /api/show
recomputes ``parameter_size`` for safetensors imports, server/routes.go @
v0.33.0-rc2 l.1429-1437, so it is not what the resolver reads). It loads no model.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_remediation
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import common as ollama_common


def _verdict():
    # Something accepts a connection where Ollama would be: the Ollama client and the verdict are loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import ollama_gemma4_renderer as verdict
    return verdict


DETECTION = Detection(
    'ollama_gemma4_renderer',
    group='ollama',
    title='Ollama resolves a Gemma 4 copy of 12B or more to the small prompt template',
    applies={'image': False, 'binary': None, 'root': None},
    references=[
        'https://github.com/ollama/ollama/pull/15612 (e585ecd11: name and 16e9 threshold, first in v0.21.0)',
        'https://github.com/ollama/ollama/pull/16457 (50bbda566: 12b and the 12e9 threshold, v0.30.3)',
        'ollama/ollama server/renderer_resolution.go @ v0.33.0-rc2 l.34-55 (names, then Config.ModelType, else small)',
        'ollama/ollama server/routes.go @ v0.33.0-rc2 l.1429-1437 (/api/show recomputes parameter_size for safetensors) '
        'and x/create/client/create.go l.388-402 (safetensors imports: RENDERER gemma4, no ModelType)',
        'ollama/ollama server/renderer_resolution.go @ 122c7dab (11.5e9; release not confirmed)',
        'ollama/ollama#18824 (the write-up\'s report; not found upstream)',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.ollama_gemma4_renderer',
        module='homelab.postmortem.ollama_gemma4_renderer_fix',
        manual=[
            'Pin the renderer: re-create the model with RENDERER gemma4-large (and PARSER gemma4) in its Modelfile, '
            'or POST /api/create with "renderer": "gemma4-large"; needs Ollama 0.21.0 or later.',
            'Or give the copy a name with its size (assistant:12b): the name check runs before the count.',
            'On Ollama before 0.21.0 there is nothing to pin: upgrade to 0.21.0 or later.',
        ],
        disruption='none',
    ),
    probes=(),
    settings=dict(ollama_common.COMMON_SETTINGS, **{
        'fixed_in': {'type': 'version', 'default': None,
                     'description': 'First Ollama version with the 11.5e9 threshold (commit 122c7dab); unset while no release is confirmed.'},
    }),
    question=ollama_common.first_question,
    verdict=_verdict,
)
