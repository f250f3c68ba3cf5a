"""A compromised host in the fleet, through the real homelab.postmortem.remediate (issue 32).

The forged host answers the audit with whatever a compromised host could write: its "Python" is a
script that prints forged findings for audit_facts and runs the real Python for every other module
(so the roles' own modules and checks still work on it). Its findings advise a role given as a path,
the report directory, Ansible's connection and interpreter variables, the playbook's private plan
and a disruptive switch, and carry escape codes for the operator's terminal. A second forged host
answers for check ids the controller never asked for.

Each piece of advice that would have taken effect leaves a trace: the "evil" role and the advised
interpreter write marker files, the advised report directory would appear. None may appear, in
check mode or in a real run; the report names what was dropped; the terminal shows escapes, never
the raw codes; the pi_ir_tx role (the registry's) still fixes the image the user audited.
"""
import json
import os
import stat

from helpers import VENV_BIN, local_host, run_audit

ESCAPES = '\x1b[2J\x1b]0;owned\x07'


def image(root):
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n')
    (root / 'lib' / 'modules' / '6.18.34+rpt-rpi-v8').mkdir(parents=True)
    return root


def script(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def forged_python(tmp_path, name, findings):
    """An interpreter that answers audit_facts with ``findings`` and runs every other module for real."""
    answer = tmp_path / ('%s.json' % name)
    facts = {'postmortem': findings, 'postmortem_run': {'checks': list(findings)}}
    answer.write_text(json.dumps({'changed': False, 'ansible_facts': facts}))
    return script(tmp_path / ('%s-python' % name),
                  '#!/bin/sh\ncase "$1" in *AnsiballZ_audit_facts.py) cat %s; exit 0;; esac\nexec %s "$@"\n'
                  % (answer, os.path.join(VENV_BIN, 'python')))


def traps(tmp_path):
    """Where each piece of advice would leave its trace if the controller followed it."""
    marks = tmp_path / 'marks'
    marks.mkdir()
    role = tmp_path / 'evilrole'
    (role / 'tasks').mkdir(parents=True)
    (role / 'tasks' / 'main.yml').write_text(
        '- name: Mark\n  ansible.builtin.file:\n    path: %s\n    state: touch\n  delegate_to: localhost\n'
        % (marks / 'evil-role-ran'))
    interpreter = script(tmp_path / 'evil-python', '#!/bin/sh\ntouch %s\nexec %s "$@"\n'
                         % (marks / 'evil-interpreter-ran', os.path.join(VENV_BIN, 'python')))
    return marks, str(role), interpreter


def forged_pi_finding(evil_role, evil_report_dir, evil_interpreter):
    return {
        'id': 'pi_ir_tx', 'title': 'Raspberry Pi IR transmitter', 'status': 'at_risk',
        'summary': ESCAPES + 'pwm-ir-tx is loaded', 'evidence': {'note': ESCAPES},
        'remediation': {'role': evil_role, 'module': None, 'manual': [], 'disruption': 'reboot', 'vars': {
            'postmortem_report_dir': evil_report_dir,
            'ansible_python_interpreter': evil_interpreter,
            'ansible_become': True,
            'ansible_ssh_common_args': '-o ProxyCommand="touch /tmp/pwned"',
            '_postmortem_plan': {'roles': [evil_role], 'stop': None, 'role_vars': {}, 'say': []},
            'pi_ir_tx_reboot': True,
            'pi_ir_tx_root': '/',
        }},
        'references': []}


def test_a_forged_host_chooses_nothing_the_controller_runs_or_writes(tmp_path):
    marks, evil_role, evil_interpreter = traps(tmp_path)
    evil_report_dir = tmp_path / 'evil-report'
    card = image(tmp_path / 'card')
    config = card / 'boot' / 'firmware' / 'config.txt'
    original = config.read_text()
    pi = forged_pi_finding(evil_role, str(evil_report_dir), evil_interpreter)
    unknown = {'x\nGate: passed (nothing at or above affected) FORGED': dict(pi, id='x', status='affected'),
               'pi_ir_tx': dict(pi, status='affected')}
    inventory = {'all': {'hosts': {
        'forged': local_host(ansible_python_interpreter=forged_python(tmp_path, 'forged', {'pi_ir_tx': pi}),
                             postmortem_root=str(card)),
        'made-up-ids': local_host(ansible_python_interpreter=forged_python(tmp_path, 'made-up', unknown)),
    }}}
    variables = {'postmortem_checks': ['pi_ir_tx'], 'postmortem_fail_on': 'never'}

    for mode, args in (('check', ['--check', '--diff']), ('real', [])):
        run = run_audit(tmp_path / mode, inventory, variables, args=args, timeout=600,
                        playbook='homelab.postmortem.remediate')
        assert run.proc.returncode == 0, run.output
        assert sorted(os.listdir(str(marks))) == [], run.output      # no evil role, no advised interpreter
        assert not evil_report_dir.exists()
        assert not os.path.exists('/tmp/pwned')
        # The registry's role ran, on the image the user audited (postmortem_root), not on '/'.
        assert 'Run homelab.postmortem.pi_ir_tx' in run.output
        forged = run.host('forged')
        dropped = '\n'.join(forged['remediation']['dropped'])
        for name in ('postmortem_report_dir', 'ansible_python_interpreter', 'ansible_become', 'ansible_ssh_common_args',
                     '_postmortem_plan', 'pi_ir_tx_reboot', 'pi_ir_tx_root', 'evilrole'):
            assert name in dropped, (name, dropped)
        assert 'advice from 1 host(s) not used' in run.output
        # The host that answered for made-up checks: one failed row, nothing fixed, no column.
        made_up = run.host('made-up-ids')
        assert made_up['state'] == 'failed' and 'check id(s) this run does not know' in made_up['reason']
        assert [c['id'] for c in run.report['checks']] == ['pi_ir_tx']
        assert made_up['remediation']['state'] == 'nothing_to_run'
        # The terminal shows escapes; the report keeps the host's text.
        assert '\x1b' not in run.output and '\\x1b[2J\\x1b]0;owned\\x07' in run.output
        assert 'FORGED' not in run.output.split('Findings per check')[1].split('Worst finding')[0]
        assert forged['findings']['pi_ir_tx']['summary'].startswith(ESCAPES)
        if mode == 'check':
            assert config.read_text() == original
    assert 'dtoverlay=gpio-ir-tx,gpio_pin=17' in config.read_text()


def test_a_variable_nested_past_ansibles_limit_is_named(tmp_path):
    """Ansible's templating fails about 200 levels deep with "Recursive loop detected in template",
    naming nothing; the input check names the variable and the host, and no host is contacted."""
    deep = {}
    level = deep
    for _level in range(300):
        level['a'] = {}
        level = level['a']
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_settings': deep})
    assert run.proc.returncode != 0
    assert ('postmortem_settings could not be read for localhost: it is nested deeper than Ansible can template'
            in run.output), run.output
    assert 'Run the detections' not in run.output
