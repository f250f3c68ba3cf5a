"""The audit playbook end to end: a real fleet run against this machine, a host
that cannot be reached, a host whose Python is missing, and an SD-card image
audited through ``root``."""
import os
import xml.etree.ElementTree as ET

from ansible_collections.homelab.postmortem.plugins.module_utils.registry import DETECTIONS
from helpers import local_host, run_audit

ALL_CHECKS = [d.ID for d in DETECTIONS]

K618 = '6.18.34+rpt-rpi-v8'


def fleet():
    return {'all': {'hosts': {
        'localhost': local_host(),
        # Nothing listens on port 1 of this loopback address: a real connection refusal.
        'deadhost': {'ansible_host': '127.0.0.9', 'ansible_port': 1, 'ansible_ssh_common_args': '-o ConnectTimeout=5'},
        'nopython': local_host(ansible_python_interpreter='/nonexistent/bin/python3'),
    }}}


def test_fleet_run_reports_every_host_and_writes_all_formats(tmp_path):
    run = run_audit(tmp_path, fleet())
    assert run.proc.returncode == 0, run.output
    states = dict((h['name'], h['state']) for h in run.report['hosts'])
    assert states == {'localhost': 'audited', 'deadhost': 'unreachable', 'nopython': 'failed'}
    assert 'Connection refused' in run.host('deadhost')['reason']
    # A host whose module could not start: the error line, the interpreter tried and the cure.
    assert run.host('nopython')['reason'].startswith(
        'no working Python: /bin/sh: 1: /nonexistent/bin/python3: not found; tried /nonexistent/bin/python3 '
        '(ansible_python_interpreter); set ansible_python_interpreter, e.g. -e ansible_python_interpreter=/usr/bin/python3'
    ), run.host('nopython')['reason']
    assert sorted(run.host('localhost')['findings']) == sorted(ALL_CHECKS)
    # This machine has no Pi boot config.
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'

    junit = ET.parse(os.path.join(run.report_dir, 'postmortem-junit.xml')).getroot()
    assert junit.get('tests') == str(3 * len(ALL_CHECKS))
    assert junit.find("./testsuite[@name='deadhost']/testcase[@name='pi_ir_tx']/error") is not None
    assert os.path.getsize(os.path.join(run.report_dir, 'postmortem.html')) > 5000

    # The terminal summary names every host and where the reports went.
    assert 'not audited: deadhost (unreachable), nopython (failed)' in run.output
    summary = run.output.split('  nopython: failed (not audited)\n', 1)[1].splitlines()
    assert summary[0].startswith('      no working Python: /bin/sh: 1: /nonexistent/bin/python3: not found; tried /nonexistent/')
    assert len(summary[0]) <= 100
    assert summary[1] == '      fix: set ansible_python_interpreter, e.g. -e ansible_python_interpreter=/usr/bin/python3'
    assert 'Full report: %s' % os.path.join(run.report_dir, 'postmortem.html') in run.output


def test_fail_threshold_fails_the_run_after_writing_the_report(tmp_path):
    run = run_audit(tmp_path, fleet(), {'postmortem_fail_on': 'error'})
    assert run.proc.returncode != 0
    assert '2 host(s) that could not be audited' in run.output
    assert run.report['totals']['unreachable'] == 1

    # A host that could not be audited fails any gate, however relaxed its threshold ...
    strict = run_audit(tmp_path, fleet(), {'postmortem_fail_on': 'affected'})
    assert strict.proc.returncode != 0, strict.output
    assert 'deadhost: unreachable (not audited)' in strict.output
    # ... unless the operator allows it.
    relaxed = run_audit(tmp_path, fleet(), {'postmortem_fail_on': 'affected', 'postmortem_fail_on_unaudited': False})
    assert relaxed.proc.returncode == 0, relaxed.output


