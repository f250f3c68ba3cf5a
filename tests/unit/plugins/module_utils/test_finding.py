import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import finding


class FakeDetection:
    ID = 'fake'
    TITLE = 'Fake'
    REFERENCES = ['https://example.invalid/1']
    REMEDIATION = {'manual': ['do it']}


def test_status_order_is_the_documented_one():
    assert finding.STATUSES == ('not_applicable', 'ok', 'unknown', 'error', 'at_risk', 'affected')


@pytest.mark.parametrize('statuses,expected', [
    ([], 'not_applicable'),
    (['ok', 'at_risk', 'ok'], 'at_risk'),
    (['error', 'at_risk'], 'at_risk'),
    (['unknown', 'error'], 'error'),
    (['affected', 'at_risk', 'error'], 'affected'),
    (['not_applicable', 'ok'], 'ok'),
])
def test_worst_status(statuses, expected):
    assert finding.worst_status(statuses) == expected


def test_worst_status_rejects_unknown_names():
    with pytest.raises(ValueError):
        finding.worst_status(['ok', 'broken'])


def test_finding_takes_the_worst_instance_status_not_the_argument():
    instances = [finding.instance('a', 'ok', 'fine'), finding.instance('b', 'affected', 'bad', {'n': 1})]
    result = finding.make_finding(FakeDetection, 'ok', 'summary', evidence={'x': 1}, instances=instances)
    assert result['status'] == 'affected'
    assert result['evidence']['instances'][1]['evidence'] == {'n': 1}
    assert result['evidence']['x'] == 1
    assert set(result) == set(finding.FINDING_KEYS)
    assert result['references'] == FakeDetection.REFERENCES
    assert result['remediation'] == FakeDetection.REMEDIATION


def test_the_summary_instance_is_the_most_serious_one():
    """The roll-up names the worst instance (the first of the worst), never a less serious one than the
    finding's status: llama_spec_logprobs used to take the first instance that was not ok."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.finding import worst_instance
    items = [{'name': 'a', 'status': 'unknown'}, {'name': 'b', 'status': 'affected'}, {'name': 'c', 'status': 'affected'},
             {'name': 'd', 'status': 'error'}]
    assert worst_instance(items)['name'] == 'b'
    assert worst_instance(items, among=('unknown', 'error'))['name'] == 'd'
    assert worst_instance([]) is None


def test_llama_spec_logprobs_names_its_worst_instance(tmp_path):
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import llama_spec_logprobs
    from ansible_collections.homelab.postmortem.plugins.module_utils.detections.llama_spec_logprobs import DETECTION
    instances = [{'name': 'llama-server pid 1', 'status': 'unknown', 'summary': 'cannot tell', 'evidence': {}},
                 {'name': 'llama-server pid 2', 'status': 'at_risk', 'summary': 'speculates: placeholders', 'evidence': {}}]
    original = llama_server.instances
    try:
        llama_server.instances = lambda ctx, *_a: (instances, {})
        finding = llama_spec_logprobs.judge(type('Ctx', (), {'probes': ()})(), DETECTION, {})
    finally:
        llama_server.instances = original
    assert finding['status'] == 'at_risk' and finding['summary'].endswith('speculates: placeholders')
