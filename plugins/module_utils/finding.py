# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The finding model shared by every detection.

A finding is a plain dict so that it survives the trip through Ansible facts,
JSON and templates unchanged. See docs/architecture.md for the field contract.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# Ordered from least to most serious. The order matters twice: a finding with
# several instances takes the worst instance status, and the audit's fail
# threshold means "this status or anything after it".
STATUSES = ('not_applicable', 'ok', 'unknown', 'error', 'at_risk', 'affected')
STATUS_RANK = dict((name, rank) for rank, name in enumerate(STATUSES))

FINDING_KEYS = ('id', 'title', 'status', 'summary', 'evidence', 'remediation', 'references')
# What carrying out the fix costs the host: nothing, a service restart, or a reboot.
DISRUPTIONS = ('none', 'restart', 'reboot')
REMEDIATION_KEYS = ('role', 'vars', 'module', 'manual', 'disruption')


class DetectionError(HostInputError):
    """Bad input on the host (a config file that is not text, an include loop...).

    The runner turns it into an ``error`` finding whose summary is the message,
    so the message must be one line a person can act on.
    """


def make_remediation(role=None, role_vars=None, module=None, manual=(), disruption='none'):
    """The one remediation shape every detection uses (see docs/architecture.md)."""
    if disruption not in DISRUPTIONS:
        raise ValueError('unknown disruption %r' % (disruption,))
    return {
        'role': role,
        'vars': dict(role_vars or {}),
        'module': module,
        'manual': list(manual),
        'disruption': disruption,
    }


def worst_status(statuses, default='not_applicable'):
    worst = None
    for status in statuses:
        if status not in STATUS_RANK:
            raise ValueError('unknown status %r' % (status,))
        if worst is None or STATUS_RANK[status] > STATUS_RANK[worst]:
            worst = status
    return default if worst is None else worst


def instance(name, status, summary, evidence=None):
    """One thing a detection looked at: a process, a container, a config line."""
    if status not in STATUS_RANK:
        raise ValueError('unknown status %r' % (status,))
    return {
        'name': name,
        'status': status,
        'summary': summary,
        'evidence': evidence or {},
    }


def make_finding(detection, status, summary, evidence=None, remediation=None, instances=None):
    """Build a finding for ``detection`` (a detection module: ID, TITLE, REFERENCES, REMEDIATION).

    When instances are given the finding's status is the worst of them, and the
    ``status`` argument is only used when there are none.
    """
    evidence = dict(evidence or {})
    if instances:
        status = worst_status(i['status'] for i in instances)
        evidence['instances'] = list(instances)
    if status not in STATUS_RANK:
        raise ValueError('unknown status %r' % (status,))
    return {
        'id': detection.ID,
        'title': detection.TITLE,
        'status': status,
        'summary': summary,
        'evidence': evidence,
        'remediation': remediation if remediation is not None else dict(detection.REMEDIATION),
        'references': list(detection.REFERENCES),
    }


def worst_instance(instances, among=None):
    """The most serious instance, the first of them in the order given (a finding's summary names this
    one, so it never names a less serious instance than the finding's status); None when there is none.
    ``among``: only instances with these statuses count."""
    worst = None
    for item in instances:
        if among is not None and item['status'] not in among:
            continue
        if worst is None or STATUS_RANK[item['status']] > STATUS_RANK[worst['status']]:
            worst = item
    return worst


def error_finding(detection, reason, evidence=None, status='error'):
    """A finding for input we could not use (``error``) or a host that did not answer (``unknown``)."""
    step = ('Fix the condition named in the summary, then audit again.' if status == 'error'
            else 'Find out why the host did not answer in time (the summary names the command), then audit again.')
    return make_finding(detection, status, reason, evidence=evidence, remediation=make_remediation(manual=[step]))


def safe_text(text):
    """Text without lone surrogates: undecodable bytes (surrogateescape) as \\xNN, others as \\uXXXX."""
    try:
        text.encode('utf-8')
        return text
    except UnicodeEncodeError:
        return ''.join(c if not u'\ud800' <= c <= u'\udfff' else
                       ('\\x%02x' % (ord(c) - 0xdc00) if ord(c) >= 0xdc80 else '\\u%04x' % ord(c)) for c in text)


# What leaves a host is bounded in depth and size, here and only here (docs/architecture.md,
# "Hostile input"). ansible-core 2.19's controller fails the task that templates a registered
# result nested about 200 levels deep (measured with a module returning nested facts: 200 passed,
# 250 failed "Recursive loop detected in template"), and that task is the fleet's report. Our own
# evidence nests under 10 levels.
MAX_DEPTH = 64
# One finding's evidence, counted in characters of text (keys and strings; 8 per other value):
# with max_instances instances of ordinary evidence a finding stays far below it.
MAX_EVIDENCE_CHARS = 2 * 1024 * 1024
MAX_SUMMARY_CHARS = 4096
DEPTH_CUT = '(cut: nested deeper than %d levels)'
SIZE_CUT = '(cut: evidence larger than %d characters)'


