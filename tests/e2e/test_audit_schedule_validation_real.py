"""The audit_schedule role's real validation refuses hostile variables before it writes anything (issue 32).

ansible-playbook runs the installed role on this machine once per case, each inside a block whose
rescue records the task that failed and its message, all in one play: a value that would add a line to
a unit (a newline and a setting, a section, a carriage return, a NUL, a trailing backslash), a name
ending in a newline (Python's $ matched before it), paths with quotes, $ or :, numbers with a newline,
calendars and time spans the host's systemd-analyze refuses. Every case must fail in the role's
validation (tasks/validate.yml or Ansible's own check of meta/argument_specs.yml), with a message
naming the variable, and leave nothing behind: all its paths are under one directory that must not
exist afterwards, and no unit of its name appears in /etc/systemd/system. A control case with plain
values passes the validation, writes its directories and stops at its missing Python, which shows
that each hostile case failed on its value and not on the set-up.
"""
import json
import os
import subprocess

import pytest

from helpers import VENV_BIN, ansible_env, local_host

pytestmark = pytest.mark.needs_root('the role installs system-wide units as root (audit_schedule_scope: system)')

NAME = 'pm-validate-test'
PWNED = '\nExecStartPre=/bin/touch /tmp/pwned'
VALIDATION_TASKS = ("The account exists", "The role's variables are valid", "The host's systemd accepts the calendar expressions",
                    "The host's systemd accepts the time spans")


def plain(base):
    return {
        'audit_schedule_scope': 'system',
        'audit_schedule_user': '',
        'audit_schedule_name': NAME,
        'audit_schedule_on_calendar': ['*-*-* 03:00:00'],
        'audit_schedule_randomized_delay': '10min',
        'audit_schedule_accuracy': '1min',
        'audit_schedule_inventory': [base + '/inventory.yml'],
        'audit_schedule_playbook_args': ['--limit', 'pis'],
        'audit_schedule_environment': {'SSH_AUTH_SOCK': '/run/agent.sock'},
        'audit_schedule_timeout': 3600,
        'audit_schedule_keep': 14,
        'audit_schedule_textfile_dir': base + '/textfile',
        'audit_schedule_on_failure': ['notify@%n.service'],
        'audit_schedule_install_dir': base + '/install',
        'audit_schedule_state_dir': base + '/state',
        'audit_schedule_report_dir': base + '/report',
        'audit_schedule_archive_dir': base + '/archive',
        'audit_schedule_enabled': False,
        # Past the validation, the role stops at this Python: nothing but directories is ever written.
        'audit_schedule_python': '/nonexistent/python3',
    }


def hostile(base):
    """(variable, value): the issue's findings, and a newline and a setting in every variable that is written."""
    cases = [
        ('audit_schedule_state_dir', base + '/state' + PWNED),
        ('audit_schedule_on_failure', ['x.service\n[Service]' + PWNED]),
        ('audit_schedule_name', NAME + '\n'),
        ('audit_schedule_environment', {'SSH_AUTH_SOCK\n': 'x'}),
        ('audit_schedule_environment', {'SSH_AUTH_SOCK': 'x' + PWNED}),
        ('audit_schedule_install_dir', base + '/install\rExecStartPre=/bin/true'),
        ('audit_schedule_install_dir', base + '/install\x00ExecStartPre=/bin/true'),
        ('audit_schedule_install_dir', base + '/install" "/bin/true'),
        ('audit_schedule_install_dir', base + '/install:/tmp'),
        ('audit_schedule_state_dir', base + '/state\\'),
        ('audit_schedule_report_dir', base + '/$HOME'),
        ('audit_schedule_archive_dir', base + '/../archive'),
        ('audit_schedule_inventory', ['inventory.yml']),
        ('audit_schedule_user', 'root' + PWNED),
        ('audit_schedule_timeout', '3600\n'),
        ('audit_schedule_keep', '14' + PWNED),
        ('audit_schedule_on_calendar', '*-*-* 03:00:00'),
        ('audit_schedule_on_calendar', ['*-*-* 03:00:00' + PWNED]),
        ('audit_schedule_on_calendar', ['*-*-* 03:00:00 ; /bin/touch /tmp/pwned']),
        ('audit_schedule_randomized_delay', '10min' + PWNED),
        ('audit_schedule_accuracy', '1min two words'),
        ('audit_schedule_playbook_args', ['--limit' + PWNED]),
        ('audit_schedule_textfile_dir', 'relative/textfile'),
        ('audit_schedule_scope', 'system' + PWNED),
    ]
    return cases