def sd_image(tmp_path, config):
    root = tmp_path / 'sdcard'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text(config)
    (root / 'lib' / 'modules' / K618).mkdir(parents=True)
    (root / 'lib' / 'modules' / '6.12.47+rpt-rpi-v8').mkdir(parents=True)
    return str(root)


def test_image_audit_through_root(tmp_path):
    """An unflashed card's file tree: the Pi itself cannot run here, its files can."""
    image = sd_image(tmp_path, '[all]\ndtoverlay=vc4-kms-v3d\n[pi4]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n[all]\n')
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_root': image, 'postmortem_checks': ['pi_ir_tx'], 'postmortem_fail_on': 'at_risk'})
    assert run.proc.returncode != 0  # at_risk reached the threshold
    finding = run.finding('localhost', 'pi_ir_tx')
    assert finding['status'] == 'at_risk'
    assert finding['evidence']['next_boot_kernel'] == K618
    assert finding['evidence']['running_kernel'] is None  # nothing of this machine leaks into an image audit
    line = finding['evidence']['instances'][0]['evidence']
    assert (line['line'], line['pin'], line['section']) == (4, '17', '[pi4]')
    assert run.host('localhost')['run']['live'] is False


def test_image_already_fixed_is_ok(tmp_path):
    image = sd_image(tmp_path, 'dtoverlay=gpio-ir-tx,gpio_pin=17\n')
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_root': image, 'postmortem_checks': ['pi_ir_tx'], 'postmortem_fail_on': 'at_risk'})
    assert run.proc.returncode == 0, run.output
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'ok'


