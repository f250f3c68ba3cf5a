"""audit_schedule: no role variable can add a line to a unit or a command to the wrapper (issue 32).

Every variable the role writes into its units or its wrapper script gets hostile values (a newline
followed by a setting, a section, a carriage return, a NUL, %, $, quotes, a backslash, spaces, a
semicolon) and goes first through the role's own check of its variables (files/check_role_vars.py,
what tasks/validate.yml runs, with the host's systemd-analyze for calendars and time spans, as the
role asks it), then, when accepted, through the role's real templates with Ansible's own templating
(a Templar set up as ansible-core 2.19's template action sets it up: lib/ansible/plugins/action/template.py
trust_as_template, trim_blocks, escape_backslashes=False). What must hold:

- a refused value is refused with a message that names the variable;
- an accepted value gives units that, read as systemd 252 reads them (helpers/systemd_syntax.py),
  hold exactly the sections and settings of a plain schedule, each with the value meant: an injected
  line is valid unit syntax, so systemd-analyze verify (also run: upstream's own reading) cannot see it;
- the wrapper passes bash -n, has the lines of a plain one (one more per environment variable), each
  assignment one shell word, and run by bash with a stand-in ansible-playbook it passes exactly the
  inventories, arguments and environment given.

The end-to-end test (tests/e2e/test_audit_schedule_validation_real.py) runs the role's real
validation tasks with such values and checks that nothing is written.
"""
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from urllib.parse import unquote

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.homelab.postmortem.plugins.module_utils import systemd_unit

from ..helpers.systemd_syntax import Unit, read_lines, resolve_specifiers

ROLE = os.path.realpath(os.path.join(os.path.dirname(systemd_unit.__file__), '..', '..', 'roles', 'audit_schedule'))
SPEC = os.path.join(ROLE, 'meta', 'argument_specs.yml')
# The template action's defaults (ansible-core 2.19 lib/ansible/plugins/action/template.py).
TEMPLATE_OVERRIDES = dict(trim_blocks=True, lstrip_blocks=False, newline_sequence='\n')
SERVICE_SECTIONS = ('Unit', 'Service', 'Install')
TIMER_SECTIONS = ('Unit', 'Timer', 'Install')
# What the parsed units must set, in order (a plain system-wide schedule with an OnFailure= unit).
SERVICE_LAYOUT = [('Unit', 'Description'), ('Unit', 'Documentation'), ('Unit', 'Wants'), ('Unit', 'After'),
                  ('Unit', 'OnFailure'), ('Service', 'Type'), ('Service', 'User'), ('Service', 'WorkingDirectory'),
                  ('Service', 'ExecStart'), ('Service', 'TimeoutStartSec'), ('Service', 'Nice'),
                  ('Service', 'IOSchedulingClass')]
USER_SERVICE_LAYOUT = [entry for entry in SERVICE_LAYOUT
                       if entry not in (('Unit', 'Wants'), ('Unit', 'After'), ('Service', 'User'))]
WRAPPER_SCALARS = ('venv', 'collections', 'vars_file', 'lock', 'report_dir', 'archive_dir', 'keep', 'timeout_seconds')
ACCOUNT, HOME = 'pmaudit', '/home/pmaudit'
PWNED = 'ExecStartPre=/bin/touch /tmp/pwned'
PAYLOADS = {
    'newline': '\n' + PWNED,
    'newline section': '\n[Service]\n' + PWNED,
    'trailing newline': '\n',
    'carriage return': '\r' + PWNED,
    'nul': '\x00' + PWNED,
    'percent': '%h%%',
    'dollar': '$HOME${USER}$$',
    'double quote': '" "x',
    'single quote': "' 'x",
    'backslash': '\\x41\\',
    'space': ' two  words',
    'semicolon': ' ; /bin/touch /tmp/pwned',
    'tab': '\tx',
}
RELAXED_USER_NOTICE = re.compile(r"Accepting user/group name '.*', which does not match strict user/group name rules\.\Z")
CONTROL_PAYLOADS = ('newline', 'newline section', 'trailing newline', 'carriage return', 'nul')


