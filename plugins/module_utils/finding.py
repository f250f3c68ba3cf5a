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


def json_safe(value):
    """A copy that strict JSON and ansible-core's controller accept.

    Undecodable bytes never leave the host as lone surrogates (the controller
    refuses a whole result with one), NaN and Infinity become text ('nan',
    'inf'), keys become text. Control characters stay: JSON escapes them.
    """
    if isinstance(value, dict):
        return dict((safe_text(str(k)), json_safe(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    if isinstance(value, str):
        return safe_text(value)
    return value


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
