# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's interface: every ``postmortem_*`` variable the playbooks read, declared once.

audit_validate checks a run's variables against this before any host is contacted, so a
misspelled variable (``postmortem_check``) stops the run with a "did you mean" instead of being
ignored, and every error names the variable the user set. Names the playbooks and modules set
themselves are OUTPUTS (documented results) or start with INTERNAL_PREFIX (working variables),
so they can never be taken for a user's mistake.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.audit_variables import FAIL_ON_CHOICES, NAMES, PREFIX, VARIABLES

# Set by the modules and playbooks, documented as results: never the user's input.
OUTPUTS = ('postmortem', 'postmortem_run', 'postmortem_declared', 'postmortem_gather', 'postmortem_before',
           'postmortem_remediation')

# Tags Ansible itself gives a meaning to; every other tag must name a detection.
ANSIBLE_SPECIAL_TAGS = ('all', 'always', 'never', 'tagged', 'untagged')


def is_ours(name):
    """Whether ``name`` is in our namespace and must therefore be one we know."""
    return name.startswith(PREFIX) and name not in OUTPUTS


def closest(name, known):
    """The known name a misspelled ``name`` most likely meant, or None: the one "did you mean" of every
    name a user types (variables, check and probe names, tags, fixes)."""
    close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name, known):
    """' (did you mean X?)' for a misspelled ``name``, or ''."""
    suggestion = closest(name, known)
    return (' (did you mean %s?)' % suggestion) if suggestion else ''


def unknown_variables(names):
    """[(name, suggestion or None)] for every postmortem_* name that is neither an input nor an output."""
    found = []
    for name in sorted(set(names)):
        if is_ours(name) and name not in NAMES:
            # Compared without the shared prefix, which would make every name look alike.
            close = closest(name[len(PREFIX):], [n[len(PREFIX):] for n in NAMES])
            found.append((name, PREFIX + close if close else None))
    return found


def describe_unknown(found):
    parts = []
    for name, suggestion in found:
        parts.append('%s is not a variable of homelab.postmortem%s' % (
            name, (' (did you mean %s?)' % suggestion) if suggestion else ''))
    return parts


def _typed_list_items(text):
    """The names in a list typed as text: ``["pi"]``, ``[pi_ir_tx, podman]``, ``['a','b']``."""
    text = text.strip()
    text = text[1:] if text.startswith('[') else text
    text = text[:-1] if text.endswith(']') else text
    items = [item.strip().strip('"\'').strip() for item in text.split(',')]
    return [item for item in items if item]


def typed_list(value, name):
    """A list variable as the module option it feeds reads it: Ansible's list type (check_type_list in
    ansible/module_utils/common/validation.py) splits a string at its commas and strips nothing, so
    ``-e postmortem_checks=pi_ir_tx,podman`` is two names, as ``gather_subset`` takes them. Text that
    looks like a JSON list was meant as one, but ``-e key=value`` never parses JSON (only ``-e '{...}'``
    does), and split at its commas it would be names like '["pi"]': refused, with the form that works.
    A bracket at one end only is the same mistake cut short: in ``-e key=[a, b]`` a space ends the value."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith('[') or text.endswith(']'):
            items = _typed_list_items(text)
            cut = not (text.startswith('[') and text.endswith(']'))
            raise registry.SelectionError(
                "%s is the text %r, not a list (-e %s=... never reads JSON%s): write -e '%s'%s"
                % (name, value, name, ', and a space ends its value' if cut else '', json.dumps({name: items}),
                   (' or -e %s=%s' % (name, ','.join(items))) if items else ''))
        return value.split(',')
    if not isinstance(value, (list, tuple)):
        raise registry.SelectionError('%s must be a list, got %s' % (name, type(value).__name__))
    return list(value)


def _unpadded(items, name):
    """Names the consumer compares as they are (probes on the host, fixes in remediation_plan): a space
    after a comma would make a name that matches nothing, silently."""
    padded = [item for item in items if isinstance(item, str) and item != item.strip()]
    if padded:
        raise registry.SelectionError('%s: %s: a name must not start or end with a space (write a,b, not a, b)'
                                      % (name, ', '.join(repr(item) for item in padded)))
    return items


# Beyond a day per command, or a week per task, a "timeout" is a typo; and 10**10 breaks select().
MAX_SECONDS = 7 * 24 * 3600


def seconds(value, name):
    if isinstance(value, bool):
        raise registry.SelectionError('%s must be a whole number of seconds, got %r' % (name, value))
    try:
        number = int(str(value).strip())
    except ValueError:
        raise registry.SelectionError('%s must be a whole number of seconds, got %r' % (name, value))
    if number < 1:
        raise registry.SelectionError('%s must be at least 1 second, got %d' % (name, number))
    if number > MAX_SECONDS:
        raise registry.SelectionError('%s must be at most %d seconds (a week), got %d' % (name, MAX_SECONDS, number))
    return number


_TRUE = ('true', 'yes', 'on', '1', 't', 'y')
_FALSE = ('false', 'no', 'off', '0', 'f', 'n')


def boolean(value, name):
    """What Ansible's ``bool`` filter accepts, and nothing else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise registry.SelectionError('%s must be true or false, got %r' % (name, value))


