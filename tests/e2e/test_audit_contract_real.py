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
    ({'postmortem_fail_on': 'critical'}, "fail_on: 'critical' is not one of never"),
    ({'postmortem_probes': ['lora_cahce']}, 'unknown probe(s) lora_cahce'),
    ({'postmortem_settings': {'podman_export_idmap': {'probe_max_containers': 'five'}}},
     'settings.podman_export_idmap.probe_max_containers: expected int'),
    ({'postmortem_checks': ['all', '!podmn']}, "unknown check 'podmn'"),
    ({'postmortem_root': 'relative/card'}, "root for localhost: root 'relative/card' is relative"),
    ({'postmortem_command_timeout': 0}, 'command_timeout must be at least 1 second'),
])
def test_input_mistakes_stop_the_run_once_before_any_host(tmp_path, extra, message):
    run = run_audit(tmp_path, ONE, extra)
    assert run.proc.returncode != 0
    assert message in run.output, run.output
    # Nothing ran on the host: the audit task never started, so no report exists.
    assert 'Run the detections in one round trip' not in run.output
    assert not os.path.exists(run.report_dir)


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


def test_a_report_directory_that_is_a_file_still_prints_the_summary(tmp_path):
    blocker = tmp_path / 'report'
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text('x')
    run = run_audit(tmp_path, ONE)
    assert run.proc.returncode != 0
    assert 'homelab.postmortem audit: 1 host(s)' in run.output
    assert 'is not a directory (a file of that name exists)' in run.output


def test_a_read_only_report_directory_still_prints_the_summary(tmp_path):
    """Root ignores permission bits, so a read-only mount makes the directory really read-only."""
    target = tmp_path / 'report'
    target.mkdir(parents=True)
    if os.geteuid() == 0:
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', str(target)], check=True)
    else:
        target.chmod(0o555)
    try:
        run = run_audit(tmp_path, ONE)
    finally:
        if os.geteuid() == 0:
            subprocess.run(['umount', str(target)], check=False)
    assert run.proc.returncode != 0
    assert 'homelab.postmortem audit: 1 host(s)' in run.output
    assert 'is read-only for this user' in run.output or 'Read-only file system' in run.output, run.output


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
