"""The audit as a CI gate, with real ansible-playbook runs: input checked before any host,
roots that are not images, report directories that cannot be written, and `make audit` from a
fresh clone (under a path with a space) on this machine, which has podman and no test set-up
in that clone's environment."""
import os
import shlex
import subprocess

import pytest

from helpers import REPO_ROOT, local_host, run_audit

ONE = {'all': {'hosts': {'localhost': local_host()}}}


@pytest.mark.parametrize('extra,message', [
    ({'postmortem_fail_on': 'critical'}, "postmortem_fail_on: 'critical' is not one of never"),
    ({'postmortem_probes': ['lora_cahce']}, 'unknown probe(s) lora_cahce'),
    ({'postmortem_settings': {'podman_export_idmap': {'probe_max_containers': 'five'}}},
     'settings.podman_export_idmap.probe_max_containers: expected int'),
    ({'postmortem_checks': ['all', '!podmn']}, "unknown check 'podmn'"),
    ({'postmortem_root': 'relative/card'}, "postmortem_root for localhost: root 'relative/card' is relative"),
    ({'postmortem_command_timeout': 0}, 'postmortem_command_timeout must be at least 1 second'),
    ({'postmortem_task_timeout': 'abc'}, "postmortem_task_timeout must be a whole number of seconds, got 'abc'"),
    ({'postmortem_become': 'maybe'}, "postmortem_become must be true or false, got 'maybe'"),
    ({'postmortem_check': ['pi_ir_tx']}, 'postmortem_check is not a variable of homelab.postmortem (did you mean postmortem_checks?)'),
    ({'postmortem_fail_on_unaudite': False},
     'postmortem_fail_on_unaudite is not a variable of homelab.postmortem (did you mean postmortem_fail_on_unaudited?)'),
])
def test_input_mistakes_stop_the_run_once_before_any_host(tmp_path, extra, message):
    run = run_audit(tmp_path, ONE, extra)
    assert run.proc.returncode != 0
    assert message in run.output, run.output
    # Nothing ran on the host: the audit task never started, so no report exists.
    assert 'Run the detections in one round trip' not in run.output
    assert not os.path.exists(run.report_dir)


def test_a_misspelled_inventory_variable_stops_the_run(tmp_path):
    """Set in the inventory (a host var), not only as an extra var."""
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host(postmortem_prob=['ir_tx_trace'])}}})
    assert run.proc.returncode != 0
    assert 'postmortem_prob is not a variable of homelab.postmortem (did you mean postmortem_probes?)' in run.output
    assert 'Run the detections in one round trip' not in run.output


@pytest.mark.parametrize('inventory,extra,args,matched', [
    ({'all': {'hosts': {}}}, {}, (), "no host matched 'all' in "),
    (ONE, {'postmortem_hosts': 'web*'}, (), "no host matched 'web*' in "),
    (ONE, {'postmortem_hosts': 'web*'}, ('--limit', 'localhost'), 'with --limit localhost'),
])
def test_a_run_that_audits_no_host_fails_the_gate_and_says_so(tmp_path, inventory, extra, args, matched):
    """An empty inventory, or a pattern that matches nothing, used to exit 0 with fail_on set, and
    left the previous run's report in place looking current."""
    old = tmp_path / 'report'
    old.mkdir(parents=True)
    (old / 'postmortem.json').write_text('{"hosts": [{"name": "from-last-week"}]}')
    run = run_audit(tmp_path, inventory, dict(extra, postmortem_fail_on='at_risk'), args=args)
    assert run.proc.returncode != 0, run.output
    assert 'NOTHING WAS AUDITED: ' in run.output and matched in run.output
    assert run.report['hosts'] == [] and matched in run.report['nothing_audited']
    allowed = run_audit(tmp_path / 'allowed', inventory, dict(extra, postmortem_fail_on_no_hosts=False), args=args)
    assert allowed.proc.returncode == 0, allowed.output
    assert 'Gate: passed although nothing was audited' in allowed.output


def test_an_input_mistake_in_a_run_that_matches_no_host_is_still_reported(tmp_path):
    run = run_audit(tmp_path, {'all': {'hosts': {}}}, {'postmortem_fail_on': 'bogus'})
    assert run.proc.returncode != 0
    assert "postmortem_fail_on: 'bogus' is not one of never" in run.output
    assert not os.path.exists(run.report_dir)


