"""Watching over time with the real playbook: what changed since the last audit, accepted findings, the
gate on new findings only, and the metrics file checked by promtool and served by a real
prometheus-node-exporter (Debian's packages) that the test starts on loopback; the alert rules are
checked and unit-tested with promtool."""
import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml

from helpers import REPO_ROOT, free_port, local_host, run_audit

RULES = os.path.join(REPO_ROOT, 'docs', 'prometheus', 'postmortem-alerts.yml')
RULE_TESTS = os.path.join(REPO_ROOT, 'docs', 'prometheus', 'postmortem-alerts.test.yml')


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail('%s is missing: make test-env installs Debian\'s prometheus and prometheus-node-exporter' % name)
    return path


def image(tmp_path, overlay='pwm-ir-tx,gpio_pin=17'):
    root = tmp_path / 'card'
    (root / 'boot' / 'firmware').mkdir(parents=True, exist_ok=True)
    (root / 'lib' / 'modules' / '6.18.3+rpt-rpi-v8').mkdir(parents=True, exist_ok=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=%s\n' % overlay)
    return root


def fleet(root):
    return {'all': {'hosts': {'localhost': local_host(), 'pi-card': local_host(postmortem_root=str(root))}}}


def audit(tmp_path, inventory, report_dir, **extra):
    variables = dict({'postmortem_checks': ['pi_ir_tx'], 'postmortem_report_dir': str(report_dir)}, **extra)
    run = run_audit(tmp_path, inventory, variables)
    run.report_dir = str(report_dir)
    return run


def test_a_second_audit_says_what_changed_and_the_gate_can_fail_on_new_findings_only(tmp_path):
    root = image(tmp_path)
    reports = tmp_path / 'reports'
    first = audit(tmp_path / 'first', fleet(root), reports)
    assert first.proc.returncode == 0, first.output
    assert 'Drift: no earlier audit to compare with' in first.output
    first_at = first.report['generated_at']
    second = audit(tmp_path / 'second', fleet(root), reports, postmortem_fail_on='at_risk', postmortem_fail_on_new_only=True)
    assert second.proc.returncode == 0, second.output  # known finding, nothing new: the new-only gate passes
    assert 'Since %s: nothing changed.' % first_at in second.output
    assert 'Gate: passed (nothing new at or above at_risk).' in second.output
    second_at = second.report['generated_at']
    image(tmp_path, 'gpio-ir-tx,gpio_pin=17')
    fixed = audit(tmp_path / 'fixed', fleet(root), reports)
    assert 'Since %s: 1 closed.' % second_at in fixed.output
    assert fixed.report['hosts'][1]['drift'] == {'pi_ir_tx': 'closed'}
    image(tmp_path)
    back = audit(tmp_path / 'back', fleet(root), reports, postmortem_fail_on='at_risk', postmortem_fail_on_new_only=True)
    assert back.proc.returncode != 0
    assert '1 reopened' in back.output and 'now open: pi-card/pi_ir_tx (reopened)' in back.output
    assert 'Gate: FAILED: 1 new finding(s) at or above at_risk.' in back.output


def test_an_accepted_finding_does_not_fail_the_gate_and_remediate_leaves_it(tmp_path):
    root = image(tmp_path)
    accept = tmp_path / 'accepted.yml'
    accept.write_text('- host: pi-*\n  check: pi_ir_tx\n  reason: blaster unplugged until spring\n  expires: 2099-03-01\n'
                      '- host: retired-pi\n  check: pi_ir_tx\n  reason: gone\n')
    run = audit(tmp_path, fleet(root), tmp_path / 'reports', postmortem_fail_on='at_risk', postmortem_accept=str(accept))
    assert run.proc.returncode == 0, run.output
    assert 'Accepted (postmortem_accept): 1 finding(s).' in run.output
    assert '#2 retired-pi/pi_ir_tx' in run.output
    assert run.host('pi-card')['accepted']['pi_ir_tx']['reason'] == 'blaster unplugged until spring'
    # The files of the audit's report (its docs pages, postmortem-docs/, are shared: both reports link there).
    audit_files = dict((name, (tmp_path / 'reports' / name).read_bytes()) for name in os.listdir(str(tmp_path / 'reports'))
                       if (tmp_path / 'reports' / name).is_file())
    docs = dict((p.name, p.read_bytes()) for p in (tmp_path / 'reports' / 'postmortem-docs').iterdir())
    # The remediation writes its before/after report into the same directory, in files of its own.
    remediate = run_audit(tmp_path / 'fix', fleet(root), {'postmortem_checks': ['pi_ir_tx'], 'postmortem_accept': str(accept),
                                                          'postmortem_report_dir': str(tmp_path / 'reports')},
                          playbook='homelab.postmortem.remediate', timeout=600)
    assert remediate.proc.returncode == 0, remediate.output
    assert 'pi_ir_tx: not fixed: accepted (postmortem_accept entry 1: blaster unplugged until spring)' in remediate.output
    assert 'pwm-ir-tx' in (root / 'boot' / 'firmware' / 'config.txt').read_text()
    assert remediate.report['kind'] == 'remediation'
    assert dict((name, (tmp_path / 'reports' / name).read_bytes()) for name in audit_files) == audit_files
    assert sorted(set(os.listdir(str(tmp_path / 'reports'))) - set(audit_files)) == [
        'postmortem-docs', 'postmortem-remediate-junit.xml', 'postmortem-remediate.html', 'postmortem-remediate.json',
        'postmortem-remediate.prom']
    assert dict((p.name, p.read_bytes()) for p in (tmp_path / 'reports' / 'postmortem-docs').iterdir()) == docs
    assert 'Full report: %s' % (tmp_path / 'reports' / 'postmortem-remediate.html') in remediate.output
    # The accept file is checked whole: every problem of every entry in one run, each naming its entry.
    broken = tmp_path / 'broken.yml'
    broken.write_text('- host: pi-*\n  check: pi_ir_tx\n'
                      '- host: pi-1\n  check: pi_irtx\n  reason: typo\n  expires: 2027-02-30\n'
                      '- host: pi-2\n  check: pi_ir_tx\n  reason: fine\n'
                      '- host: pi-3\n  check: pi_ir_tx\n  reason: r\n  expires: next spring\n')
    bad = audit(tmp_path / 'bad', fleet(root), tmp_path / 'reports-bad', postmortem_accept=str(broken))
    assert bad.proc.returncode != 0
    for problem in ('entry 1 (pi_ir_tx): reason must be a non-empty string', "entry 2 (pi_irtx): unknown check 'pi_irtx'",
                    'entry 2 (pi_irtx): expires 2027-02-30 is not a date: day is out of range for month',
                    "entry 4 (pi_ir_tx): expires must be a date (YYYY-MM-DD), got 'next spring'"):
        assert problem in bad.output, (problem, bad.output)
    assert 'entry 3' not in bad.output and not os.path.exists(str(tmp_path / 'reports-bad'))


def test_an_expired_acceptance_is_named(tmp_path):
    accept = tmp_path / 'accepted.yml'
    accept.write_text('- host: pi-card\n  check: pi_ir_tx\n  reason: until the kernel update\n  expires: 2026-01-01\n')
    run = audit(tmp_path, fleet(image(tmp_path)), tmp_path / 'reports', postmortem_fail_on='at_risk', postmortem_accept=str(accept))
    assert run.proc.returncode != 0
    assert 'Accepted (postmortem_accept): 0 finding(s); 1 expired, counting again.' in run.output
    assert '  expired: #1 pi-card/pi_ir_tx (since 2026-01-01)' in run.output


def test_metrics_pass_promtool_and_node_exporter_serves_them(tmp_path):
    promtool, exporter = tool('promtool'), tool('prometheus-node-exporter')
    textfiles = tmp_path / 'textfile'
    textfiles.mkdir()
    run = audit(tmp_path, fleet(image(tmp_path)), tmp_path / 'reports', postmortem_textfile_dir=str(textfiles))
    assert run.proc.returncode == 0, run.output
    metrics = (textfiles / 'postmortem.prom').read_text()

    def timeless(text):
        return [line for line in text.splitlines() if not line.startswith('homelab_postmortem_last_run_timestamp_seconds ')]
    assert timeless(metrics) == timeless((tmp_path / 'reports' / 'postmortem.prom').read_text())
    assert not [p for p in os.listdir(str(textfiles)) if p != 'postmortem.prom']  # no temporary file left
    checked = subprocess.run([promtool, 'check', 'metrics'], input=metrics, capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0 and not checked.stdout.strip() and not checked.stderr.strip(), checked.stdout + checked.stderr

    port = free_port()
    server = subprocess.Popen([exporter, '--web.listen-address=127.0.0.1:%d' % port, '--collector.disable-defaults',
                               '--collector.textfile', '--collector.textfile.directory=%s' % textfiles],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        scraped = None
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=5) as answer:
                    scraped = answer.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        assert scraped is not None, 'node_exporter did not answer'
    finally:
        server.terminate()
        server.wait(timeout=20)
    assert 'homelab_postmortem_finding_status{check="pi_ir_tx",host="pi-card"} 4' in scraped
    assert 'homelab_postmortem_hosts{state="audited"} 2' in scraped
    assert 'node_textfile_scrape_error 0' in scraped


def test_alert_rules_are_valid_and_behave(tmp_path):
    promtool = tool('promtool')
    checked = subprocess.run([promtool, 'check', 'rules', RULES], capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([promtool, 'test', 'rules', RULE_TESTS], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(RULE_TESTS), check=False)
    assert tested.returncode == 0 and 'SUCCESS' in tested.stdout, tested.stdout + tested.stderr
    # Every rule is tested firing and not firing, and pages only for an affected finding.
    with open(RULES) as handle:
        rules = [r for group in yaml.safe_load(handle)['groups'] for r in group['rules']]
    with open(RULE_TESTS) as handle:
        cases = [case for test in yaml.safe_load(handle)['tests'] for case in test['alert_rule_test']]
    for rule in rules:
        mine = [case for case in cases if case['alertname'] == rule['alert']]
        assert [c for c in mine if c['exp_alerts']] and [c for c in mine if not c['exp_alerts']], rule['alert']
    assert dict((r['alert'], r['labels']['severity']) for r in rules if r['labels']['severity'] != 'warning') == {
        'PostmortemAffectedFinding': 'critical'}


def test_the_report_json_carries_its_schema_and_drift(tmp_path):
    run = audit(tmp_path, fleet(image(tmp_path)), tmp_path / 'reports')
    with open(os.path.join(run.report_dir, 'postmortem.json')) as handle:
        data = json.load(handle)
    assert data['schema_version'] == 3 and data['kind'] == 'audit'
    assert data['drift']['counts']['opened'] == 1 and data['hosts'][1]['drift'] == {'pi_ir_tx': 'opened'}
    assert data['run']['duration_seconds'] > 0