def playbook(count):
    """One play: case i plays the role with cases[i]'s values inside a block, its rescue records the failure."""
    names = sorted(plain('/x'))
    tasks = []
    for index in range(count):
        tasks.append({
            'name': 'Case %d' % index,
            'block': [
                {'name': 'Play the role with case %d' % index,
                 'ansible.builtin.include_role': {'name': 'homelab.postmortem.audit_schedule'},
                 'vars': dict((name, '{{ cases[%d].options.%s }}' % (index, name)) for name in names)},
                {'name': 'Record that case %d passed' % index,
                 'ansible.builtin.set_fact': {'outcomes': '{{ outcomes + [{"case": %d, "failed": false}] }}' % index}},
            ],
            'rescue': [
                {'name': 'Record where case %d failed' % index,
                 'ansible.builtin.set_fact': {'outcomes': '{{ outcomes + [{"case": %d, "failed": true, '
                                                          '"task": ansible_failed_task.name, '
                                                          '"msg": ansible_failed_result.msg | default("")}] }}' % index}},
            ],
        })
    tasks.append({'name': 'Write the outcomes',
                  'ansible.builtin.copy': {'content': '{{ outcomes | to_json }}', 'dest': '{{ outcomes_file }}', 'mode': '0600'}})
    return [{'name': 'Every case', 'hosts': 'localhost', 'gather_facts': False, 'vars': {'outcomes': []}, 'tasks': tasks}]


def test_hostile_values_fail_the_validation_and_write_nothing(tmp_path):
    root = str(tmp_path / 'root')
    control = str(tmp_path / 'control')
    cases = [{'variable': None, 'options': plain(control)}]
    for variable, value in hostile(root):
        values = plain(root)
        values[variable] = value
        cases.append({'variable': variable, 'options': values})
    (tmp_path / 'cases.json').write_text(json.dumps({'cases': cases, 'outcomes_file': str(tmp_path / 'outcomes.json')}))
    (tmp_path / 'play.json').write_text(json.dumps(playbook(len(cases))))
    (tmp_path / 'inventory.json').write_text(json.dumps({'all': {'hosts': {'localhost': local_host()}}}))
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '-i', str(tmp_path / 'inventory.json'),
                           '-e', '@' + str(tmp_path / 'cases.json'), str(tmp_path / 'play.json')],
                          env=ansible_env(), cwd=str(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    outcomes = json.loads((tmp_path / 'outcomes.json').read_text())
    assert [outcome['case'] for outcome in outcomes] == list(range(len(cases)))

    # The control passed the validation and stopped at its Python, after writing its directories.
    assert outcomes[0]['failed'] and outcomes[0]['task'] == 'The Python can make a virtualenv', outcomes[0]
    assert os.path.isdir(os.path.join(control, 'state'))

    for case, outcome in zip(cases[1:], outcomes[1:]):
        shown = '%s=%r: %s' % (case['variable'], case['options'][case['variable']], outcome)
        assert outcome['failed'], shown
        assert outcome['task'] in VALIDATION_TASKS or outcome['task'].startswith('Validating arguments against arg spec'), shown
        assert case['variable'] in outcome['msg'], shown
    assert not os.path.exists(root), 'a refused case wrote %s' % sorted(os.listdir(root))
    assert not [name for name in os.listdir('/etc/systemd/system') if name.startswith(NAME)]
    assert not os.path.exists('/tmp/pwned')
