# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module the audit imports is compiled from the AnsiballZ payload on every host, every run
(docs/performance.md): a host with no Docker socket, nothing listening where Ollama would be and no
vLLM process loads none of the Docker, Ollama or vLLM client code, and gets the same answers; a
detection whose first question finds nothing to judge does not load its verdict (verdicts/<id>.py).

The whole audit runs in a fresh interpreter against this machine, as audit_facts runs it (the first
test with an empty process table, so that other tests' servers on this machine do not count)."""

from __future__ import absolute_import, division, print_function

import json
import os
import socket
import subprocess
import sys

from helpers import BUILD

COLLECTIONS_PATH = os.path.join(BUILD, 'collections')  # what install-collection.sh installed

PREFIX = 'ansible_collections.homelab.postmortem.plugins.module_utils.'
HEAVY = ['docker.api', 'docker.dockerd', 'docker.netns', 'docker.overlay_evidence',
         'ollama.api', 'ollama.chat_path', 'ollama.version', 'ollama.renderer',
         'vllm.adapters', 'vllm.lora_scale', 'vllm.safetensors', 'vllm.checkpoint', 'vllm.weight_cache',
         'vllm.weight_cache_socket', 'vllm.key_matcher']

# The not_applicable answers each detection gives from its first question, before its verdict loads.
FIRST_QUESTION = {
    'docker_overlay_sandbox': 'No Docker daemon socket at ',
    'llama_lora_cache': 'No llama-server process or router preset found.',
    'llama_sleep_race': 'No llama-server process or router preset found.',
    'llama_spec_logprobs': 'No llama-server process found.',
    'ollama_format_think': 'No Ollama answers at ',
    'ollama_gemma4_renderer': 'No Ollama answers at ',
    'ollama_schema_order': 'No Ollama answers at ',
    'pi_ir_tx': 'No Raspberry Pi boot config ',
    'podman_restart_userns': 'No rootful container has a restart policy (0 container(s)).',
    'vllm_lora_patterns': 'No PEFT adapter found ',
    'vllm_weight_cache': 'No vLLM process found.',
}

AUDIT = '''
import json, sys
sys.path.insert(0, %r)
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
settings = registry.validate_settings(json.loads(%r))
findings, _timings = registry.run(AuditContext(root='/', proc_root=%r, settings=settings), registry.DETECTIONS)
print(json.dumps({'findings': dict((k, [v['status'], v['summary']]) for k, v in findings.items()),
                  'modules': sorted(sys.modules)}))
'''


def _audit(settings, proc_root='/proc'):
    code = AUDIT % (COLLECTIONS_PATH, json.dumps(settings), proc_root)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True, timeout=120).stdout
    return json.loads(out)


def _free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_a_host_without_docker_ollama_or_vllm_loads_none_of_their_code(tmp_path):
    # Nothing listens on this port, no socket is at this path and the process table is empty: the
    # detections are asked about them instead of 11434, /var/run/docker.sock and /proc, where other
    # tests on this machine may be serving Ollama, dockerd or a llama-server.
    empty_proc = tmp_path / 'proc'
    empty_proc.mkdir()
    url = 'http://127.0.0.1:%d' % _free_port()
    no_socket = str(tmp_path / 'docker.sock')
    settings = dict((check, {'url': url}) for check in ('ollama_gemma4_renderer', 'ollama_format_think',
                                                        'ollama_schema_order'))
    settings['docker_overlay_sandbox'] = {'socket': no_socket}
    result = _audit(settings, proc_root=str(empty_proc))
    findings = result['findings']
    assert findings['docker_overlay_sandbox'] == ['not_applicable', 'No Docker daemon socket at %s.' % no_socket]
    for check in ('ollama_gemma4_renderer', 'ollama_format_think', 'ollama_schema_order'):
        assert findings[check] == ['not_applicable', 'No Ollama answers at %s.' % url]
    assert findings['vllm_lora_patterns'] == ['not_applicable',
                                              'No PEFT adapter found (setting adapter_paths, --lora-modules).']
    assert [name for name in HEAVY if PREFIX + name in result['modules']] == []
    answered_early = [check for check, start in FIRST_QUESTION.items()
                      if findings[check][0] == 'not_applicable' and findings[check][1].startswith(start)]
    # Everything but podman_restart_userns (this machine's root may have containers of other tests).
    assert set(FIRST_QUESTION) - {'podman_restart_userns'} <= set(answered_early)
    assert [check for check in answered_early if PREFIX + 'verdicts.' + check in result['modules']] == []
    assert PREFIX + 'llama.server' not in result['modules']  # the process table is llama/processes.py


def test_something_listening_where_ollama_would_be_loads_the_client_and_asks_it():
    """The cheap check only stands in for "nothing accepts a connection": a listener that is not Ollama
    is asked by the real client, which loads and says what it got."""
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        url = 'http://127.0.0.1:%d' % listener.getsockname()[1]
        # The listener accepts (the kernel completes the handshake) and never answers: 1 s per request.
        result = _audit({'ollama_gemma4_renderer': {'url': url, 'timeout': 1},
                         'ollama_format_think': {'url': url, 'timeout': 1},
                         'ollama_schema_order': {'url': url, 'timeout': 1}})
    assert PREFIX + 'ollama.api' in result['modules']
    for check in ('ollama_gemma4_renderer', 'ollama_format_think', 'ollama_schema_order'):
        status, summary = result['findings'][check]
        assert status != 'not_applicable', summary
        assert url in summary
