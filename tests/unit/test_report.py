import json
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.homelab.postmortem.plugins.plugin_utils import report

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


@pytest.mark.parametrize('fail_on,hits', [
    ('never', 0),
    ('affected', 1),
    ('at_risk', 2),
    ('error', 5),  # three hosts that could not be audited count as errors
    ('ok', 5),
    ('not_applicable', 7),
])
def test_threshold(fleet, fail_on, hits):
    assert len(report.threshold_reached(fleet, fail_on)) == hits


def test_junit_maps_statuses(fleet):
    root = ET.fromstring(report.to_junit(fleet))
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
    lines = report.summary_lines(fleet, {'html': '/r/postmortem.html', 'json': '/r/postmortem.json'})
    text = '\n'.join(lines)
    assert 'pi1     affected        not_applicable' in text
    assert 'dead    UNREACHABLE     UNREACHABLE' in text
    assert 'pi1 pi_ir_tx [affected] IR broken' in text
    assert 'Totals: not_applicable 2, at_risk 1, affected 1, unreachable 1, failed 2' in text
    assert lines[-1] == 'Reports: /r/postmortem.html  /r/postmortem.json'


def test_html_embeds_data_that_cannot_break_out_of_the_script(fleet):
    page = report.render_html(fleet)
    assert '</script><b>' not in page
    start = page.index('id="report-data">') + len('id="report-data">')
    data = json.loads(page[start:page.index('</script>', start)])
    assert data == json.loads(json.dumps(fleet))


def test_write_is_atomic_and_complete(tmp_path, fleet):
    paths = report.write(fleet, str(tmp_path / 'out'), ['json', 'junit', 'html'])
    assert sorted(p.rsplit('/', 1)[1] for p in paths.values()) == ['postmortem-junit.xml', 'postmortem.html', 'postmortem.json']
    assert json.load(open(paths['json']))['totals']['affected'] == 1
    assert not [p for p in (tmp_path / 'out').iterdir() if p.name.startswith('.')]
