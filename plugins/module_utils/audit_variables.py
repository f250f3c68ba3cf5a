# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The playbooks' variables, declared once: name, type, default, which playbooks read them, meaning,
and which module option each one feeds (whose default is the variable's).

Kept apart from audit_interface (the checks) so that audit_facts, which takes its option defaults
from here on every host, compiles no more than this table.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUSES
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import DEFAULT_COMMAND_TIMEOUT, DEFAULT_DETECTION_TIMEOUT

PREFIX = 'postmortem_'
INTERNAL_PREFIX = '_postmortem_'
DEFAULT_TASK_TIMEOUT = 1800
FAIL_ON_CHOICES = ('never',) + STATUSES

# name: (type, default, playbooks that read it, description). Types: str, list, dict, bool, seconds,
# path, optional_path ('' for none), check_files (a path or a list of them), status, serial, remediate.
# Order: as the README lists them.
VARIABLES = (
    ('postmortem_hosts', 'str', 'all', ('audit', 'remediate'), 'Host pattern to audit.'),
    ('postmortem_checks', 'list', ['all'], ('audit', 'remediate'),
     'Detection ids and groups, gather_subset style (all, a group, an id, !exclusions).'),
    ('postmortem_probes', 'list', [], ('audit', 'remediate'), 'Opt-in probes to run.'),
    ('postmortem_root', 'path', '/', ('audit', 'remediate'), 'Alternate filesystem root, for image audits (per host).'),
    ('postmortem_settings', 'dict', {}, ('audit', 'remediate'), 'Per-detection settings.'),
    ('postmortem_check_files', 'check_files', [], ('audit', 'remediate'),
     'Your own declared checks: a YAML file, a directory of *.yml, or a list of them, on the controller '
     '(docs/declared_checks.md). The same for every host of a run.'),
    ('postmortem_report_dir', 'path', 'postmortem-report', ('audit', 'remediate'), 'Where the reports go.'),
    ('postmortem_fail_on', 'status', 'never', ('audit', 'remediate'),
     'Fail when a finding is at or above this status.'),
    ('postmortem_fail_on_unaudited', 'bool', True, ('audit', 'remediate'),
     'Hosts that could not be audited fail the gate too.'),
    ('postmortem_fail_on_no_hosts', 'bool', True, ('audit', 'remediate'),
     'Fail when the run audited no host at all, whatever postmortem_fail_on is: none matched (an empty inventory, '
     'a pattern that matches nothing), or every host was unreachable or failed.'),
    ('postmortem_become', 'bool', False, ('audit', 'remediate'), 'Run the audit with become.'),
    ('postmortem_command_timeout', 'seconds', DEFAULT_COMMAND_TIMEOUT, ('audit', 'remediate'),
     'Seconds one host command may take.'),
    ('postmortem_detection_timeout', 'seconds', DEFAULT_DETECTION_TIMEOUT, ('audit', 'remediate'),
     "Seconds one detection's commands may take together."),
    ('postmortem_task_timeout', 'seconds', DEFAULT_TASK_TIMEOUT, ('audit', 'remediate'),
     'Seconds the whole audit task (and each task of a fix) may take on a host: the last guard.'),
    ('postmortem_previous', 'optional_path', '', ('audit',),
     'An earlier postmortem.json to compare with (default: the last audit recorded in the report directory).'),
    ('postmortem_accept', 'optional_path', '', ('audit', 'remediate'),
     'A YAML file of accepted findings (host, check, reason, expires): shown as accepted, never failing the gate.'),
    ('postmortem_fail_on_new_only', 'bool', False, ('audit',),
     'The gate fails only on findings opened or reopened since the previous audit (and hosts newly not audited).'),
    ('postmortem_textfile_dir', 'optional_path', '', ('audit',),
     "Also write postmortem.prom there, atomically: node_exporter's --collector.textfile.directory."),
    ('postmortem_remediate', 'remediate', ['all'], ('remediate',), "Detection ids whose fixes may run ('all': every one)."),
    ('postmortem_remediate_accepted', 'bool', False, ('remediate',), 'Fix accepted findings too.'),
    ('postmortem_serial', 'serial', 1, ('remediate',), 'Hosts per remediation batch: a number or a percentage.'),
)
NAMES = tuple(v[0] for v in VARIABLES)
DEFAULTS = dict((v[0], v[2]) for v in VARIABLES)
# Which module option each variable is passed to; the option's default is the variable's.
MODULE_OPTIONS = {
    'postmortem_checks': (('audit_facts', 'checks'),),
    'postmortem_probes': (('audit_facts', 'probes'),),
    'postmortem_root': (('audit_facts', 'root'),),
    'postmortem_settings': (('audit_facts', 'settings'),),
    'postmortem_command_timeout': (('audit_facts', 'command_timeout'),),
    'postmortem_detection_timeout': (('audit_facts', 'detection_timeout'),),
    'postmortem_report_dir': (('audit_report', 'dest'),),
    'postmortem_hosts': (('audit_report', 'host_pattern'),),
    'postmortem_fail_on': (('audit_report', 'fail_on'),),
    'postmortem_fail_on_unaudited': (('audit_report', 'fail_on_unaudited'),),
    'postmortem_fail_on_no_hosts': (('audit_report', 'fail_on_no_hosts'),),
    'postmortem_fail_on_new_only': (('audit_report', 'fail_on_new_only'),),
    'postmortem_previous': (('audit_report', 'previous'),),
    'postmortem_accept': (('audit_report', 'accept'), ('remediation_plan', 'accept')),
    'postmortem_textfile_dir': (('audit_report', 'textfile_dir'),),
    'postmortem_check_files': (('audit_report', 'check_files'),),
    'postmortem_remediate': (('remediation_plan', 'remediate'),),
    'postmortem_remediate_accepted': (('remediation_plan', 'remediate_accepted'),),
}


def option_default(module, option):
    """The default of a module option that a playbook variable feeds: the variable's."""
    for name, targets in MODULE_OPTIONS.items():
        if (module, option) in targets:
            return DEFAULTS[name]
    raise KeyError('%s.%s is fed by no playbook variable' % (module, option))
