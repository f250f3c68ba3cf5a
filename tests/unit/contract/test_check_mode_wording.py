"""The check-mode wording checker (tests/check_mode_wording.py) and the callback that feeds it.

The messages below are the roles' own, before and after #35: the claims are what check mode printed
although nothing was written; the conditional forms are what it must print instead."""
import json
import os
import subprocess
import sys

import pytest

from ..helpers.paths import REPO_ROOT, TESTS_DIR

sys.path.insert(0, TESTS_DIR)

import check_mode_wording  # noqa: E402  pylint: disable=wrong-import-position

CLAIMING = [
    # pi_ir_tx before #35, printed by `remediate --check --diff` for an image with config.txt unchanged.
    'The image under /mnt/sd now loads gpio-ir-tx: it takes effect on the next Pi that boots from it.',
    'Reboot required: config.txt now loads gpio-ir-tx, but the running kernel keeps using pwm-ir-tx until the next boot.',
    'No trial boot, config.txt is changed directly: board pi3.',
    'tryboot.txt was written',
    'Restarted llama.service',
    'wrote /etc/containers/systemd/web.container',
]
CONDITIONAL = [
    'The image under /mnt/sd would load gpio-ir-tx once written (check mode: nothing was written).',
    'Check mode: config.txt would load gpio-ir-tx after this change; nothing was written.',
    'would: scale service web to 0',
    'pi_ir_tx: not fixed: not in postmortem_remediate',
    'no container web, but /etc/containers/systemd/web.container exists: already converted',
    'not promoted, nothing was changed: this boot is not a trial boot',
    'config.txt unchanged, tryboot.txt would be removed',
    'pid 42: not started by a system service: change it by hand: add --cache-ram 0',
    'check mode: nothing was changed',
]


@pytest.mark.parametrize('message', CLAIMING)
def test_a_claim_of_change_is_found(message):
    assert check_mode_wording.claims(message)


@pytest.mark.parametrize('message', CONDITIONAL)
def test_conditional_and_negative_wording_passes(message):
    assert check_mode_wording.claims(message) == []


def test_one_claiming_clause_among_conditional_ones_is_found():
    assert check_mode_wording.claims('Nothing was written; the unit now restarts on failure') == [
        'the unit now restarts on failure']


def test_findings_of_an_audit_are_not_role_messages():
    records = [{'action': 'homelab.postmortem.pi_ir_tx_facts', 'messages': ['the overlay was loaded']},
               {'action': 'homelab.postmortem.audit_report', 'messages': ['Remediation: 1 fixed; 0 need a change by hand']},
               {'action': 'ansible.builtin.debug', 'role': 'pi_ir_tx', 'messages': ['config.txt now loads x']}]
    assert [item['action'] for item, _hits in check_mode_wording.offending(records)] == ['ansible.builtin.debug']


def test_the_callback_records_check_mode_only_and_the_checker_exits_1(tmp_path):
    """The callback through a real ansible-playbook: a check run's debug message is recorded (and is a claim),
    a run without --check records nothing."""
    playbook = tmp_path / 'play.yml'
    playbook.write_text('- hosts: localhost\n  gather_facts: false\n  tasks:\n'
                        '    - ansible.builtin.debug:\n        msg: config.txt now loads gpio-ir-tx\n'
                        '    - ansible.builtin.debug:\n        msg: "{{ item }}"\n      loop: [would load it, loaded it]\n')
    found = tmp_path / 'messages.jsonl'
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=os.path.join(TESTS_DIR, 'callback_plugins'),
               ANSIBLE_CALLBACKS_ENABLED='check_mode_messages', POSTMORTEM_CHECK_MESSAGES=str(found),
               ANSIBLE_LOCALHOST_WARNING='false', ANSIBLE_INVENTORY_UNPARSED_WARNING='false')
    playbook_bin = os.path.join(REPO_ROOT, '.venv', 'bin', 'ansible-playbook')
    run = [playbook_bin, str(playbook), '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable]
    subprocess.run(run, env=env, check=True, capture_output=True, timeout=120)
    assert not found.exists()
    subprocess.run(run + ['--check'], env=env, check=True, capture_output=True, timeout=120)
    records = [json.loads(line) for line in found.read_text().splitlines()]
    assert [m for r in records for m in r['messages'] if 'load' in m] == [
        'config.txt now loads gpio-ir-tx', 'would load it', 'loaded it']
    checker = subprocess.run([sys.executable, os.path.join(TESTS_DIR, 'check_mode_wording.py'), str(found)],
                             capture_output=True, text=True, check=False)
    assert checker.returncode == 1
    assert 'config.txt now loads gpio-ir-tx' in checker.stdout and 'loaded it' in checker.stdout
    assert 'would load it' not in checker.stdout
