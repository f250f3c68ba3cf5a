"""Hostile input through real ansible-playbook runs, where a host's result or the fleet's report is
at stake (#24): the host result always arrives, the other detections still run, the report is
written and is strict JSON.

- ansible-core 2.19 fails the task that templates a registered result nested about 200 levels
  deep ("Recursive loop detected in template": measured, 200 passes and 250 fails), and that task
  is audit_report, the fleet's report. A test-only module (``library/`` beside a test playbook)
  returns such a result raw: the report must survive it, that host a failed row with the reason.
- The same depth kept as evidence by a detection inside the real audit_facts code (a test-only
  module that swaps one detection's detect() and calls facts_module.main()): the host keeps every
  finding, the deep one cut and marked.
- The Docker detection against a fake Engine API on a unix socket (tests/hostile_servers.py:
  trickling, nested, wrong types) through the real audit playbook; the Ollama detection against
  a trickling HTTP server. No real daemon answers like this on purpose.
"""
import json
import os
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from helpers import local_host, run_audit, run_module

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position

SLACK_S = 90  # ansible-playbook's own start-up and the report, on a loaded 2-core machine

RAW_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(depth=dict(type='int')), supports_check_mode=True)
    value = 'bottom'
    for _level in range(module.params['depth']):
        value = {'d': value}
    finding = {'id': 'pi_ir_tx', 'title': 't', 'status': 'ok', 'summary': 's', 'evidence': {'deep': value},
               'remediation': {'role': None, 'vars': {}, 'module': None, 'manual': [], 'disruption': 'none'},
               'references': []}
    module.exit_json(changed=False, ansible_facts={'postmortem': {'pi_ir_tx': finding}, 'postmortem_run': {}})


main()
'''

DEEP_DETECTION_MODULE = '''#!/usr/bin/python
from ansible_collections.homelab.postmortem.plugins.module_utils import facts_module
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding


def keeps_deep_evidence(ctx, detection, settings):
    value = 'bottom'
    for _level in range(%d):
        value = {'d': value}
    return make_finding(detection, 'at_risk', 'kept evidence %d levels deep', evidence={'deep': value, 'count': 3})


# The registry's own object, changed in place: its first question answers with the deep finding.
pi_ir_tx.DETECTION._question = keeps_deep_evidence
pi_ir_tx.DETECTION.APPLIES = dict(pi_ir_tx.DETECTION.APPLIES, image=True)
facts_module.main()
'''

PLAYBOOK = '''- hosts: all
  gather_facts: false
  tasks:
    - name: A result as a test-only module returns it
      {module}:
{args}
      register: postmortem_gather
      ignore_errors: true
    - name: The collection's real report
      homelab.postmortem.audit_report:
        dest: "{{{{ postmortem_report_dir }}}}"
      run_once: true