@pytest.mark.parametrize('extra,args,message', [
    ({'postmortem_fail_on': 'bogus'}, (), "postmortem_fail_on: 'bogus' is not one of never"),
    ({'postmortem_remediate': ['pi_ir_txx']}, (), "'pi_ir_txx' is not a detection with a remediation role (did you mean pi_ir_tx?)"),
    ({'postmortem_remediate': ['ollama_schema_order']}, (), 'ollama_schema_order has no remediation role'),
    ({}, ('--tags', 'pi_ir_txx'), '--tags pi_ir_txx names no detection (did you mean pi_ir_tx?)'),
    ({}, ('--tags', 'ollama_schema_order'), '--tags ollama_schema_order: that detection has no remediation role'),
    ({'postmortem_serial': 0}, (), 'postmortem_serial must be a number of hosts (at least 1) or a percentage'),
])
def test_remediate_checks_everything_before_it_acts(tmp_path, extra, args, message):
    """remediate.yml used to apply the fixes (changed=1) and only then fail on a bad fail_on; now no
    host is contacted: the image that needs a fix is left as it was."""
    image = tmp_path / 'card'
    (image / 'boot' / 'firmware').mkdir(parents=True)
    (image / 'lib' / 'modules' / '6.18.3+rpt-rpi-v8').mkdir(parents=True)
    config = image / 'boot' / 'firmware' / 'config.txt'
    config.write_text('dtoverlay=pwm-ir-tx,gpio_pin=17\n')
    inventory = {'all': {'hosts': {'img': local_host(postmortem_root=str(image))}}}
    run = run_audit(tmp_path, inventory, extra, args=args, playbook='homelab.postmortem.remediate')
    assert run.proc.returncode != 0
    assert message in run.output, run.output
    assert 'The remediation was not started' in run.output
    assert 'Run the detections (before)' not in run.output and 'changed=1' not in run.output
    assert config.read_text() == 'dtoverlay=pwm-ir-tx,gpio_pin=17\n'


@pytest.mark.parametrize('make,reason', [
    ('missing', 'does not exist on this host'),
    ('file', 'is not a directory'),
])
def test_a_root_that_is_not_an_image_fails_that_host_and_the_gate(tmp_path, make, reason):
    root = tmp_path / 'card'
    if make == 'file':
        root.write_text('not an image')
    run = run_audit(tmp_path, ONE, {'postmortem_root': str(root), 'postmortem_fail_on': 'affected'})
    assert run.proc.returncode != 0
    host = run.host('localhost')
    assert host['state'] == 'failed'
    assert reason in host['reason']


def test_home_in_root_is_not_expanded(tmp_path):
    image = tmp_path / '$HOME'
    (image / 'boot' / 'firmware').mkdir(parents=True)
    (image / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=gpio-ir-tx,gpio_pin=17\n')
    run = run_audit(tmp_path, ONE, {'postmortem_root': str(image), 'postmortem_checks': ['pi']})
    assert run.proc.returncode == 0, run.output
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'ok'
    assert run.host('localhost')['run']['root'] == str(image)


def test_a_report_directory_that_is_a_file_stops_the_run_before_any_host(tmp_path):
    """Found by the input check, not after every host was audited (issue 35); a read-only one, with
    proof that no host was contacted, is test_audit_playbook's. The writer's own refusal, for a
    directory that changes during the run, is report_files.write's (unit tests)."""
    blocker = tmp_path / 'report'
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text('x')
    run = run_audit(tmp_path, ONE)
    assert run.proc.returncode != 0
    assert 'The audit was not started' in run.output
    assert 'postmortem_report_dir: the report directory %s is not a directory (a file of that name exists)' % blocker in run.output
    assert 'Run the detections in one round trip' not in run.output


def test_make_audit_from_a_fresh_clone_under_a_path_with_a_space(tmp_path):
    clone = tmp_path / 'sp ace' / 'postmortem'
    subprocess.run(['git', 'clone', '-q', REPO_ROOT, str(clone)], check=True)
    env = dict(os.environ)
    for name in ('CONTAINERS_CONF', 'ANSIBLE_COLLECTIONS_PATH', 'POSTMORTEM_COLLECTIONS_PATH', 'MAKEFLAGS', 'MFLAGS'):
        env.pop(name, None)
    proc = subprocess.run(['make', 'audit'], cwd=str(clone), env=env, capture_output=True, text=True, timeout=900,
                          check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert os.path.exists(clone / 'postmortem-report' / 'postmortem.json')
    # No test setting leaks into what users run: podman is installed here and answers.
    for check in ('podman_restart_userns', 'podman_export_idmap'):
        assert 'localhost %s [error]' % check not in output, output
    assert 'CONTAINERS_CONF' not in output

    # The command it prints works as printed, from another directory.
    printed = [line for line in output.splitlines() if line.startswith('==> ANSIBLE_COLLECTIONS_PATH=')][0][4:]
    words = shlex.split(printed)
    assert words[0].startswith('ANSIBLE_COLLECTIONS_PATH=')
    again = subprocess.run(['env'] + words + ['-e', '{"postmortem_report_dir": "%s"}' % (tmp_path / 'again')],
                           cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert os.path.exists(tmp_path / 'again' / 'postmortem.json')
