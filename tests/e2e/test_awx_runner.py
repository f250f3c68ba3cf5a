"""The engine AWX and AAP use: the audit and the remediation through ansible-runner (its CLI, with a
project playbook that imports the collection's, as an AWX project would), and the execution
environment's build context from ansible-builder. No registry is reachable here, so the image itself
is not built; the context is checked, and the collection tarball it bakes in is installed and used.
"""
import json
import os
import subprocess

import yaml

from helpers import BUILD, REPO_ROOT, VENV_BIN, ansible_env, local_host


def runner(tmp_path, playbook, inventory, extravars):
    data = tmp_path / 'runner'
    for folder in ('project', 'inventory', 'env'):
        (data / folder).mkdir(parents=True, exist_ok=True)
    (data / 'project' / 'site.yml').write_text(yaml.safe_dump([{'import_playbook': playbook}]))
    (data / 'inventory' / 'hosts.json').write_text(json.dumps(inventory))
    (data / 'env' / 'extravars').write_text(json.dumps(extravars))
    (data / 'env' / 'envvars').write_text(json.dumps({'ANSIBLE_COLLECTIONS_PATH': os.path.join(BUILD, 'collections')}))
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-runner'), 'run', str(data), '-p', 'site.yml', '--ident', 'job1'],
                          env=ansible_env(), capture_output=True, text=True, timeout=600, check=False)
    artifacts = data / 'artifacts' / 'job1'
    return proc, artifacts


def test_audit_and_remediate_through_ansible_runner(tmp_path):
    root = tmp_path / 'sdcard'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=pwm-ir-tx\n')
    (root / 'lib' / 'modules' / '6.18.34+rpt-rpi-v8').mkdir(parents=True)
    inventory = {'all': {'hosts': {'localhost': local_host(), 'pi-image': local_host(postmortem_root=str(root))}}}
    report_dir = str(tmp_path / 'report')
    proc, artifacts = runner(tmp_path / 'audit', 'homelab.postmortem.audit', inventory,
                             {'postmortem_checks': ['pi_ir_tx'], 'postmortem_report_dir': report_dir})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert (artifacts / 'rc').read_text() == '0' and (artifacts / 'status').read_text() == 'successful'
    events = [json.loads(p.read_text()) for p in (artifacts / 'job_events').glob('*.json')]
    facts = [e for e in events if e.get('event') == 'runner_on_ok' and e['event_data'].get('task_action') ==
             'homelab.postmortem.audit_facts']
    assert sorted(e['event_data']['host'] for e in facts) == ['localhost', 'pi-image']
    with open(os.path.join(report_dir, 'postmortem.json')) as handle:
        report = json.load(handle)
    assert [h['findings']['pi_ir_tx']['status'] for h in report['hosts']] == ['not_applicable', 'at_risk']

    proc, artifacts = runner(tmp_path / 'remediate', 'homelab.postmortem.remediate', inventory,
                             {'postmortem_checks': ['pi_ir_tx'], 'postmortem_report_dir': report_dir})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert 'dtoverlay=gpio-ir-tx' in (root / 'boot' / 'firmware' / 'config.txt').read_text()
    assert 'Remediation: 1 fixed; 0 need a change by hand' in (artifacts / 'stdout').read_text()


def test_execution_environment_build_context(tmp_path):
    proc = subprocess.run([os.path.join(REPO_ROOT, 'scripts', 'ee.sh')], capture_output=True, text=True, timeout=300,
                          check=False, env=ansible_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    context = os.path.join(BUILD, 'ee-context')
    containerfile = open(os.path.join(context, 'Containerfile')).read()
    assert 'ansible-core==2.21.5 ansible-runner==2.4.3' in containerfile
    assert 'COPY _build/postmortem/ /tmp/postmortem/' in containerfile
    assert 'ansible-galaxy collection install' in containerfile
    with open(os.path.join(context, '_build', 'requirements.yml')) as handle:
        requirements = yaml.safe_load(handle)
    assert requirements['collections'] == [{'name': '/tmp/postmortem/homelab-postmortem.tar.gz', 'type': 'file'}]
    # The controller side's one Python dependency beyond ansible-core: jmespath, for declared checks.
    with open(os.path.join(context, '_build', 'requirements.txt')) as handle:
        assert 'jmespath==1.1.0' in handle.read().split()
    # The tarball the image installs is the collection: install it elsewhere and read a module's docs from it.
    tarball = os.path.join(context, '_build', 'postmortem', 'homelab-postmortem.tar.gz')
    # Only tmp_path: with the test run's collections path configured too, ansible-galaxy finds the collection
    # there and ansible-doc cannot import the copy in tmp_path.
    elsewhere = ansible_env(ANSIBLE_COLLECTIONS_PATH=str(tmp_path))
    subprocess.run([os.path.join(VENV_BIN, 'ansible-galaxy'), 'collection', 'install', tarball, '-p', str(tmp_path)],
                   env=elsewhere, check=True, capture_output=True, timeout=120)
    doc = subprocess.run([os.path.join(VENV_BIN, 'ansible-doc'), '-j', 'homelab.postmortem.vllm_lora_fold'],
                         env=elsewhere, capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(doc.stdout)['homelab.postmortem.vllm_lora_fold']['doc']['version_added'] == '0.2.0'
