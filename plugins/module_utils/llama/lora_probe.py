# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lora_cache probe: does a request get an answer decoded on KV of another LoRA scale?

Four paths, each measured on its own (llama.cpp b11434 tools/server/server-context.cpp):

- per_request_restore: requests carry a ``lora`` field; the prompt was pushed out of its slot
  and comes back from the RAM cache (``get_available_slot`` loads it by tokens only).
- per_request_slot: the same prompt again in the same slot. ``launch_slot_with_task`` compares
  the request's adapters with the slot's and clears the slot when they differ.
- global_restore / global_slot: scales set with ``POST /lora-adapters``, requests without a
  ``lora`` field. ``launch_slot_with_task`` then takes the global adapters and compares nothing.

For each path and each marker (a fresh random prompt) two sequences run: the cross one (prompt
computed fully under scale 0, scale switched to 1, prompt asked again) and the same-scale control
(computed under 1, asked again under 1). Reusing KV changes an answer now and then even at the
same scale (batch shapes change the arithmetic), so one differing answer proves nothing; the
control measures that noise. Answers are compared by the first generated token's distribution
(top ``N_PROBS`` alternatives, total variation distance), which separates the two cleanly on the
server ``make test`` builds: cross-scale 0.14 to 0.32, same-scale 0 to 0.02.

Bounded: ``4 + markers x (24 + 4 x slots)`` requests at most (slots capped at 16), temperature 0,
``N_PREDICT`` tokens, 60 s per request and 300 s in all. A path whose first cross-scale request
reuses no KV of the probe prompt is measured once. The global scales are put back and read back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import binascii
import math
import os

from ansible_collections.homelab.postmortem.plugins.module_utils.llama.probes import FILLER_TEXT, PROBE_TEXT, Session, slot_count
from ansible_collections.homelab.postmortem.plugins.module_utils.loopback_http import ProbeFailure

PATHS = ('per_request_restore', 'per_request_slot', 'global_restore', 'global_slot')
PATH_LABELS = {
    'per_request_restore': 'per-request "lora", prompt restored from the RAM cache',
    'per_request_slot': 'per-request "lora", prefix reused in the same slot',
    'global_restore': 'POST /lora-adapters, prompt restored from the RAM cache',
    'global_slot': 'POST /lora-adapters, prefix reused in the same slot',
}
FIRST_SCALE = 0.0
SECOND_SCALE = 1.0
N_PREDICT = 4
N_PROBS = 10
# Above this total variation distance two first-token distributions disagree. Same-scale
# reuse measured 0 to 0.02 here, a scale change 0.14 and more.
DISAGREE_DISTANCE = 0.05
DEFAULT_MARKERS = 3


def _marker():
    return binascii.hexlify(os.urandom(4)).decode()


def first_token_distribution(reply):
    """{token: probability} of the first generated token's top alternatives, or None.

    Newer servers send ``top_logprobs`` (``token``, ``logprob``), older ones ``probs``
    (``tok_str``, ``prob``). Anything else, or a number that is not a probability, gives None.
    """
    probs = reply.get('completion_probabilities') if isinstance(reply, dict) else None
    if not isinstance(probs, list) or not probs or not isinstance(probs[0], dict):
        return None
    items = probs[0].get('top_logprobs') or probs[0].get('top_probs') or probs[0].get('probs')
    if not isinstance(items, list):
        return None
    distribution = {}
    for item in items:
        if not isinstance(item, dict):
            return None
        token = item.get('token', item.get('tok_str'))
        if 'logprob' in item:
            value = item['logprob']
            probability = math.exp(value) if isinstance(value, (int, float)) and -1e4 < value <= 0 else None
        else:
            value = item.get('prob')
            probability = float(value) if isinstance(value, (int, float)) and 0 <= value <= 1 else None
        if not isinstance(token, str) or probability is None:
            return None
        distribution[token] = max(probability, distribution.get(token, 0.0))
    return distribution or None


