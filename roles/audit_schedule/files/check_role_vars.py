# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check the audit_schedule role's own variables by type, before anything is written from them.

The role writes its variables into systemd units and a bash script that run as root. systemd reads a
unit line by line: a newline, a carriage return or a NUL ends a line, an unescaped trailing backslash
continues it (systemd 252, src/basic/fileio.c:1246-1259, src/shared/conf-parser.c:328-420), so a value
that could end a line could add a setting or a section. Each kind of value is held here to what systemd
(and Ansible, for the paths the wrapper gives it) accepts for it; the templates escape the rest (%% for
%, ExecStart= quoted and prefixed with ':'). Every option of meta/argument_specs.yml has a kind
(tests/unit/hostile/test_hostile_audit_schedule.py holds the two in agreement).
Run on the controller by tasks/validate.yml:
    python check_role_vars.py < {"options": {"audit_schedule_name": ..., ...}, "defaults": {"audit_schedule_state_dir": ...}}
Prints one problem a line, each starting with its variable, and exits 1 when there are any.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import sys

# What each option is. 'not rendered': passed as one argv item or through check_audit_vars.py, never
# written into a unit or the wrapper.
KINDS = {
    'audit_schedule_scope': 'scope',
    'audit_schedule_user': 'account',
    'audit_schedule_linger': 'bool',
    'audit_schedule_linger_become': 'bool',
    'audit_schedule_name': 'unit_prefix',
    'audit_schedule_on_calendar': 'calendar_list',
    'audit_schedule_randomized_delay': 'timespan',
    'audit_schedule_accuracy': 'timespan',
    'audit_schedule_persistent': 'bool',
    'audit_schedule_enabled': 'bool',
    'audit_schedule_inventory': 'path_list',
    'audit_schedule_audit_vars': 'not rendered',
    # Checked by check_audit_vars.py with the collection's loader; copied into <install dir>/checks.
    'audit_schedule_check_files': 'not rendered',
    'audit_schedule_playbook_args': 'text_list',
    'audit_schedule_environment': 'environment',
    'audit_schedule_timeout': 'seconds',
    'audit_schedule_keep': 'count',
    'audit_schedule_textfile_dir': 'optional_path',
    'audit_schedule_on_failure': 'unit_list',
    'audit_schedule_install_dir': 'optional_path',
    'audit_schedule_state_dir': 'optional_path',
    'audit_schedule_report_dir': 'optional_path',
    'audit_schedule_archive_dir': 'optional_path',
    'audit_schedule_python': 'not rendered',
    'audit_schedule_ansible_core': 'not rendered',
    'audit_schedule_pip_args': 'not rendered',
}

# systemd 252: src/basic/unit-name.h:9 UNIT_NAME_MAX (a name with its suffix is shorter), the unit types
# of src/basic/unit-def.c:71-83, the characters of src/basic/unit-name.c:24-32 (VALID_CHARS, and @).
UNIT_NAME_MAX = 256
UNIT_TYPES = ('service', 'socket', 'target', 'device', 'mount', 'automount', 'swap', 'timer', 'path', 'slice', 'scope')
UNIT_CHARS = re.compile(r'[A-Za-z0-9:_.\\-]*\Z')
# The longest suffix the role adds to audit_schedule_name.
NAME_SUFFIX = '.service'
# The specifiers of the unit itself that systemd expands in OnFailure= (src/core/unit-printf.c:165-195
# unit_name_printf); %i is left out, the schedule's units have no instance.
UNIT_SPECIFIERS = ('%n', '%N', '%p')
# Linux PATH_MAX (with its NUL) and NAME_MAX, which systemd checks paths against (path_is_valid).
PATH_MAX = 4096
NAME_MAX = 255
ENVIRONMENT_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
DIGITS = re.compile(r'[0-9]+\Z')
CONTROL = re.compile('[\x00-\x1f\x7f]')
CONTROL_BUT_TAB = re.compile('[\x00-\x08\x0a-\x1f\x7f]')
SHOWN = 120


def shown(value):
    """A value in a message: JSON (control characters become escapes), cut."""
    text = json.dumps(value, ensure_ascii=True, default=repr)
    return text if len(text) <= SHOWN else text[:SHOWN - 3] + '...'


