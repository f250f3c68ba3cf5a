# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opt-in probes that measure llama-server failures on the running server.

Bounded: a fixed number of requests (spec_logprobs: 2; lora_cache: see
lora_probe.py), temperature 0, a few tokens each, a per-request timeout and an
overall deadline. The server is left as it was found. API keys are sent, never
recorded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.homelab.postmortem.plugins.module_utils.loopback_http import ProbeFailure, request_json

REQUEST_TIMEOUT = 60.0
DEADLINE_SECONDS = 300.0
MAX_SLOTS = 16
N_PREDICT = 16
PROBE_TEXT = 'once upon a time in a small village there lived an old clockmaker who'
FILLER_TEXT = 'a completely different text about the weather in the mountains during a long cold winter'


class Session(object):
    """Requests to one server, with its API key and the probe's overall deadline."""

    def __init__(self, base, key=None, deadline=DEADLINE_SECONDS):
        self.base = base
        self.headers = {'Authorization': 'Bearer %s' % key} if key else {}
        self.deadline = time.time() + deadline
        self.requests = 0

    def call(self, path, method='GET', body=None):
        if time.time() > self.deadline:
            raise ProbeFailure('probe deadline of %d s passed' % DEADLINE_SECONDS)
        self.requests += 1
        timeout = max(1.0, min(REQUEST_TIMEOUT, self.deadline - time.time()))
        return request_json(self.base + path, method=method, body=body, timeout=timeout, headers=self.headers)[1]

    def complete(self, prompt, lora=None, cache_prompt=True, n_predict=N_PREDICT, **extra):
        """One /completion at temperature 0; ``cache_prompt`` None leaves it to the server's default."""
        body = {'prompt': prompt, 'n_predict': n_predict, 'temperature': 0}
        if cache_prompt is not None:
            body['cache_prompt'] = cache_prompt
        if lora is not None:
            body['lora'] = lora
        body.update(extra)
        reply = self.call('/completion', 'POST', body)
        if not isinstance(reply, dict) or not isinstance(reply.get('content'), str):
            raise ProbeFailure('/completion answered without a "content" string: is this llama-server?')
        timings = reply.get('timings') if isinstance(reply.get('timings'), dict) else {}
        cache_n, slot = timings.get('cache_n'), reply.get('id_slot')
        return {'content': reply['content'], 'reply': reply,
                'cache_n': cache_n if isinstance(cache_n, int) and not isinstance(cache_n, bool) else None,
                'prompt_n': timings.get('prompt_n'),
                'id_slot': slot if isinstance(slot, int) and not isinstance(slot, bool) else None,
                'completion_probabilities': reply.get('completion_probabilities')}


def slot_count(session):
    props = session.call('/props')
    if not isinstance(props, dict):
        raise ProbeFailure('/props did not answer an object: is this llama-server?')
    slots = props.get('total_slots') or 1
    if not isinstance(slots, int) or slots < 1:
        raise ProbeFailure('/props total_slots=%r is not a slot count' % (slots,))
    if slots > MAX_SLOTS:
        raise ProbeFailure('%d slots: more than the %d this probe fills to stay bounded' % (slots, MAX_SLOTS))
    return slots


def spec_logprobs(base, key=None, n_probs=3):
    """Does the server speculate (per /slots), and are logprobs after the first token real?"""
    session = Session(base, key)
    evidence = {'url': base, 'n_probs': n_probs}
    try:
        slots = session.call('/slots')
        if not isinstance(slots, list):
            raise ProbeFailure('/slots did not answer a list: is this llama-server?')
        speculative = [bool(s.get('speculative')) for s in slots if isinstance(s, dict)]
        evidence['slots_speculative'] = speculative
        if not any(speculative):
            return dict(evidence, verdict='ok', reason='/slots reports no speculative decoding',
                        requests=session.requests)
        reply = session.complete('The capital of France is', None, cache_prompt=False, n_probs=n_probs)
    except ProbeFailure as exc:
        return dict(evidence, verdict='unknown', reason=exc.reason, requests=session.requests)
    probs = reply.get('completion_probabilities') or []
    after_first = probs[1:]
    empty = [p for p in after_first if not (p.get('top_logprobs') or p.get('top_probs'))]
    evidence.update(
        tokens=len(probs),
        after_first=len(after_first),
        empty_alternatives=len(empty),
        zero_logprob=sum(1 for p in after_first if p.get('logprob') == 0.0),
        first_alternatives=len((probs[0].get('top_logprobs') or probs[0].get('top_probs') or []) if probs else []),
        requests=session.requests,
    )
    if not probs:
        evidence.update(verdict='unknown', reason='the reply had no completion_probabilities')
    elif empty:
        evidence.update(verdict='affected', reason='%d of %d tokens after the first came back with no alternatives'
                        % (len(empty), len(after_first)))
    else:
        evidence.update(verdict='ok', reason='every token came back with alternatives')
    return evidence
