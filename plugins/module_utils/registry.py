# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every detection the collection ships, in report order, and how to run them.

Adding a detection: write plugins/module_utils/<id>.py with ID, TITLE,
REFERENCES, REMEDIATION, PROBES, SETTINGS and detect(ctx), then list it here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_sleep_race
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_spec_logprobs
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_export_idmap
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import podman_restart_userns
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError, error_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.hostio import ReadProblem

DETECTIONS = (
    pi_ir_tx,
    llama_lora_cache,
    llama_spec_logprobs,
    llama_sleep_race,
    podman_restart_userns,
    podman_export_idmap,
)
BY_ID = dict((d.ID, d) for d in DETECTIONS)


class SelectionError(ValueError):
    pass


def select(requested, available=None):
    """gather_subset-style selection: 'all', ids, and '!id' exclusions, in report order."""
    available = BY_ID if available is None else available
    requested = [str(r).strip() for r in (requested or ['all']) if str(r).strip()]
    include, exclude = set(), set()
    for item in requested:
        negate = item.startswith('!')
        name = item[1:] if negate else item
        if name != 'all' and name not in available:
            raise SelectionError('unknown check %r; known checks: %s' % (name, ', '.join(available)))
        names = set(available) if name == 'all' else set([name])
        (exclude if negate else include).update(names)
    if not any(not r.startswith('!') for r in requested):
        include = set(available)
    return [d for d in available.values() if d.ID in include - exclude]


def validate_probes(probes, detections=DETECTIONS):
    offered = dict((p, d.ID) for d in detections for p in d.PROBES)
    unknown = [p for p in probes or [] if p not in offered]
    if unknown:
        raise SelectionError('unknown probe(s) %s; known probes: %s'
                             % (', '.join(unknown), ', '.join(sorted(offered)) or 'none'))


def validate_settings(settings, detections=DETECTIONS):
    for check_id, values in (settings or {}).items():
        if check_id not in BY_ID:
            raise SelectionError('settings for unknown check %r' % (check_id,))
        if not isinstance(values, dict):
            raise SelectionError('settings.%s must be a dict' % check_id)
        unknown = sorted(set(values) - set(BY_ID[check_id].SETTINGS))
        if unknown:
            raise SelectionError('unknown setting(s) for %s: %s; known: %s'
                                 % (check_id, ', '.join(unknown), ', '.join(sorted(BY_ID[check_id].SETTINGS)) or 'none'))


def run_one(ctx, detection):
    """Run one detection; bad input and bugs become an ``error`` finding, never a traceback."""
    try:
        return detection.detect(ctx)
    except DetectionError as exc:
        return error_finding(detection, str(exc))
    except ReadProblem as exc:
        return error_finding(detection, str(exc))
    except Exception as exc:  # pylint: disable=broad-except
        # A bug in one detection must not cost the host its other findings.
        return error_finding(detection, 'internal error in detection %s: %s: %s'
                             % (detection.ID, type(exc).__name__, exc))


def run(ctx, detections):
    findings, timings = {}, {}
    for detection in detections:
        started = time.time()
        findings[detection.ID] = run_one(ctx, detection)
        timings[detection.ID] = round((time.time() - started) * 1000.0, 1)
    return findings, timings