def _load_checker():
    spec = importlib.util.spec_from_file_location('check_role_vars', os.path.join(ROLE, 'files', 'check_role_vars.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECKER = _load_checker()


def _spec_options():
    with open(SPEC, encoding='utf-8') as handle:
        return yaml.safe_load(handle)['argument_specs']['main']['options']


def good(base):
    """A plain system-wide schedule with every rendered variable set, its paths under ``base``."""
    return {
        'audit_schedule_scope': 'system',
        'audit_schedule_user': ACCOUNT,
        'audit_schedule_name': 'pm-test',
        'audit_schedule_on_calendar': ['*-*-* 03:00:00', 'Sat *-*-* 12:00'],
        'audit_schedule_randomized_delay': '10min',
        'audit_schedule_accuracy': '1min',
        'audit_schedule_inventory': [base + '/inventory.yml', base + '/more.yml'],
        'audit_schedule_playbook_args': ['--limit', 'pis', '--forks', '10'],
        'audit_schedule_environment': {'SSH_AUTH_SOCK': '/run/agent.sock', 'ANSIBLE_TIMEOUT': '30'},
        'audit_schedule_timeout': 3600,
        'audit_schedule_keep': 14,
        'audit_schedule_textfile_dir': base + '/textfile',
        'audit_schedule_on_failure': ['notify@%n.service', 'audit-failed.service'],
        'audit_schedule_install_dir': base + '/install',
        'audit_schedule_state_dir': base + '/state',
        'audit_schedule_report_dir': base + '/report',
        'audit_schedule_archive_dir': base + '/archive',
    }


def hostile_cases():
    """(id, variable, {variable: value}) for each rendered variable and payload."""
    plain = good('/srv/pm')
    for name in sorted(plain):
        for payload_name, payload in sorted(PAYLOADS.items()):
            value = plain[name]
            if name == 'audit_schedule_environment':
                yield '%s-value-%s' % (name, payload_name), name, {name: dict(value, SSH_AUTH_SOCK=value['SSH_AUTH_SOCK'] + payload)}
                yield '%s-name-%s' % (name, payload_name), name, {name: dict(value, **{'SSH_AUTH_SOCK' + payload: 'x'})}
                continue
            if name == 'audit_schedule_on_failure':
                # Inside the name, before its type: after it, anything would just not end in a unit type.
                hostile = [value[0].replace('.service', payload + '.service')] + value[1:]
            elif isinstance(value, list):
                hostile = [value[0] + payload] + value[1:]
            else:
                hostile = str(value) + payload
            yield '%s-%s' % (name, payload_name), name, {name: hostile}


CASES = list(hostile_cases())


DEFAULT_DIRS = {'audit_schedule_install_dir': '_audit_schedule_install_dir', 'audit_schedule_state_dir': '_audit_schedule_state_dir',
                'audit_schedule_report_dir': '_audit_schedule_report_dir', 'audit_schedule_archive_dir': '_audit_schedule_archive_dir'}


def role_refuses(options, home=HOME):
    """The role's own check of its variables and of the directories it derives from the account's home,
    then, as tasks/validate.yml does, the host's systemd-analyze on the calendars and time spans: the
    problems, one line each."""
    templar = role_templar(options, home)
    defaults = dict((name, templar.template(trust_as_template('{{ %s }}' % derived)))
                    for name, derived in DEFAULT_DIRS.items())
    found = CHECKER.problems(options, defaults)
    if found:
        return found
    for name, verb, values in (('audit_schedule_on_calendar', 'calendar', options['audit_schedule_on_calendar']),
                               ('audit_schedule_randomized_delay', 'timespan', [options['audit_schedule_randomized_delay']]),
                               ('audit_schedule_accuracy', 'timespan', [options['audit_schedule_accuracy']])):
        for value in values:
            proc = subprocess.run(['systemd-analyze', verb, value], capture_output=True, text=True, timeout=30, check=False)
            if proc.returncode:
                found.append('%s: systemd-analyze %s refuses %r' % (name, verb, value))
    return found


def role_templar(options, home=HOME):
    """A Templar with the values the role has when it writes its files: its defaults, the options, its
    vars/main.yml, and what tasks/validate.yml registered about the account."""
    loader = DataLoader()
    variables = dict(loader.load_from_file(os.path.join(ROLE, 'defaults', 'main.yml'), trusted_as_template=True))
    variables.update(options)
    variables.update(loader.load_from_file(os.path.join(ROLE, 'vars', 'main.yml'), trusted_as_template=True))
    system = options['audit_schedule_scope'] == 'system'
    account = (options['audit_schedule_user'] or 'root') if system else ACCOUNT
    variables.update(
        role_path=ROLE,
        _audit_schedule_whoami={'stdout': 'root' if system else ACCOUNT},
        _audit_schedule_account_entry={'ansible_facts': {'getent_passwd': {account: ['x', '1001', '1001', '', home, '/bin/bash']}}})
    return Templar(loader=loader, variables=variables)


def render(options):
    """The role's three templates, rendered as the template action renders them."""
    templar = role_templar(options)
    rendered = {}
    for kind, source in (('service', 'audit.service.j2'), ('timer', 'audit.timer.j2'), ('wrapper', 'run-audit.sh.j2')):
        with open(os.path.join(ROLE, 'templates', source), encoding='utf-8') as handle:
            rendered[kind] = templar.template(trust_as_template(handle.read()), escape_backslashes=False,
                                              overrides=TEMPLATE_OVERRIDES)
    return rendered


def expected_paths(options):
    install = options['audit_schedule_install_dir'] or '/opt/' + options['audit_schedule_name']
    state = options['audit_schedule_state_dir'] or '/var/lib/' + options['audit_schedule_name']
    return {
        'install': install,
        'wrapper': install + '/run-audit',
        'venv': install + '/venv',
        'collections': install + '/collections',
        'vars_file': install + '/audit-vars.json',
        'lock': state + '/audit.lock',
        'state': state,
        'report_dir': options['audit_schedule_report_dir'] or state + '/report',
        'archive_dir': options['audit_schedule_archive_dir'] or state + '/archive',
    }


def check_service(text, options):
    unit = Unit(text.encode('utf-8'), SERVICE_SECTIONS)
    assert unit.notes == []
    system = options['audit_schedule_scope'] == 'system'
    layout = SERVICE_LAYOUT if system else USER_SERVICE_LAYOUT
    if not options['audit_schedule_on_failure']:
        layout = [entry for entry in layout if entry != ('Unit', 'OnFailure')]
    assert unit.layout() == layout
    paths = expected_paths(options)
    name = options['audit_schedule_name']
    assert resolve_specifiers(unit.value('Unit', 'Description')) == 'homelab.postmortem audit (%s)' % name
    documentation = resolve_specifiers(unit.value('Unit', 'Documentation'))
    assert unquote(documentation) == 'file://%s/ansible_collections/homelab/postmortem/docs/audit_schedule.md' % paths['collections']
    if options['audit_schedule_on_failure']:
        # OnFailure= is split at whitespace, quotes and escapes kept (src/core/load-fragment.c:283).
        assert unit.value('Unit', 'OnFailure').split() == options['audit_schedule_on_failure']
    if system:
        assert resolve_specifiers(unit.value('Service', 'User')) == (options['audit_schedule_user'] or 'root')
    assert resolve_specifiers(unit.value('Service', 'WorkingDirectory')) == paths['state']
    exec_start = unit.value('Service', 'ExecStart')
    # ':' turns $VARIABLE expansion off (src/core/load-fragment.c:954, src/core/execute.c:5152).
    assert exec_start.startswith(':')
    assert [resolve_specifiers(word) for word in systemd_unit.split_words(exec_start[1:])] == [paths['wrapper']]
    assert unit.value('Service', 'TimeoutStartSec') == str(int(options['audit_schedule_timeout']) + 180)


def check_timer(text, options):
    unit = Unit(text.encode('utf-8'), TIMER_SECTIONS)
    assert unit.notes == []
    calendars = options['audit_schedule_on_calendar']
    assert unit.layout() == ([('Unit', 'Description')] + [('Timer', 'OnCalendar')] * len(calendars)
                             + [('Timer', 'RandomizedDelaySec'), ('Timer', 'AccuracySec'), ('Timer', 'Persistent'),
                                ('Timer', 'Unit'), ('Install', 'WantedBy')])
    assert unit.values('Timer', 'OnCalendar') == [calendar.strip(' \t') for calendar in calendars]
    assert unit.value('Timer', 'RandomizedDelaySec') == str(options['audit_schedule_randomized_delay']).strip(' \t')
    assert unit.value('Timer', 'AccuracySec') == str(options['audit_schedule_accuracy']).strip(' \t')
    assert unit.value('Timer', 'Unit') == options['audit_schedule_name'] + '.service'


def check_wrapper(text, options, plain_text):
    proc = subprocess.run(['bash', '-n'], input=text, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    # The lines of a plain schedule's wrapper, one more for each environment variable.
    lines = text.split('\n')
    plain_environment = good('/srv/pm')['audit_schedule_environment']
    assert len(lines) == len(plain_text.split('\n')) - len(plain_environment) + len(options['audit_schedule_environment'])
    paths = expected_paths(options)
    expected = dict(paths, keep=str(int(options['audit_schedule_keep'])),
                    timeout_seconds=str(int(options['audit_schedule_timeout'])))
    for name in WRAPPER_SCALARS:
        found = [line for line in lines if line.startswith(name + '=')]
        assert len(found) == 1, name
        assert shlex.split(found[0][len(name) + 1:]) == [expected[name]], found[0]
    inventories = [line for line in lines if line.startswith('inventories=(')]
    assert len(inventories) == 1 and inventories[0].endswith(')')
    expected_inventories = []
    for inventory in options['audit_schedule_inventory'] or [paths['install'] + '/inventory.yml']:
        expected_inventories += ['-i', inventory]
    assert shlex.split(inventories[0][len('inventories=('):-1]) == expected_inventories
    arguments = [line for line in lines if line.startswith('playbook_args=(')]
    assert len(arguments) == 1 and arguments[0].endswith(')')
    assert shlex.split(arguments[0][len('playbook_args=('):-1]) == [str(a) for a in options['audit_schedule_playbook_args']]
    exported = dict(line[len('export '):].split('=', 1) for line in lines if line.startswith('export '))
    for name, value in options['audit_schedule_environment'].items():
        assert shlex.split(exported[name]) == [str(value)], exported[name]


STAND_IN = '''#!%s
import json, os, sys
with open(os.environ['STAND_IN_OUT'], 'w') as out:
    json.dump({'argv': sys.argv[1:], 'environ': dict(os.environ)}, out)
'''


def run_wrapper(tmp_path, text, options):
    """Run the wrapper with bash, a stand-in ansible-playbook in its virtualenv: what it was given."""
    paths = expected_paths(options)
    for directory in (paths['venv'] + '/bin', paths['state'], paths['report_dir'], paths['archive_dir']):
        os.makedirs(directory, exist_ok=True)
    stand_in = paths['venv'] + '/bin/ansible-playbook'
    with open(stand_in, 'w') as handle:
        handle.write(STAND_IN % sys.executable)
    os.chmod(stand_in, 0o755)
    with open(paths['wrapper'], 'w') as handle:
        handle.write(text)
    os.chmod(paths['wrapper'], 0o755)
    out = str(tmp_path / 'stand-in.json')
    proc = subprocess.run(['bash', paths['wrapper']], capture_output=True, text=True, timeout=60, check=False,
                          env={'PATH': os.environ['PATH'], 'STAND_IN_OUT': out}, cwd=paths['state'])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out) as handle:
        seen = json.load(handle)
    expected_argv = ['homelab.postmortem.audit']
    for inventory in options['audit_schedule_inventory'] or [paths['install'] + '/inventory.yml']:
        expected_argv += ['-i', inventory]
    expected_argv += ['-e', '@' + paths['vars_file']] + [str(a) for a in options['audit_schedule_playbook_args']]
    assert seen['argv'] == expected_argv
    for name, value in options['audit_schedule_environment'].items():
        assert seen['environ'][name] == str(value)
    assert seen['environ']['ANSIBLE_COLLECTIONS_PATH'] == paths['collections']


def systemd_analyze_verify(tmp_path, rendered, options):
    """systemd's own reading of the units (systemd-analyze verify, systemd 252 here): no warning."""
    paths = expected_paths(options)
    os.makedirs(paths['install'], exist_ok=True)
    if not os.path.exists(paths['wrapper']):
        with open(paths['wrapper'], 'w') as handle:
            handle.write('#!/bin/sh\n')
        os.chmod(paths['wrapper'], 0o755)
    units = tmp_path / 'units'
    units.mkdir(exist_ok=True)
    files = []
    for kind in ('service', 'timer'):
        path = units / ('%s.%s' % (options['audit_schedule_name'], kind))
        path.write_text(rendered[kind])
        files.append(str(path))
    proc = subprocess.run(['systemd-analyze', 'verify', '--man=no', '--generators=no'] + files,
                          capture_output=True, text=True, timeout=60, check=False)
    # User= takes names beyond the strict rules, with a notice (src/basic/user-util.c:781-785).
    said = [line for line in (proc.stdout + proc.stderr).splitlines()
            if not RELAXED_USER_NOTICE.match(line)]
    assert proc.returncode == 0 and said == [], proc.stdout + proc.stderr


def check_written_as_meant(tmp_path, options, plain_wrapper):
    rendered = render(options)
    check_service(rendered['service'], options)
    check_timer(rendered['timer'], options)
    check_wrapper(rendered['wrapper'], options, plain_wrapper)
    run_wrapper(tmp_path, rendered['wrapper'], options)
    systemd_analyze_verify(tmp_path, rendered, options)


@pytest.fixture(scope='module')
def plain_wrapper():
    return render(good('/srv/pm'))['wrapper']


def test_every_option_has_a_kind_its_spec_agrees_with():
    """The check knows every option the spec declares, and its kinds agree with the spec's types."""
    options = _spec_options()
    assert set(CHECKER.KINDS) == set(options)
    assert set(CHECKER.KINDS.values()) <= set(CHECKER.CHECKS)
    types = {'bool': ('bool', None), 'seconds': ('int', None), 'count': ('int', None), 'optional_path': ('path', None),
             'path_list': ('list', 'path'), 'text_list': ('list', 'str'), 'unit_list': ('list', 'str'),
             'calendar_list': ('list', 'str'), 'environment': ('dict', None), 'timespan': ('str', None),
             'account': ('str', None), 'unit_prefix': ('str', None), 'scope': ('str', None)}
    for name, kind in CHECKER.KINDS.items():
        if kind in types:
            assert (options[name]['type'], options[name].get('elements')) == types[kind], name
    assert options['audit_schedule_scope']['choices'] == ['system', 'user']
    # Every path option is checked as a path.
    for name, option in options.items():
        if option['type'] == 'path' or option.get('elements') == 'path':
            assert CHECKER.KINDS[name] in ('optional_path', 'path_list'), name


def test_every_option_has_a_default_that_passes_the_check():
    """tasks/validate.yml asks Ansible for every option the spec declares: each must be defined."""
    defaults = dict(DataLoader().load_from_file(os.path.join(ROLE, 'defaults', 'main.yml')))
    assert set(defaults) == set(_spec_options())
    assert CHECKER.problems(defaults) == []


@pytest.mark.parametrize('scope', ['system', 'user'])
def test_a_plain_schedule_renders_the_units_and_wrapper_meant(tmp_path, scope, plain_wrapper):
    options = good(str(tmp_path / 'pm'))
    options['audit_schedule_scope'] = scope
    if scope == 'user':
        options['audit_schedule_user'] = ''
    assert role_refuses(options) == []
    check_written_as_meant(tmp_path, options, plain_wrapper)


def test_the_injections_of_the_issue_are_refused_naming_the_variable():
    """Issue 32: a state directory with its own ExecStartPre=, an OnFailure= unit adding a [Service]
    section, and a name ending in a newline (Python's $ matches before a final newline)."""
    for name, value in (('audit_schedule_state_dir', '/var/lib/x\nExecStartPre=/bin/touch /tmp/pwned'),
                        ('audit_schedule_on_failure', ['x.service\n[Service]\nExecStartPre=/bin/touch /tmp/pwned']),
                        ('audit_schedule_name', 'homelab-postmortem-audit\n'),
                        ('audit_schedule_environment', {'NAME\n': 'x'})):
        options = good('/srv/pm')
        options[name] = value
        found = CHECKER.problems(options)
        assert found and all(line.startswith(name + ' ') for line in found), found


@pytest.mark.parametrize('home', ['/home/odd$HOME', '/home/odd"quote', '/home/../etc'])
def test_a_default_directory_from_an_odd_home_is_checked_as_its_option(home):
    """User scope: the install and state directories default to the account's home (vars/main.yml)."""
    options = good('/srv/pm')
    options.update(audit_schedule_scope='user', audit_schedule_user='', audit_schedule_install_dir='',
                   audit_schedule_state_dir='', audit_schedule_report_dir='', audit_schedule_archive_dir='')
    found = role_refuses(options, home)
    assert found and found[0].startswith('audit_schedule_archive_dir is empty, and its default "%s/.local/state/pm-test/archive"'
                                         % home.replace('"', '\\"')), found
    assert sorted(line.split()[0] for line in found) == sorted(DEFAULT_DIRS)


def test_without_the_check_the_template_would_write_the_injected_line():
    """The reader sees what the check prevents: the issue's state directory, rendered unchecked, gives an
    ExecStartPre= of its own (so the layout comparison above can fail)."""
    options = good('/srv/pm')
    options['audit_schedule_state_dir'] = '/var/lib/x\nExecStartPre=/bin/touch /tmp/pwned'
    unit = Unit(render(options)['service'].encode('utf-8'), SERVICE_SECTIONS)
    assert ('Service', 'ExecStartPre') in unit.layout()
    assert unit.layout() != SERVICE_LAYOUT


def _rebase(value, old, new):
    if isinstance(value, str):
        return new + value[len(old):] if value.startswith(old) else value
    if isinstance(value, list):
        return [_rebase(item, old, new) for item in value]
    return value


@pytest.mark.parametrize('case_id,name,override', CASES, ids=[case[0] for case in CASES])
def test_a_hostile_value_is_refused_or_written_as_meant(tmp_path, case_id, name, override, plain_wrapper):
    options = good('/srv/pm')
    options.update(override)
    found = role_refuses(options)
    if found:
        assert all(line.startswith(name) for line in found), found
        return
    assert not case_id.endswith(CONTROL_PAYLOADS), 'a control character was accepted: %s' % found
    # Accepted: rendered with paths that exist, so the wrapper can run and systemd-analyze find it.
    base = str(tmp_path / 'pm')
    options = good(base)
    options.update(dict((key, _rebase(value, '/srv/pm', base)) for key, value in override.items()))
    check_written_as_meant(tmp_path, options, plain_wrapper)


def test_control_characters_are_refused_in_every_rendered_variable():
    """A newline, a carriage return or a NUL ends a unit line (src/basic/fileio.c:1246-1259): refused in
    every variable that reaches a unit or the wrapper, free text included."""
    refused = set()
    for case_id, name, override in CASES:
        if case_id.endswith(CONTROL_PAYLOADS):
            options = good('/srv/pm')
            options.update(override)
            assert CHECKER.problems(options), case_id
            refused.add(name)
    assert refused == set(good('/srv/pm'))


@pytest.mark.parametrize('sample,keys', [
    # \r, \0 and \r\n end lines; \x0b, \x0c and U+2028 do not (src/basic/fileio.c:1246-1259).
    (b'Description=a\rZapa=1\n', ['Description', 'Zapa']),
    (b'Description=a\x00Zapa=1\n', ['Description', 'Zapa']),
    (b'Description=a\r\nZapa=1\r\n\n\rZapb=2\n', ['Description', 'Zapa', 'Zapb']),
    (b'Description=a\x0bZapa=1\x0cZapb=2\xe2\x80\xa8Zapc=3\n', ['Description']),
    # A trailing backslash continues the line, comment lines inside are skipped (conf-parser.c:328-420).
    (b'Description=a\\\n# Zapa=1\nZapb=2\nZapc=3\n', ['Description', 'Zapc']),
    (b'Description=a\\\\\nZapa=1\n', ['Description', 'Zapa']),
])
def test_the_reader_splits_lines_as_systemd_does(tmp_path, sample, keys):
    """The reader against systemd's own reading: systemd-analyze verify names every unknown key it reads
    at the start of a line, so the keys it names are the ones the reader must find."""
    assert [key for _section, key in Unit(b'[Unit]\n' + sample, SERVICE_SECTIONS).layout()] == keys
    path = tmp_path / 'reader-test.service'
    path.write_bytes(b'[Unit]\n' + sample + b'[Service]\nType=oneshot\nExecStart=/bin/true\n')
    proc = subprocess.run(['systemd-analyze', 'verify', '--man=no', '--generators=no', str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert re.findall(r"Unknown key '([^']*)' in section \[Unit\]", proc.stderr) == keys[1:]


def test_read_lines_ends_lines_as_read_line_full_does():
    # One of each end in a row is one end; the same end twice is two (src/basic/fileio.c:1320-1336).
    assert read_lines(b'a\r\n\nb\n\rc\x00\x00d\r\n\x00e') == [b'a', b'', b'b', b'c', b'', b'd', b'e']