'''


def playbook_with(tmp_path, name, source, args):
    (tmp_path / 'library').mkdir(parents=True, exist_ok=True)
    (tmp_path / 'library' / (name + '.py')).write_text(source)
    lines = ''.join('        %s: %s\n' % (k, json.dumps(v)) for k, v in args.items())
    path = tmp_path / 'deep.yml'
    path.write_text(PLAYBOOK.format(module=name, args=lines or '        {}\n'))
    return str(path)


def strict_report(run):
    with open(os.path.join(run.report_dir, 'postmortem.json')) as handle:
        report = json.loads(handle.read(), parse_constant=lambda name: pytest.fail('non-strict JSON %s' % name))
    ET.parse(os.path.join(run.report_dir, 'postmortem-junit.xml'))
    return report


@pytest.mark.parametrize('depth', [250, 450])
def test_a_result_ansible_cannot_template_costs_only_its_host(tmp_path, depth):
    """Before: the audit_report task failed (the whole fleet's report) with "Recursive loop detected
    in template: maximum recursion depth exceeded"."""
    playbook = playbook_with(tmp_path, 'raw_deep_facts', RAW_MODULE, {'depth': depth})
    inventory = {'all': {'hosts': {'deep': local_host(), 'fine': local_host()}}}
    run = run_audit(tmp_path, inventory, playbook=playbook)
    # Both rows are failed (Ansible cannot template hostvars once one result is too deep), so nothing was
    # audited: that fails the run by the gate's words (issue 34), never by the template error.
    assert run.proc.returncode != 0 and 'none of the 2 host(s) could be audited (2 failed)' in run.output, run.output[-3000:]
    report = strict_report(run)
    for name in ('deep', 'fine'):
        host = [h for h in report['hosts'] if h['name'] == name][0]
        assert host['state'] == 'failed', host
        assert host['reason'] == ('its postmortem_gather could not be read on the controller: Recursive loop '
                                  'detected in template: maximum recursion depth exceeded'), host['reason']


def test_a_200_level_result_still_reaches_the_report(tmp_path):
    """The other side of the measured limit: 200 levels template, and the finding is kept whole."""
    playbook = playbook_with(tmp_path, 'raw_deep_facts', RAW_MODULE, {'depth': 200})
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, playbook=playbook)
    assert run.proc.returncode == 0, run.output[-3000:]
    host = strict_report(run)['hosts'][0]
    assert host['state'] == 'audited' and host['findings']['pi_ir_tx']['status'] == 'ok'


@pytest.mark.parametrize('depth', [450, 5000])
def test_deep_evidence_kept_by_a_detection_leaves_the_host_bounded(tmp_path, depth):
    """Through the real audit_facts code: before, json_safe raised RecursionError at 600 levels and
    the host lost every finding; at 450 the result reached the controller and broke its report."""
    playbook = playbook_with(tmp_path, 'deep_detection_facts', DEEP_DETECTION_MODULE % (depth, depth),
                             {'checks': ['pi', 'llama_sleep_race'], 'root': str(tmp_path / 'image')})
    (tmp_path / 'image').mkdir()
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, playbook=playbook)
    assert run.proc.returncode == 0, run.output[-3000:]
    host = strict_report(run)['hosts'][0]
    assert host['state'] == 'audited', host
    deep = host['findings']['pi_ir_tx']
    assert deep['status'] == 'at_risk' and deep['evidence']['count'] == 3
    assert deep['evidence']['cut'] == 'cut where marked: values nested deeper than 64 levels'
    assert '(cut: nested deeper than 64 levels)' in json.dumps(deep)
    assert host['findings']['llama_sleep_race']['status'] == 'not_applicable'  # the other detection still ran


def docker_settings(sock, **extra):
    values = {'socket': 'unix://' + sock, 'api_timeout': 2, 'journal_unit': ''}
    values.update(extra)
    return {'postmortem_checks': ['docker', 'pi'], 'postmortem_settings': {'docker_overlay_sandbox': values}}


NET_ID = 'ak7of1jriprxzfppltmyzgkiw'
CID = 'c' * 64
FAILED_TASK = {'ID': 't1', 'ServiceID': 's1', 'NetworksAttachments': [{'Network': {'ID': NET_ID}}],
               'Status': {'State': 'failed', 'Timestamp': 'now',
                          'Err': 'starting container failed: Bind for 0.0.0.0:8080 failed: port is already allocated'}}


def engine(**overrides):
    answers = {
        '/version': (200, {'Version': '29.1.0', 'ApiVersion': '1.52'}),
        '/info': (200, {'Swarm': {'LocalNodeState': 'active', 'NodeID': 'n1', 'ControlAvailable': True}}),
        '/networks': (200, [{'Name': 'ovs', 'Id': NET_ID, 'Driver': 'overlay', 'Ingress': False}]),
        '/networks/' + NET_ID: (200, {'Name': 'ovs', 'Id': NET_ID, 'Containers': {
            CID: {'Name': 'web', 'MacAddress': '02:42:0a:00:01:02', 'IPv4Address': '10.0.1.2/24'}}}),
        '/containers/%s/json' % CID: (200, {'State': {'Status': 'running', 'Running': True, 'Pid': '4321'}}),
        '/tasks': (200, []),
    }
    answers.update(overrides)
    return hs.routes(answers)


@pytest.mark.needs_root('docker_overlay_sandbox needs root to run at all')
@pytest.mark.parametrize('case,behaviour,status,fragment,bound', [
    ('trickles /version', engine(**{'/version': hs.trickle_body(b'{"Version": "29.1.0"}', 0.2)}), 'unknown',
     'Docker API GET /version did not answer within 2 s (setting api_timeout)', 2),
    ('/networks 100,000 deep', engine(**{'/networks': (200, hs.nested_json(100000))}), 'error',
     'Docker API GET /networks answered JSON that cannot be used: nested deeper than 64 levels (100000)', 2),
    ('State.Pid a string', engine(), 'unknown', 'field State.Pid is a string, not an integer', 2),
    ('Engine version abc', engine(**{'/version': (200, {'Version': 'abc'}), '/tasks': (200, [FAILED_TASK]),
                                     '/networks/' + NET_ID: (200, {'Name': 'ovs', 'Id': NET_ID, 'Containers': {}})}),
     'unknown', "the Engine version 'abc' is not a version this audit can compare", 2),
])
def test_a_hostile_docker_api_through_the_audit_playbook(tmp_path, case, behaviour, status, fragment, bound):
    sock = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(behaviour, unix_path=sock):
        started = time.monotonic()
        run = run_audit(tmp_path / 'run', {'all': {'hosts': {'localhost': local_host()}}}, docker_settings(sock))
        elapsed = time.monotonic() - started
    assert run.proc.returncode == 0, run.output[-3000:]
    assert elapsed < bound + SLACK_S, elapsed
    strict_report(run)
    finding = run.finding('localhost', 'docker_overlay_sandbox')
    assert finding['status'] == status, (case, finding['summary'])
    assert fragment in json.dumps(finding), (case, finding['summary'])
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'  # the other detection still ran


def test_a_trickling_ollama_ends_at_its_timeout_through_the_audit_playbook(tmp_path):
    """The hang the issue measured first: /api/version one byte a second, before: no end."""
    with hs.MisbehavingServer(hs.trickle_body(b'{"version": "0.12.0"}', 0.5)) as server:
        started = time.monotonic()
        run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, {
            'postmortem_checks': ['ollama_gemma4_renderer', 'pi'],
            'postmortem_settings': {'ollama_gemma4_renderer': {'url': server.url, 'timeout': 2}}})
        elapsed = time.monotonic() - started
    assert run.proc.returncode == 0, run.output[-3000:]
    assert elapsed < 2 + SLACK_S
    finding = run.finding('localhost', 'ollama_gemma4_renderer')
    assert finding['status'] == 'unknown', finding
    assert 'did not answer within 2.0 s' in finding['summary'], finding['summary']


def test_audit_facts_refuses_a_timeout_that_would_break_select(tmp_path):
    proc = run_module(tmp_path, 'homelab.postmortem.audit_facts', {'checks': ['pi'], 'command_timeout': 10 ** 10})
    assert proc.returncode != 0
    assert 'command_timeout must be at most 604800 seconds (a week), got 10000000000' in proc.stdout, proc.stdout
    assert 'Traceback' not in proc.stdout + proc.stderr
