# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every detection the collection ships, in report order, and how to run them.

A detection is the ``DETECTION`` (a ``detection.Detection``) of a module in
``detections/``: ID, GROUP, TITLE, REFERENCES, REMEDIATION
(``finding.make_remediation``), PROBES, SETTINGS (a spec, see settings.py),
APPLIES, its first question and its verdict. APPLIES says where it can answer:
``image`` (it can read an image through ``root``), ``binary`` (a program it
needs on a live host) and ``root`` (why it needs root, or None). ``absent(ctx)``
says why there is nothing to judge on this live host (a reason makes it
not_applicable, asked before root is required). The registry
enforces APPLIES before ``detect`` runs, so those answers are the same for
every detection, and runs each detection inside its own time budget.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.homelab.postmortem.plugins.module_utils import settings as settings_spec
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import docker_overlay_sandbox
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_sleep_race
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_spec_logprobs
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_format_think
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_gemma4_renderer
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_schema_order
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_export_idmap
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_restart_userns
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_lora_patterns
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import vllm_weight_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError, SettingsError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    bound_instances, bounded_finding, error_finding, make_finding)

DETECTIONS = (
    pi_ir_tx.DETECTION,
    llama_lora_cache.DETECTION,
    llama_spec_logprobs.DETECTION,
    llama_sleep_race.DETECTION,
    podman_restart_userns.DETECTION,
    podman_export_idmap.DETECTION,
    docker_overlay_sandbox.DETECTION,
    ollama_gemma4_renderer.DETECTION,
    ollama_format_think.DETECTION,
    ollama_schema_order.DETECTION,
    vllm_weight_cache.DETECTION,
    vllm_lora_patterns.DETECTION,
)
BY_ID = dict((d.ID, d) for d in DETECTIONS)
GROUPS = ('pi', 'llama', 'podman', 'docker', 'ollama', 'vllm')


class SelectionError(ValueError):
    pass


def groups(available=None):
    """{group: [ids]} for the groups that have detections (a declared check is in several: GROUPS)."""
    found = {}
    for detection in (available or BY_ID).values():
        for group in getattr(detection, 'GROUPS', None) or (detection.GROUP,):
            found.setdefault(group, []).append(detection.ID)
    return found


def select(requested, available=None, suggest=None):
    """gather_subset-style selection: 'all', groups, ids, and '!name' exclusions, in report order.
    ``suggest(name, known)``: a " (did you mean ...?)" for an unknown name (the controller's; a host
    that gets a wrong name was called directly, and says only what it knows)."""
    available = BY_ID if available is None else available
    by_group = groups(available)
    if requested is None:
        requested = ['all']
    cleaned = []
    for item in requested:
        if not isinstance(item, str) or not item.strip():
            raise SelectionError('check names must be non-empty strings, got %r' % (item,))
        cleaned.append(item.strip())
    include, exclude = set(), set()
    for item in cleaned:
        negate = item.startswith('!')
        name = item[1:] if negate else item
        if name == 'all':
            names = set(available)
        elif name in available:
            names = set([name])
        elif name in by_group:
            names = set(by_group[name])
        else:
            hint = suggest(name, list(available) + list(by_group) + ['all']) if suggest else ''
            raise SelectionError('unknown check %r%s; known checks: %s; groups: %s'
                                 % (name, hint, ', '.join(available), ', '.join(sorted(by_group))))
        (exclude if negate else include).update(names)
    if not any(not r.startswith('!') for r in cleaned):
        include = set(available)
    return [d for d in available.values() if d.ID in include - exclude]


# How many unknown names an error names (each with its "did you mean"); the rest are counted.
NAMES_SHOWN = 5


def validate_probes(probes, detections=DETECTIONS, suggest=None):
    """``suggest``: as select's."""
    for probe in probes or []:
        if not isinstance(probe, str):
            raise SelectionError('probe names must be strings, got %s %r' % (type(probe).__name__, probe))
    offered = dict((p, d.ID) for d in detections for p in d.PROBES)
    unknown = [p for p in probes or [] if p not in offered]
    if unknown:
        # Only the first few get a "did you mean" (difflib is slow): 100,000 unknown names took 6.8 s (#49).
        named = list(dict.fromkeys(unknown))
        shown = ', '.join((p + suggest(p, offered)) if suggest else p for p in named[:NAMES_SHOWN])
        more = (' and %d more' % (len(named) - NAMES_SHOWN)) if len(named) > NAMES_SHOWN else ''
        raise SelectionError('unknown probe(s) %s%s; known probes: %s' % (shown, more, ', '.join(sorted(offered)) or 'none'))


def validate_settings(settings):
    """Typed, converted settings for every detection; SelectionError names detection, key and type."""
    try:
        return settings_spec.validate(settings, BY_ID)
    except SettingsError as exc:
        raise SelectionError(str(exc))


def not_applicable_here(ctx, detection):
    """The uniform answer when the detection cannot run on this target, or None."""
    needs = detection.APPLIES
    if not ctx.live and not needs.get('image'):
        return make_finding(detection, 'not_applicable',
                            'Image audit (root=%s): %s reads only a running system.' % (ctx.root, detection.ID))
    binary = needs.get('binary')
    if binary and ctx.live and not ctx.which(binary):
        return make_finding(detection, 'not_applicable', '%s is not installed.' % binary)
    # Whether there is anything to judge, asked before root is required: without root, a host
    # with no Docker socket at all must hear "no Docker daemon", not "needs root".
    absent = getattr(detection, 'absent', None)
    reason = absent(ctx) if absent is not None and ctx.live else None
    if reason:
        return make_finding(detection, 'not_applicable', reason)
    if needs.get('root') and ctx.live and not ctx.is_root:
        return make_finding(detection, 'unknown', 'Needs root (%s): run the audit with become: true.' % needs['root'],
                            evidence={'user': ctx.user_name})
    return None


def run_one(ctx, detection):
    """Run one detection; host input and bugs become findings, never a traceback. Every finding
    leaves bounded in depth and size (finding.bounded_finding), whatever the host handed it."""
    return bounded_finding(_run_one(ctx, detection))


def _run_one(ctx, detection):
    try:
        early = not_applicable_here(ctx, detection)
        if early is not None:
            return early
        with ctx.runner.budget(ctx.detection_timeout):
            return bound_instances(detection.detect(ctx), ctx.max_instances)
    except HostInputError as exc:
        return error_finding(detection, str(exc), status=exc.finding_status)
    except Exception as exc:  # pylint: disable=broad-except
        # A bug in one detection must not cost the host its other findings; say it is ours.
        return error_finding(detection, 'bug in homelab.postmortem (detection %s): %s: %s; please report it'
                             % (detection.ID, type(exc).__name__, exc), evidence={'exception': type(exc).__name__})


def run(ctx, detections):
    findings, timings = {}, {}
    for detection in detections:
        started = time.time()
        findings[detection.ID] = run_one(ctx, detection)
        timings[detection.ID] = round((time.time() - started) * 1000.0, 1)
    return findings, timings
