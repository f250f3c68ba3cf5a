# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The remediation roles' declared options, read from their ``meta/argument_specs.yml``.

The specs are the one declaration of what a role accepts and which of its options allow a
disruption (a description that starts with ``Disruptive:``). The remediation plan, the role
READMEs and the tests all read them here, so no list of switches is kept by hand.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

COLLECTION = 'homelab.postmortem'
DISRUPTIVE = 'Disruptive:'


def roles_dir():
    """The collection's roles/ (a checkout or an installed collection: the same relative place)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(os.path.dirname(here)), 'roles')


def short_name(role):
    """'homelab.postmortem.pi_ir_tx' -> 'pi_ir_tx'; None for a role of another collection."""
    prefix = COLLECTION + '.'
    if not isinstance(role, str) or not role.startswith(prefix):
        return None
    return role[len(prefix):]


def load(role, directory=None):
    """The entry point ``main`` of a role's argument spec ({} when the role has none)."""
    name = short_name(role) or role
    path = os.path.join(directory or roles_dir(), name, 'meta', 'argument_specs.yml')
    try:
        with open(path, encoding='utf-8') as handle:
            return (yaml.safe_load(handle) or {}).get('argument_specs', {}).get('main', {}) or {}
    except (IOError, OSError):
        return {}


def is_switch(option):
    description = option.get('description')
    first = (description[0] if isinstance(description, list) and description else description) or ''
    return str(first).startswith(DISRUPTIVE)


def switches(spec):
    """[(name, option)] of the options that allow a disruption, by name."""
    return [(name, option) for name, option in sorted((spec.get('options') or {}).items()) if is_switch(option)]


def switch_is_on(option, value):
    """Whether a switch's value turns its disruption on: true for a bool, non-empty for a list."""
    if option.get('type') == 'list':
        return bool(value)
    return bool(value) and str(value).lower() not in ('false', 'no', 'off', '0', 'n', 'f')