def distance(first, second):
    """Total variation distance; a token outside one list gets that list's smallest probability
    (an upper bound on what it had)."""
    floor_first, floor_second = min(first.values()), min(second.values())
    return 0.5 * sum(abs(first.get(t, floor_first) - second.get(t, floor_second)) for t in set(first) | set(second))


def compare(answer, reference):
    """(distance or None, disagrees) between two replies."""
    if answer['distribution'] and reference['distribution']:
        value = distance(answer['distribution'], reference['distribution'])
        return round(value, 4), value > DISAGREE_DISTANCE
    return None, answer['content'] != reference['content']


class Sequences(object):
    """The cross and control sequences of one path, on one server."""

    def __init__(self, session, adapter_ids, slots, force_cache_prompt):
        self.session = session
        self.adapter_ids = adapter_ids
        self.slots = slots
        # None: the measured request leaves cache_prompt to the server, as most clients do.
        self.measured_cache_prompt = True if force_cache_prompt else None
        self.global_scale = None

    def scales(self, value):
        return [{'id': i, 'scale': value} for i in self.adapter_ids]

    def set_global(self, value):
        if self.global_scale != value:
            self.session.call('/lora-adapters', 'POST', self.scales(value))
            self.global_scale = value

    def complete(self, prompt, mode, scale, cache_prompt, n_predict=N_PREDICT, id_slot=None):
        extra = {'n_probs': N_PROBS}
        if id_slot is not None:
            extra['id_slot'] = id_slot
        if mode == 'global':
            self.set_global(scale)
        answer = self.session.complete(prompt, self.scales(scale) if mode == 'per_request' else None, cache_prompt,
                                       n_predict, **extra)
        answer['distribution'] = first_token_distribution(answer['reply'])
        return answer

    def run(self, mode, restore, first, then):
        """One sequence; returns the measured request against its uncached reference."""
        prompt = '%s: %s' % (_marker(), PROBE_TEXT)
        # cache_prompt false: computed fully under `first`, and still left in the slot.
        computed = self.complete(prompt, mode, first, False)
        if restore:
            for _index in range(self.slots):
                # Each filler starts with its own marker, so slot selection by prompt
                # similarity sends them to every slot in turn (LRU).
                self.complete('%s: %s' % (_marker(), FILLER_TEXT), mode, then, False, n_predict=1)
            measured = self.complete(prompt, mode, then, self.measured_cache_prompt)
        else:
            measured = self.complete(prompt, mode, then, self.measured_cache_prompt, id_slot=computed['id_slot'])
        reference = computed if first == then else self.complete(prompt, mode, then, False)
        result = {'cache_n': measured['cache_n'], 'answer': measured['content'], 'reference': reference['content']}
        result['distance'], result['disagrees'] = compare(measured, reference)
        if first != then:
            result['scale_effect'], result['informative'] = compare(computed, reference)
        return result

    def measure(self, path, markers):
        mode = 'per_request' if path.startswith('per_request') else 'global'
        restore = path.endswith('_restore')
        # After a filler the measured prompt may share its first token (BOS) with it; that
        # token was computed under the measured scale.
        floor = 1 if restore else 0
        runs = []
        for _index in range(markers):
            cross = self.run(mode, restore, FIRST_SCALE, SECOND_SCALE)
            control = self.run(mode, restore, SECOND_SCALE, SECOND_SCALE)
            runs.append({'cross': cross, 'control': control})
            if len(runs) == 1 and cross['cache_n'] is not None and cross['cache_n'] <= floor:
                break
        return judge(path, runs, markers, floor)


def _reused(run, floor):
    return run['cache_n'] is None or run['cache_n'] > floor


