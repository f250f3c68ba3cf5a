"""What a remediation run records per finding, and the command the audit prints for a finding, run as printed (#44).

Real components: a real llama-server with a real LoRA adapter and prompt caching on (llama_lora_cache
at_risk), started by this test and not by systemd, so the llama_server role can only say what to change
by hand; a declared check that fires on this machine (advice only: never a role); an SD card image whose
config.txt the pi_ir_tx role really edits (a fix a run would make). Nothing is stubbed: each is the real
ansible-playbook with the collection as built.
"""
import json
import os
import shlex
import subprocess

from helpers import ansible_env, local_host, pi_image, run_audit

MARKER_CHECK = """checks:
  - id: site.marker_present
    title: The test's marker file is present
    docs: tests/e2e/test_remediate_outcomes_real.py
    advice:
      - Remove the marker file by hand.
    gather:
      - name: marker
        kind: file
        path: {path}
    judge:
      affected: marker.exists
      summary: "the marker is there"
"""


def checks_file(tmp_path):
    marker = tmp_path / 'marker'
    marker.write_text('x')
    path = tmp_path / 'site-checks.yml'
    path.write_text(MARKER_CHECK.format(path=marker))
    return str(path)


def test_check_mode_records_would_fix_and_by_hand_with_the_roles_reason(tmp_path, llama_server, lora_adapter):
    """remediate --check: the image's pi_ir_tx is would_fix; on this machine the declared check and
    llama_lora_cache (a llama-server no systemd service starts) are manual, the latter with the role's
    own reason. Before #44 the summary said "a run without --check would apply the fixes" for all."""
    server = llama_server('--lora', lora_adapter)
    root = pi_image(tmp_path)
    before = (root / 'boot' / 'firmware' / 'config.txt').read_text()
    inventory = {'all': {'hosts': {
        'localhost': local_host(postmortem_checks=['llama_lora_cache', 'site.marker_present']),
        'pi-image': local_host(postmortem_root=str(root), postmortem_checks=['pi_ir_tx'])}}}
    run = run_audit(tmp_path, inventory, {'postmortem_check_files': checks_file(tmp_path)}, args=['--check', '--diff'],
                    timeout=900, playbook='homelab.postmortem.remediate')
    assert run.proc.returncode == 0, run.output
    assert (root / 'boot' / 'firmware' / 'config.txt').read_text() == before
    outcomes = dict((h['name'], h['remediation']['outcomes']) for h in run.report['hosts'])
    assert outcomes['pi-image']['pi_ir_tx']['outcome'] == 'would_fix', outcomes
    assert outcomes['localhost']['site.marker_present'] == {
        'outcome': 'manual', 'why': 'a declared check has no automatic fix: Remove the marker file by hand.'}
    lora = outcomes['localhost']['llama_lora_cache']
    assert lora['outcome'] == 'manual', lora
    assert 'pid %d' % server.pid in lora['why'] and 'not started by a system service' in lora['why'], lora
    assert run.report['outcomes'] == {'would_fix': 1, 'manual': 2}
    assert ('Remediation (CHECK MODE: nothing was changed):\n  a run without --check would fix 1; 2 need a change by hand'
            in run.output), run.output
    assert '  by hand: localhost/site.marker_present: a declared check has no automatic fix' in run.output
    assert '  would fix: pi-image/pi_ir_tx' in run.output
    assert 'would apply the fixes' not in run.output


def test_the_printed_fix_command_runs_as_printed(tmp_path):
    """The audit's postmortem.json carries, for the open finding, the remediate command for that host and
    check; the terminal prints it whole; run through a shell exactly as written it shows the diff in check
    mode and records would_fix, touching nothing."""
    root = pi_image(tmp_path)
    config = root / 'boot' / 'firmware' / 'config.txt'
    before = config.read_text()
    inventory = {'all': {'hosts': {'localhost': local_host(postmortem_checks=['pi_ir_tx']),
                                   'pi-image': local_host(postmortem_root=str(root))}}}
    audit = run_audit(tmp_path, inventory, {'postmortem_checks': ['pi_ir_tx']})
    assert audit.proc.returncode == 0, audit.output
    fix = audit.host('pi-image')['fix']['pi_ir_tx']
    assert 'fix' not in audit.host('localhost')  # nothing open there
    argv = shlex.split(fix['command'])
    assert argv[:2] == ['ansible-playbook', 'homelab.postmortem.remediate']
    assert argv[argv.index('--limit') + 1] == 'pi-image' and argv[argv.index('--tags') + 1] == 'pi_ir_tx'
    assert argv[-2:] == ['--check', '--diff']
    assert json.loads(argv[argv.index('-e') + 1])['postmortem_root'] == str(root)
    # Printed whole: the lines after "fix (shows the diff ...)" join, without their continuations, to the command.
    lines = audit.output.splitlines()
    start = [i for i, line in enumerate(lines) if 'fix (shows the diff' in line][0] + 1
    printed = []
    for line in lines[start:]:
        printed.append(line.strip().lstrip('$ ').rstrip('\\').strip())
        if not line.endswith('\\'):
            break
    assert shlex.split(' '.join(printed)) == argv

    proc = subprocess.run(['bash', '-c', fix['command']], env=ansible_env(), cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert config.read_text() == before
    assert '+dtoverlay=gpio-ir-tx,gpio_pin=17' in proc.stdout
    with open(os.path.join(json.loads(argv[argv.index('-e') + 1])['postmortem_report_dir'], 'postmortem-remediate.json')) as handle:
        remediated = json.load(handle)
    assert [h['name'] for h in remediated['hosts']] == ['pi-image']
    assert remediated['hosts'][0]['remediation']['outcomes'] == {
        'pi_ir_tx': {'outcome': 'would_fix', 'why': 'the diff above is what a run without --check writes'}}
