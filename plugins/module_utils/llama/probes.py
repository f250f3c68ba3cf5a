# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Opt-in probes that measure llama-server failures on the running server.

Bounded: a fixed number of requests (lora_cache: 15 + 2 x slots, slots capped
at 16; spec_logprobs: 2),
temperature 0, a few tokens each, a per-request timeout and an overall
deadline. The server is left as it was found: per-request LoRA scales do not
touch the server's own, and the global scales the lora_cache probe changes are
put back and read back. API keys are sent, never recorded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import os
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

    def complete(self, prompt, lora=None, cache_prompt=True, **extra):
        body = {'prompt': prompt, 'n_predict': N_PREDICT, 'temperature': 0, 'cache_prompt': cache_prompt}
        if lora is not None:
            body['lora'] = lora
        body.update(extra)
        reply = self.call('/completion', 'POST', body)
        if not isinstance(reply, dict) or 'content' not in reply:
            raise ProbeFailure('/completion answered without "content": is this llama-server?')
        timings = reply.get('timings') or {}
        return {'content': reply['content'], 'cache_n': timings.get('cache_n'), 'prompt_n': timings.get('prompt_n'),
                'completion_probabilities': reply.get('completion_probabilities')}


def _marker():
    return binascii.hexlify(os.urandom(4)).decode()


def _slot_count(session):
    props = session.call('/props')
    if not isinstance(props, dict):
        raise ProbeFailure('/props did not answer an object: is this llama-server?')
    slots = props.get('total_slots') or 1
    if not isinstance(slots, int) or slots < 1:
        raise ProbeFailure('/props total_slots=%r is not a slot count' % (slots,))
    if slots > MAX_SLOTS:
        raise ProbeFailure('%d slots: more than the %d this probe fills to stay bounded' % (slots, MAX_SLOTS))
    return slots


def _verdict(cached, uncached_on, uncached_off):
    """Compare the cached answer under scale B with uncached answers under B and under A."""
    result = {
        'cache_n': cached['cache_n'], 'prompt_n': cached['prompt_n'],
        'answer': cached['content'], 'uncached_answer': uncached_on['content'],
    }
    if not cached['cache_n']:
        result['verdict'] = 'ok'
        result['reason'] = 'the cache never restored the probe'
    elif uncached_on['content'] == uncached_off['content']:
        result['verdict'] = 'unknown'
        result['reason'] = 'the adapter scale does not change the answer to the probe prompt, so a mix-up cannot show'
    elif cached['content'] != uncached_on['content']:
        result['verdict'] = 'affected'
        result['reason'] = ('%s of %s prompt tokens came from a cache entry computed under the other scale, '
                            'and the answer differs from the uncached one' % (cached['cache_n'],
                                                                              (cached['cache_n'] or 0) + (cached['prompt_n'] or 0)))
    else:
        result['verdict'] = 'ok'
        result['reason'] = 'the cache restored the probe and the answer matched the uncached one'
    return result


def lora_cache(base, key=None, global_path=True):
    """The A, B, A sequence, per request and (optionally) through POST /lora-adapters."""
    session = Session(base, key)
    evidence = {'url': base}
    try:
        slots = _slot_count(session)
        original = session.call('/lora-adapters')
        if not isinstance(original, list) or not original:
            return dict(evidence, verdict='unknown', reason='the server has no LoRA adapter loaded')
        ids = [a['id'] for a in original]
        evidence.update(slots=slots, adapters=[{'id': a['id'], 'scale': a.get('scale')} for a in original])

        def scales(value):
            return [{'id': i, 'scale': value} for i in ids]

        marker = _marker()
        probe = 'Probe %s: %s' % (marker, PROBE_TEXT)
        session.complete(probe, scales(0.0))
        for index in range(slots):  # push the probe out of every slot into the RAM cache
            session.complete('Filler %s-%d: %s' % (marker, index, FILLER_TEXT), scales(1.0))
        cached = session.complete(probe, scales(1.0))
        on = session.complete(probe, scales(1.0), cache_prompt=False)
        off = session.complete(probe, scales(0.0), cache_prompt=False)
        evidence['per_request'] = _verdict(cached, on, off)

        if global_path:
            evidence['global'] = _global_path(session, original, scales, slots)
        else:
            evidence['global'] = {'verdict': 'skipped',
                                  'reason': 'started with --lora-init-without-apply: GET /lora-adapters does not show '
                                            'the scale in effect, so it could not be put back exactly'}
    except ProbeFailure as exc:
        evidence.update(verdict='unknown', reason=exc.reason, requests=session.requests)
        return evidence
    verdicts = [evidence['per_request']['verdict'], evidence['global']['verdict']]
    if 'affected' in verdicts:
        evidence['verdict'] = 'affected'
    elif 'ok' in verdicts:
        evidence['verdict'] = 'ok' if 'unknown' not in verdicts else 'unknown'
    else:
        evidence['verdict'] = 'unknown'
    evidence['requests'] = session.requests
    return evidence


def _global_path(session, original, scales, slots):
    restore = [{'id': a['id'], 'scale': a.get('scale')} for a in original]
    try:
        marker = _marker()
        probe = 'Global %s: %s' % (marker, PROBE_TEXT)
        session.call('/lora-adapters', 'POST', scales(0.0))
        session.complete(probe)
        session.call('/lora-adapters', 'POST', scales(1.0))
        for index in range(slots):
            session.complete('Filler %s-%d: %s' % (marker, index, FILLER_TEXT))
        cached = session.complete(probe)
        on = session.complete(probe, cache_prompt=False)
        session.call('/lora-adapters', 'POST', scales(0.0))
        off = session.complete(probe, cache_prompt=False)
        result = _verdict(cached, on, off)
    finally:
        session.call('/lora-adapters', 'POST', restore)
        after = session.call('/lora-adapters')
    restored = [{'id': a['id'], 'scale': a.get('scale')} for a in after] == restore
    result['scales_restored'] = restored
    if not restored:
        raise ProbeFailure('global LoRA scales could not be put back: now %s' % after)
    return result


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