class _Bounds(object):
    """The limits of one walk and what it had to cut. ``left``: characters left, None for no size bound."""

    def __init__(self, max_depth, max_chars=None):
        self.max_depth = max_depth
        self.max_chars = max_chars
        self.left = max_chars
        self.cut = []

    def cut_depth(self):
        if 'depth' not in self.cut:
            self.cut.append('depth')
        return DEPTH_CUT % self.max_depth

    def cut_size(self):
        if 'size' not in self.cut:
            self.cut.append('size')
        return SIZE_CUT % self.max_chars


def json_safe(value, max_depth=MAX_DEPTH):
    """A copy that strict JSON and ansible-core's controller accept.

    Undecodable bytes never leave the host as lone surrogates (the controller
    refuses a whole result with one), NaN and Infinity become text ('nan',
    'inf'), keys become text. Control characters stay: JSON escapes them.
    A list or dict nested deeper than ``max_depth`` levels below ``value`` is
    replaced by the text DEPTH_CUT, so no value can make this (or the
    controller) recurse without bound.
    """
    return _copy(value, max_depth, _Bounds(max_depth))


def _copy(value, depth_left, bounds):
    """json_safe's walk; with ``bounds.left`` set, the size is bounded too (cut with SIZE_CUT)."""
    if isinstance(value, str):
        text = safe_text(value)
        if bounds.left is not None:
            if len(text) > bounds.left:
                text = text[:max(bounds.left, 0)] + bounds.cut_size()
            bounds.left -= len(text)
        return text
    if isinstance(value, dict):
        if depth_left <= 0:
            return bounds.cut_depth()
        if bounds.left is None:
            return dict((safe_text(str(k)), _copy(v, depth_left - 1, bounds)) for k, v in value.items())
        copied = {}
        for key, item in value.items():
            if bounds.left <= 0:
                copied['(cut)'] = bounds.cut_size()
                break
            key = safe_text(str(key))
            bounds.left -= len(key)
            copied[key] = _copy(item, depth_left - 1, bounds)
        return copied
    if isinstance(value, (list, tuple)):
        if depth_left <= 0:
            return bounds.cut_depth()
        if bounds.left is None:
            return [_copy(v, depth_left - 1, bounds) for v in value]
        copied = []
        for item in value:
            if bounds.left <= 0:
                copied.append(bounds.cut_size())
                break
            copied.append(_copy(item, depth_left - 1, bounds))
        return copied
    if bounds.left is not None:
        bounds.left -= 8
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


def bounded_finding(finding, max_evidence_chars=MAX_EVIDENCE_CHARS, max_depth=MAX_DEPTH):
    """The finding with its summary and evidence bounded (json_safe, plus a size budget), so that
    no input a host hands a detection can make the host's result too deep or too large to travel
    (registry.run_one applies it to every finding). What was cut is marked where it was cut and
    named in ``evidence.cut``."""
    bounds = _Bounds(max_depth, max_evidence_chars)
    evidence = _copy(finding.get('evidence') or {}, max_depth, bounds)
    summary = finding.get('summary')
    summary = safe_text(summary) if isinstance(summary, str) else str(json_safe(summary, 4))
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = summary[:MAX_SUMMARY_CHARS] + ' (cut)'
    if bounds.cut and isinstance(evidence, dict):
        evidence['cut'] = 'cut where marked: %s' % ' and '.join(
            {'depth': 'values nested deeper than %d levels' % max_depth,
             'size': 'evidence beyond %d characters' % max_evidence_chars}[c] for c in bounds.cut)
    result = dict(finding)
    result['summary'] = summary
    result['evidence'] = evidence
    return result


def bound_instances(finding, limit):
    """Keep at most ``limit`` instances, the most serious first, and count the rest by status,
    so a pathological host cannot produce megabytes of facts."""
    instances = (finding.get('evidence') or {}).get('instances')
    if not isinstance(instances, list) or len(instances) <= limit:
        return finding
    ranked = sorted(range(len(instances)), key=lambda i: (-STATUS_RANK.get(instances[i].get('status'), 0), i))
    kept = sorted(ranked[:limit])
    omitted = {}
    for index in ranked[limit:]:
        status = instances[index].get('status')
        omitted[status] = omitted.get(status, 0) + 1
    finding['evidence']['instances'] = [instances[i] for i in kept]
    finding['evidence']['instances_omitted'] = {'count': len(instances) - len(kept), 'by_status': omitted,
                                                'limit': limit}
    return finding
