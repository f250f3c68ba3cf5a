# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check the variables a scheduled audit will run with, when the schedule is installed.

Run on the controller by the audit_schedule role, with the collection the role runs from (the one
it installs on the host). The audit checks its variables itself before any host is contacted; this
runs the same checks (plugins/module_utils/audit_interface.py, the one declaration of them) when the
role runs, so a misspelled or invalid variable fails the role instead of every night's run.
Usage: python check_audit_vars.py <directory holding ansible_collections/> < variables.json
Prints one problem a line and exits 1 when there are any. The declared check files the variables name
(postmortem_check_files) are loaded and validated as the audit will, with the collection's own loader.
With --list-check-files, reads a JSON list of check file paths (files or directories) and prints the
files to install, as JSON; two files of the same name are a problem (they are installed side by side).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys


def _declared(variables, found):
    """{id: check} the run can select (the registry's and the declared checks'), or None; problems added."""
    files = variables.get('postmortem_check_files')
    if files in (None, '', []):
        return None
    from ansible_collections.homelab.postmortem.plugins.module_utils import registry
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks
    try:
        return declared_checks.load(files, registry.BY_ID, registry.GROUPS).available(registry.BY_ID)
    except declared_checks.CheckFileProblem as exc:
        found.extend(exc.problems)
    return None


def problems(audit_interface, variables):
    found = []
    for name in sorted(variables):
        if not name.startswith(audit_interface.PREFIX):
            found.append('%s is not a variable of homelab.postmortem.audit (they start with %s)'
                         % (name, audit_interface.PREFIX))
        elif name in audit_interface.OUTPUTS:
            found.append('%s is set by the audit itself, not an input' % name)
    found += audit_interface.describe_unknown(audit_interface.unknown_variables(variables))
    readers = dict((v[0], v[3]) for v in audit_interface.VARIABLES)
    available = _declared(variables, found)
    for name in sorted(variables):
        if name in readers and 'audit' not in readers[name]:
            found.append('%s is read by %s, never by the audit' % (name, ' and '.join(readers[name])))
        elif name in audit_interface.NAMES:
            problem = audit_interface.check_value(name, variables[name], available=available)
            if problem:
                found.append(problem)
    return found


def list_check_files(paths):
    """The check files to install, or the problems (names taken twice, paths that hold none)."""
    import os
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks
    try:
        files = declared_checks.check_files(paths)
    except declared_checks.CheckFileProblem as exc:
        return None, exc.problems
    names = {}
    for path in files:
        names.setdefault(os.path.basename(path), []).append(path)
    taken = ['%s are installed under one name: rename one of them' % ' and '.join(p) for p in names.values() if len(p) > 1]
    return (None, taken) if taken else (files, [])


def main(argv):
    listing = argv[:1] == ['--list-check-files']
    argv = argv[1:] if listing else argv
    if len(argv) != 1:
        print('usage: check_audit_vars.py [--list-check-files] <directory holding ansible_collections/> < json',
              file=sys.stderr)
        return 2
    sys.path.insert(0, argv[0])
    if listing:
        files, found = list_check_files(json.load(sys.stdin))
        print(json.dumps(files) if files is not None else '\n'.join(found))
        return 0 if files is not None else 1
    from ansible_collections.homelab.postmortem.plugins.module_utils import audit_interface
    variables = json.load(sys.stdin)
    found = problems(audit_interface, variables)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