def _control(text, pattern=CONTROL):
    found = pattern.search(text)
    return found and 'holds a control character (U+%04X)' % ord(found.group())


def _utf8(text):
    try:
        text.encode('utf-8')
    except UnicodeError:
        return 'is not valid UTF-8'
    return None


def path_problem(value, allow_empty=False):
    if not isinstance(value, str):
        return 'must be a path (a string), not a %s' % type(value).__name__
    if value == '' and allow_empty:
        return None
    problem = _control(value) or _utf8(value)
    if problem:
        return problem
    if not value.startswith('/'):
        return 'must be an absolute path'
    for char in '"\'\\':
        # systemd runs no path with quotes or backslashes (src/core/load-fragment.c:983,
        # src/basic/string-util.c:991-1006); a trailing backslash would continue a unit's line.
        if char in value:
            return 'holds %s (systemd runs no path with quotes or backslashes)' % char
    if '$' in value:
        # ansible-playbook expands $NAME in the paths it is given (ansible-core 2.19 lib/ansible/utils/path.py:55).
        return 'holds $ (Ansible would expand $NAME in it)'
    if ':' in value:
        # The wrapper puts paths into ANSIBLE_COLLECTIONS_PATH and PATH, which : separates.
        return 'holds : (it separates the paths of ANSIBLE_COLLECTIONS_PATH and PATH)'
    if value != value.rstrip():
        return 'ends in whitespace (systemd strips it from a unit line)'
    components = value.split('/')
    if '.' in components or '..' in components:
        # WorkingDirectory= and ExecStart= want normalized paths (src/shared/parse-helpers.c:50).
        return 'holds a . or .. component (systemd wants a normalized path)'
    if len(value.encode('utf-8')) >= PATH_MAX or any(len(c.encode('utf-8')) > NAME_MAX for c in components):
        return 'is longer than a path can be'
    return None


def unit_prefix_problem(value):
    if not isinstance(value, str) or not value:
        return 'must be a unit name (a string)'
    problem = _control(value)
    if problem:
        return problem
    if not UNIT_CHARS.match(value) or '\\' in value:
        return 'must hold only letters, digits and : _ . - (a systemd unit name without @, spaces or escapes)'
    if value[0] in '-.':
        return 'must not start with - or . (it also names files and directories)'
    if len(value + NAME_SUFFIX) >= UNIT_NAME_MAX:
        return 'is too long for a unit name (%d characters at most)' % (UNIT_NAME_MAX - 1 - len(NAME_SUFFIX))
    return None


def unit_name_problem(value, name):
    """Whether systemd would load ``value`` as a unit (src/basic/unit-name.c:42-88 unit_name_is_valid, a
    plain or instance name; a template cannot be started), after its own specifiers are expanded."""
    if not isinstance(value, str):
        return 'must be a unit name (a string), not a %s' % type(value).__name__
    problem = _control(value)
    if problem:
        return problem
    if unit_prefix_problem(name):
        name = 'x'  # a name that is wrong is said once, under its own variable
    expanded = value
    for specifier, replacement in zip(UNIT_SPECIFIERS, (name + NAME_SUFFIX, name, name)):
        expanded = expanded.replace(specifier, replacement)
    if len(expanded) >= UNIT_NAME_MAX:
        return 'is too long for a unit name'
    prefix, dot, suffix = expanded.rpartition('.')
    if not dot or not prefix or suffix not in UNIT_TYPES:
        return 'must be a unit name ending in a unit type (.service, .target, ...)'
    plain, at, instance = prefix.partition('@')
    if not plain or not UNIT_CHARS.match(plain) or not UNIT_CHARS.match(instance.replace('@', '')):
        return ('must hold only letters, digits, : _ . - \\ and one @ before the instance (a systemd unit name; '
                'of the specifiers only %s)' % ', '.join(UNIT_SPECIFIERS))
    if at and not instance:
        return 'names a template (nothing after @): systemd cannot start it'
    return None


def single_line_problem(value, what):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return 'must be %s (a string)' % what
    text = str(value)
    problem = _control(text) or _utf8(text)
    if problem:
        return problem
    if not text.strip():
        return 'must not be empty'
    if text.rstrip().endswith('\\'):
        return 'ends in a backslash (it would continue the unit line)'
    return None