def test_check_mode_and_unknown_check(tmp_path):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, args=['--check'])
    assert run.proc.returncode == 0, run.output
    assert 'changed=0' in run.output
    bad = run_audit(tmp_path / 'bad', {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_checks': ['pi_ir_rx']})
    # A typo stops the run once, on the controller, before any host is audited.
    assert bad.proc.returncode != 0
    assert "unknown check 'pi_ir_rx'" in bad.output
    assert 'The audit was not started' in bad.output
    assert not os.path.exists(bad.report_dir)


def test_the_payload_carries_what_the_probes_import_late(tmp_path):
    """The probe-only helpers are imported inside functions (so a host without the service does not
    compile them); Ansible's dependency finder must still put them in the AnsiballZ payload, or an
    opt-in probe would fail on the host with an ImportError. The payload Ansible really sent,
    kept on the target and exploded there."""
    import glob
    import json
    import subprocess
    from helpers import VENV_BIN, ansible_env
    remote_tmp = tmp_path / 'remote'
    inventory = tmp_path / 'inventory.json'
    inventory.write_text(json.dumps({'all': {'hosts': {'localhost': local_host()}}}))
    env = ansible_env(ANSIBLE_KEEP_REMOTE_FILES='1', ANSIBLE_REMOTE_TMP=str(remote_tmp), ANSIBLE_PIPELINING='0')
    subprocess.run([os.path.join(VENV_BIN, 'ansible'), '-i', str(inventory), 'localhost', '-m', 'homelab.postmortem.audit_facts',
                    '-a', 'checks=pi_ir_tx'], env=env, check=True, capture_output=True, timeout=120)
    payload = glob.glob(str(remote_tmp / '*' / 'AnsiballZ_audit_facts.py'))
    assert len(payload) == 1, list(remote_tmp.rglob('*'))
    subprocess.run([local_host()['ansible_python_interpreter'], payload[0], 'explode'], cwd=os.path.dirname(payload[0]),
                   check=True, capture_output=True)
    exploded = os.path.join(os.path.dirname(payload[0]), 'debug_dir')
    utils = os.path.join(exploded, 'ansible_collections', 'homelab', 'postmortem', 'plugins', 'module_utils')
    for late in ('llama/lora_probe.py', 'llama/probes.py', 'rpi/ir_trace.py', 'podman/export.py', 'loopback_http.py',
                 'deadline_http.py', 'bounded_json.py'):
        assert os.path.isfile(os.path.join(utils, late)), late


def marking_host(tmp_path):
    """localhost, through an interpreter that leaves a marker file before it runs the real Python:
    the marker exists if and only if a module was started on the host."""
    marker = tmp_path / 'contacted'
    wrapper = tmp_path / 'python-marking'
    wrapper.write_text('#!/bin/sh\ntouch %s\nexec %s "$@"\n' % (marker, local_host()['ansible_python_interpreter']))
    wrapper.chmod(0o755)
    return {'all': {'hosts': {'localhost': local_host(ansible_python_interpreter=str(wrapper))}}}, marker


def test_checks_typed_as_gather_subset_takes_them(tmp_path):
    """-e key=value gives a string; the module's list option splits it at commas (ansible-core's
    check_type_list), and the input check reads it the same way: a check and a group."""
    inventory, marker = marking_host(tmp_path)
    run = run_audit(tmp_path, inventory, args=['-e', 'postmortem_checks=pi_ir_tx,podman'])
    assert run.proc.returncode == 0, run.output
    assert sorted(run.host('localhost')['findings']) == ['pi_ir_tx', 'podman_export_idmap', 'podman_restart_userns']
    assert marker.exists()  # the marker works: its absence in the tests below means something
    marker.unlink()

    typo = run_audit(tmp_path / 'typo', inventory, args=['-e', 'postmortem_checks=pi_irtx'])
    assert typo.proc.returncode != 0
    assert "postmortem_checks: unknown check 'pi_irtx' (did you mean pi_ir_tx?)" in typo.output, typo.output
    as_text = run_audit(tmp_path / 'text', inventory, args=['-e', 'postmortem_checks=["pi"]'])
    assert as_text.proc.returncode != 0
    wanted = """write -e '{"postmortem_checks": ["pi"]}' or -e postmortem_checks=pi"""
    assert wanted in as_text.output.replace('\\"', '"'), as_text.output
    assert 'Run the detections in one round trip' not in typo.output + as_text.output and not marker.exists()


def test_an_unwritable_report_directory_is_refused_before_any_host_is_contacted(tmp_path):
    """A read-only mount (root passes mode bits, not a read-only filesystem), then, in check mode, a
    file where a missing report directory's parent should be and a textfile directory that does not
    exist: refused by the input check, and the marking interpreter shows no host ran a module."""
    import subprocess
    inventory, marker = marking_host(tmp_path)
    target = tmp_path / 'ro-report'
    target.mkdir()
    if os.geteuid() == 0:
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', str(target)], check=True)
    else:
        target.chmod(0o555)
    try:
        run = run_audit(tmp_path, inventory, {'postmortem_report_dir': str(target)})
    finally:
        if os.geteuid() == 0:
            subprocess.run(['umount', str(target)], check=False)
    assert run.proc.returncode != 0
    assert 'The audit was not started' in run.output
    reason = 'is on a read-only filesystem' if os.geteuid() == 0 else 'is not writable for this user'
    assert 'postmortem_report_dir: the report directory %s %s' % (target, reason) in run.output, run.output
    assert 'Run the detections in one round trip' not in run.output and not marker.exists()

    (tmp_path / 'blocker').write_text('x')
    checked = run_audit(tmp_path, inventory, {'postmortem_report_dir': str(tmp_path / 'blocker' / 'report'),
                                              'postmortem_textfile_dir': str(tmp_path / 'no-textfile')}, args=['--check'])
    assert checked.proc.returncode != 0
    assert ('postmortem_report_dir: the report directory %s does not exist and cannot be created: %s is not a directory'
            % (tmp_path / 'blocker' / 'report', tmp_path / 'blocker')) in checked.output, checked.output
    assert 'postmortem_textfile_dir: the textfile directory %s does not exist' % (tmp_path / 'no-textfile') in checked.output
    assert not marker.exists() and not (tmp_path / 'no-textfile').exists()
