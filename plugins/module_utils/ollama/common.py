# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every ollama_* detection declares and asks first, without loading the Ollama client.

The audit imports every detection on every host, every run, and each module it imports is
compiled from the payload there: the settings and the "is anything listening" answer live here,
and ``ollama.api`` (the client, the field checks, the version rules) is loaded, by the verdicts, only
when something accepts a connection at the configured address. ``ollama.api`` imports this module,
never the reverse.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Found
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding

COMMON_SETTINGS = {
    'url': {'type': 'str', 'default': 'http://127.0.0.1:11434',
            'description': "Ollama's address on the audited host (loopback only)."},
    'timeout': {'type': 'int', 'default': 10, 'min': 1, 'max': 300, 'description': 'Seconds one request may take.'},
    'max_models': {'type': 'int', 'default': 500, 'min': 1, 'max': 100000,
                   'description': 'Models read at most; the rest are counted and named as skipped.'},
}


def nothing_answers(detection, settings):
    """The not_applicable finding of every ollama_* detection when nothing answers at the URL."""
    return make_finding(detection, 'not_applicable', 'No Ollama answers at %s.' % settings['url'],
                        evidence={'url': settings['url']})


def first_question(ctx, detection, settings):
    """Every ollama_* detection's first question: nothing_answers(...) when nothing accepts a TCP connection at
    the URL, else Found() (then the verdict's ollama.api.connect decides). Asked once per run and address."""
    key = ('ollama-accepts', settings['url'], settings['timeout'])
    if ctx.shared(key, lambda: loopback_http.accepts_connections(settings['url'], settings['timeout'])):
        return Found()
    return nothing_answers(detection, settings)