def text_problem(value):
    """Free text the wrapper quotes for bash: one line, tabs allowed."""
    if value is None or isinstance(value, (dict, list)):
        return 'must be a string or a number, not %s' % ('null' if value is None else 'a %s' % type(value).__name__)
    text = value if isinstance(value, str) else str(value)
    return _control(text, CONTROL_BUT_TAB) or _utf8(text)


def integer_problem(value, minimum):
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and DIGITS.match(value))):
        return 'must be a whole number'
    if int(value) < minimum:
        return 'must be at least %d' % minimum
    return None


def account_problem(value):
    """An account name as systemd's User= accepts it (src/basic/user-util.c:712-787,
    relaxed), and looked up by name: no UID, no option-like leading -, no backslash."""
    if not isinstance(value, str):
        return 'must be an account name (a string)'
    if value == '':
        return None
    problem = _control(value) or _utf8(value)
    if problem:
        return problem
    if value != value.strip():
        return 'starts or ends in whitespace'
    if value in ('.', '..') or value.startswith('-') or DIGITS.match(value):
        return 'must be an account name (not ., .., a UID or a name starting with -)'
    for char in ':/\\':
        if char in value:
            return 'holds %s, which no account name has' % char
    return None


def _each(value, check, what):
    if not isinstance(value, list):
        return ['must be a list of %s, not a %s' % (what, type(value).__name__)]
    return ['item %d %s' % (index, problem) for index, problem in
            ((index, check(item)) for index, item in enumerate(value)) if problem]


def environment_problems(value):
    if not isinstance(value, dict):
        return ['must be a mapping of names to values']
    found = []
    for key in sorted(value, key=shown):
        if not (isinstance(key, str) and ENVIRONMENT_NAME.match(key)):
            found.append('name %s is not a name an environment variable can have' % shown(key))
        else:
            found.append(text_problem(value[key]) and '%s %s' % (key, text_problem(value[key])))
    return found


def calendar_problems(value):
    found = _each(value, lambda item: single_line_problem(item, 'a calendar expression'), 'calendar expressions')
    return found or ([] if value else ['must name at least one time'])


# kind: (value, all values) -> [problem or None]. Booleans are written as true/false through the bool
# filter, never as given; 'not rendered' values never reach a unit or the wrapper.
CHECKS = {
    'bool': lambda value, values: [],
    'not rendered': lambda value, values: [],
    'scope': lambda value, values: [None if value in ('system', 'user') else 'must be system or user'],
    'account': lambda value, values: [account_problem(value)],
    'unit_prefix': lambda value, values: [unit_prefix_problem(value)],
    'unit_list': lambda value, values: _each(
        value, lambda item: unit_name_problem(item, values.get('audit_schedule_name')), 'unit names'),
    'calendar_list': lambda value, values: calendar_problems(value),
    'timespan': lambda value, values: [single_line_problem(value, 'a time span')],
    'optional_path': lambda value, values: [path_problem(value, allow_empty=True)],
    'path_list': lambda value, values: _each(value, path_problem, 'absolute paths'),
    'text_list': lambda value, values: _each(value, text_problem, 'strings'),
    'seconds': lambda value, values: [integer_problem(value, 1)],
    'count': lambda value, values: [integer_problem(value, 0)],
    'environment': lambda value, values: environment_problems(value),
}


def problems(values, defaults=None):
    """One line per problem, each starting with the variable's name and ending with its value.
    ``defaults``: {option: the path the role uses when the option is empty} (from the account's home
    directory in user scope), checked as the option would be."""
    found = []
    for name in sorted(values):
        check = CHECKS.get(KINDS.get(name), lambda value, values: ['is not an option of the role'])
        for problem in check(values[name], values):
            if problem:
                found.append('%s %s (got %s)' % (name, problem, shown(values[name])))
    for name, default in sorted((defaults or {}).items()):
        problem = values.get(name) == '' and path_problem(default)
        if problem:
            found.append('%s is empty, and its default %s %s' % (name, shown(default), problem))
    return found


def main():
    given = json.load(sys.stdin)
    found = problems(given['options'], given['defaults'])
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