def judge(path, runs, markers, floor):
    """The verdict of one path from its cross-scale runs and same-scale controls."""
    cross = [r['cross'] for r in runs]
    control = [r['control'] for r in runs]
    result = {
        'label': PATH_LABELS[path], 'markers': len(runs),
        'cross_cache_n': [c['cache_n'] for c in cross], 'control_cache_n': [c['cache_n'] for c in control],
        'runs': runs,
    }
    if not any(_reused(c, floor) for c in cross):
        control_note = ('the same-scale control reused %s tokens' % control[0]['cache_n']
                        if _reused(control[0], floor) else 'the same-scale control reused nothing either: the path is off')
        result.update(verdict='ok', reason='the cross-scale request reused no KV of the probe prompt (cache_n %s); %s'
                      % (cross[0]['cache_n'], control_note))
        return result
    informative = [r for r in runs if r['cross'].get('informative')]
    cross_bad = sum(1 for r in informative if _reused(r['cross'], floor) and r['cross']['disagrees'])
    control_bad = sum(1 for c in control if _reused(c, floor) and c['disagrees'])
    margin = max(2, -(-2 * markers // 3))
    result.update(cross_disagreed=cross_bad, control_disagreed=control_bad, informative=len(informative))
    counts = ('%d of %d cross-scale answers disagreed with the uncached ones, %d of %d same-scale controls'
              % (cross_bad, len(runs), control_bad, len(runs)))
    if not informative:
        result.update(verdict='unknown', reason='the adapter scale does not change the probe prompt\'s answer, '
                                                'so a mix-up cannot show')
    elif cross_bad - control_bad >= margin:
        result.update(verdict='affected', reason='%s (cache_n %s)' % (counts, result['cross_cache_n']))
    elif cross_bad == 0:
        result.update(verdict='ok', reason='KV was reused across the scale change, but %s' % counts)
    elif cross_bad <= control_bad:
        result.update(verdict='unknown', reason='%s: reuse at the same scale changes answers as often, which would '
                                                'hide a mix-up' % counts)
    else:
        result.update(verdict='unknown', reason='inconclusive: %s; more markers (setting probe_markers) would tell'
                      % counts)
    return result


def lora_cache(base, key=None, global_path=True, markers=DEFAULT_MARKERS, force_cache_prompt=False):
    """Measure every path; returns evidence with ``paths`` and an overall ``verdict``."""
    session = Session(base, key)
    evidence = {'url': base, 'markers': markers, 'measured_cache_prompt': 'true' if force_cache_prompt else 'server default'}
    paths = evidence['paths'] = {}
    try:
        slots = slot_count(session)
        original = session.call('/lora-adapters')
        if not isinstance(original, list) or not original or not all(isinstance(a, dict) and 'id' in a for a in original):
            return dict(evidence, verdict='unknown', reason='the server has no LoRA adapter loaded',
                        requests=session.requests)
        evidence.update(slots=slots, adapters=[{'id': a['id'], 'scale': a.get('scale')} for a in original])
        sequences = Sequences(session, [a['id'] for a in original], slots, force_cache_prompt)
        for path in PATHS[:2]:
            paths[path] = sequences.measure(path, markers)
        if global_path:
            _measure_global(session, sequences, original, markers, paths)
        else:
            reason = ('started with --lora-init-without-apply: GET /lora-adapters does not show the scale in '
                      'effect, so it could not be put back exactly')
            for path in PATHS[2:]:
                paths[path] = {'label': PATH_LABELS[path], 'verdict': 'skipped', 'reason': reason}
    except ProbeFailure as exc:
        evidence.update(verdict='unknown', reason=exc.reason, requests=session.requests)
        return evidence
    verdicts = [part['verdict'] for part in paths.values()]
    if 'affected' in verdicts:
        evidence['verdict'] = 'affected'
    elif all(v == 'ok' for v in verdicts):
        evidence['verdict'] = 'ok'
    else:
        evidence['verdict'] = 'unknown'
    evidence['requests'] = session.requests
    return evidence


def _measure_global(session, sequences, original, markers, paths):
    restore = [{'id': a['id'], 'scale': a.get('scale')} for a in original]
    try:
        for path in PATHS[2:]:
            paths[path] = sequences.measure(path, markers)
    finally:
        session.call('/lora-adapters', 'POST', restore)
        after = session.call('/lora-adapters')
    restored = isinstance(after, list) and [{'id': a.get('id'), 'scale': a.get('scale')}
                                            for a in after if isinstance(a, dict)] == restore
    paths['global_slot']['scales_restored'] = restored
    if not restored:
        raise ProbeFailure('global LoRA scales could not be put back: now %s' % (after,))
