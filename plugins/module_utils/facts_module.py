# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The code behind audit_facts and every <id>_facts module."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import single_compile

# Before the imports below, which are most of the code a host compiles (see single_compile).
single_compile.install(getattr(sys.modules[__name__], '__loader__', None))

from ansible_collections.homelab.postmortem.plugins.module_utils import audit_variables, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import DEFAULT_MAX_INSTANCES, AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import json_safe
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

COLLECTION_VERSION = '0.2.0'
# audit_interface.MAX_SECONDS, which the controller checks the playbook's timeouts against (a unit
# test holds the two equal); not imported from there, which would add its import to every host's start-up.
MAX_SECONDS = 7 * 24 * 3600


def root_problem(root, local_checks=True):
    """Why ``root`` cannot be audited, or None. An image root must be absolute (a relative one
    would depend on where Ansible happens to run) and, on the host, an existing directory."""
    if not isinstance(root, str) or not root:
        return 'root must be an absolute path, got %r' % (root,)
    if not root.startswith('/'):
        return 'root %r is relative; give the absolute path of the mounted image' % root
    if '\x00' in root:
        return 'root contains a NUL byte'
    if local_checks and root != '/':
        if not os.path.exists(root):
            return 'root %s does not exist on this host' % root
        if not os.path.isdir(root):
            return 'root %s is not a directory' % root
    return None


def argument_spec(with_checks):
    default = audit_variables.option_default
    spec = dict(
        probes=dict(type='list', elements='str', default=default('audit_facts', 'probes')),
        # str, not path: path would expand $HOME and ~, auditing somewhere nobody asked for.
        root=dict(type='str', default=default('audit_facts', 'root')),
        settings=dict(type='dict', default=default('audit_facts', 'settings')),
        command_timeout=dict(type='int', default=default('audit_facts', 'command_timeout')),
        detection_timeout=dict(type='int', default=default('audit_facts', 'detection_timeout')),
        max_instances=dict(type='int', default=DEFAULT_MAX_INSTANCES),
    )
    if with_checks:
        spec['checks'] = dict(type='list', elements='str', default=default('audit_facts', 'checks'))
        # The declared checks' questions, as audit_validate made them from postmortem_check_files.
        spec['declared'] = dict(type='list', elements='dict', default=[])
    return spec


def _selection(module, params, check_id):
    """(the built-in detections to run, the declared checks to ask) as ``checks`` selects them."""
    if check_id is not None:
        return [registry.BY_ID[check_id]], []
    if not params.get('declared'):
        return registry.select(params['checks']), []
    # Only when the controller sent some: an audit without declared checks compiles none of their code.
    from ansible_collections.homelab.postmortem.plugins.module_utils.declared import gather as declared_gather
    try:
        declared = declared_gather.checks_from_wire(params['declared'])
    except declared_gather.WireError as exc:
        module.fail_json(msg=str(exc))
    available = dict(registry.BY_ID)
    available.update((check.ID, check) for check in declared)
    selected = registry.select(params['checks'], available)
    return [d for d in selected if d.ID in registry.BY_ID], [d for d in selected if d.ID not in registry.BY_ID]


def main(check_id=None):
    module = AnsibleModule(argument_spec=argument_spec(check_id is None), supports_check_mode=True)
    params = module.params
    try:
        detections, declared = _selection(module, params, check_id)
        registry.validate_probes(params['probes'], detections)
        settings = registry.validate_settings(params['settings'])
    except registry.SelectionError as exc:
        module.fail_json(msg=str(exc))
    problem = root_problem(params['root'])
    if problem:
        module.fail_json(msg=problem)
    for limit in ('command_timeout', 'detection_timeout', 'max_instances'):
        if params[limit] < 1:
            module.fail_json(msg='%s must be at least 1, got %d' % (limit, params[limit]))
    for limit in ('command_timeout', 'detection_timeout'):
        # The playbook's variables were checked on the controller (audit_interface); a direct call is
        # checked here with the same bound: 10**10 s would break select() in the runner.
        if params[limit] > MAX_SECONDS:
            module.fail_json(msg='%s must be at most %d seconds (a week), got %d' % (limit, MAX_SECONDS, params[limit]))

    ctx = AuditContext(root=params['root'], probes=params['probes'], settings=settings,
                       runner=CommandRunner(timeout=params['command_timeout']), which=module.get_bin_path,
                       detection_timeout=params['detection_timeout'], max_instances=params['max_instances'])
    findings, timings = registry.run(ctx, detections)
    facts = {'postmortem': findings}
    if declared:
        from ansible_collections.homelab.postmortem.plugins.module_utils.declared import gather as declared_gather
        facts['postmortem_declared'], declared_timings = declared_gather.run(ctx, declared)
        timings.update(declared_timings)
    facts['postmortem_run'] = {
        'collection_version': COLLECTION_VERSION,
        'checks': [d.ID for d in detections],
        'declared': [d.ID for d in declared],
        'probes': list(params['probes']),
        'root': ctx.root,
        'command_timeout': params['command_timeout'],
        'detection_timeout': params['detection_timeout'],
        'live': ctx.live,
        'duration_ms': timings,
    }
    # Strict JSON, whatever the host handed us: one bad byte must not cost the host its result.
    module.exit_json(changed=False, ansible_facts=json_safe(facts))