def serial(value, name):
    """Ansible's serial: a number of hosts, a percentage, or a list of those (batches that grow)."""
    values = value if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise registry.SelectionError('%s must not be an empty list' % name)
    for item in values:
        text = str(item).strip()
        number = text[:-1] if text.endswith('%') else text
        if isinstance(item, bool) or not number.isdigit() or int(number) < 1 or (text.endswith('%') and int(number) > 100):
            raise registry.SelectionError('%s must be a number of hosts (at least 1) or a percentage (1%% to 100%%), got %r'
                                          % (name, item))
    return value


def remediation_selection(value, name, declared=()):
    """postmortem_remediate: 'all', or ids of detections that have a remediation role. ``declared``:
    the run's declared check ids (their fix is advice, never a role)."""
    items = _unpadded(typed_list(value, name), name)
    with_role = [d.ID for d in registry.DETECTIONS if d.REMEDIATION.get('role')]
    problems, more = [], 0
    for item in dict.fromkeys(items):
        if item == 'all' or item in with_role:
            continue
        if len(problems) >= registry.NAMES_SHOWN:
            more += 1  # counted, not worded: a "did you mean" for 100,000 names took seconds (#49)
            continue
        if item in declared:
            problems.append('%s is a declared check: its fix is advice and a docs link, never a role' % item)
            continue
        if item in registry.BY_ID:
            problems.append('%s has no remediation role (the fix is manual: see its page, %s.md, in the docs)' % (item, item))
            continue
        problems.append('%r is not a detection with a remediation role%s; those are: %s' % (
            item, did_you_mean(item, with_role + ['all']), ', '.join(with_role)))
    if problems:
        raise registry.SelectionError('; '.join(problems) + (('; and %d more name(s) that are not either' % more) if more else ''))
    return items


def check_value(name, value, probes_for=None, available=None):
    """The problem with one variable's value, as a message naming the variable; None when it is fine.
    ``available``: the checks a run can select ({id: detection}: the registry's and the run's declared
    checks; the registry's by default)."""
    kind = dict((v[0], v[1]) for v in VARIABLES)[name]
    try:
        if kind == 'list' and name == 'postmortem_checks':
            registry.select(typed_list(value, name), available, suggest=did_you_mean)
        elif kind == 'list' and name == 'postmortem_probes':
            registry.validate_probes(_unpadded(typed_list(value, name), name), probes_for if probes_for is not None else registry.DETECTIONS,
                                     suggest=did_you_mean)
        elif kind == 'dict':
            registry.validate_settings(value)
        elif kind == 'status':
            if value not in FAIL_ON_CHOICES:
                return '%s: %r is not one of %s' % (name, value, ', '.join(FAIL_ON_CHOICES))
        elif kind == 'seconds':
            seconds(value, name)
        elif kind == 'bool':
            boolean(value, name)
        elif kind == 'serial':
            serial(value, name)
        elif kind == 'remediate':
            remediation_selection(value, name, [cid for cid in available or () if cid not in registry.BY_ID])
        elif kind == 'check_files':
            if value in (None, '', []):
                return None
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) and i.strip() for i in items):
                return '%s must be a path or a list of paths (files or directories of *.yml), got %r' % (name, value)
        elif kind in ('str', 'path'):
            if not isinstance(value, str) or not value.strip():
                return '%s must be a non-empty string, got %r' % (name, value)
        elif kind == 'optional_path':
            if value is not None and not isinstance(value, str):
                return '%s must be a path, got %s %r' % (name, type(value).__name__, value)
    except registry.SelectionError as exc:
        text = str(exc)
        return text if text.startswith(name) else '%s: %s' % (name, text)
    return None


def check_tags(run_tags, skip_tags, declared=()):
    """Problems with --tags/--skip-tags: each must be a detection id (the registry's or a declared
    check's of this run), or one of Ansible's own."""
    known = set(registry.BY_ID) | set(ANSIBLE_SPECIAL_TAGS) | set(declared)
    found, more = [], 0
    for option, tags in (('--tags', run_tags), ('--skip-tags', skip_tags)):
        for tag in dict.fromkeys(tags or ()):
            if tag in known:
                continue
            if len(found) >= registry.NAMES_SHOWN:
                more += 1
                continue
            found.append('%s %s names no detection%s; known: %s' % (
                option, tag, did_you_mean(tag, known), ', '.join(list(registry.BY_ID) + list(declared))))
    return found + (['and %d more tag(s) that name no detection' % more] if more else [])
