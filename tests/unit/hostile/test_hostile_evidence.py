"""Hostile structures, class by class: JSON nested too deep or too large is refused by the one
bounded loader with the reason; whatever a detection keeps as evidence leaves the host bounded
in depth and size (finding.bounded_finding, json_safe); the controller's report survives any
finding a module can return (report_encoding.plain, build, the files, the summary).

Depth thresholds measured here, not assumed: json.loads raises RecursionError near 1,000
levels; json_safe before this change near 500 (two frames a level); ansible-core 2.19 templating
a registered result fails near 200 (tests/e2e/test_hostile_report_real.py).
"""
import json
import time
import types
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, finding, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report, report_encoding, report_files, report_summary

BOUND_S = 10


def nested(depth, leaf='bottom'):
    value = leaf
    for _level in range(depth):
        value = {'d': value}
    return value


def depth_of(value):
    """Nesting depth without recursion (the thing under test must not be needed to measure it)."""
    deepest, pending = 0, [(value, 0)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level + 1)
            pending.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


# --- the bounded loader ---------------------------------------------------------------------

@pytest.mark.parametrize('text,kind,message', [
    ('[' * 100000 + ']' * 100000, 'depth', 'reply is nested deeper than 64 levels (100000)'),
    ('{"a":' * 65 + '1' + '}' * 65, 'depth', 'reply is nested deeper than 64 levels (65)'),
    ('[' + '9' * 5000 + ']', 'number', 'reply is JSON with a number of 5000 digits (at most 40)'),
    ('[-' + '9' * 41 + ']', 'number', 'reply is JSON with a number of 41 digits (at most 40)'),
    ('<html>', 'syntax', "reply is not JSON (Expecting value: line 1 column 1 (char 0); starts with '<html>')"),
    ('x' * (16 * 1024 * 1024 + 1), 'size', 'reply is larger than 16777216 bytes'),
])
def test_the_loader_refuses_with_the_reason(text, kind, message):
    started = time.monotonic()
    with pytest.raises(bounded_json.JsonInputError) as exc:
        bounded_json.loads(text, 'reply')
    assert time.monotonic() - started < BOUND_S
    assert (exc.value.kind, str(exc.value)) == (kind, message)
    assert isinstance(exc.value, registry.HostInputError)  # a finding with the reason, never a bug


def test_brackets_inside_strings_do_not_count_and_limits_are_the_callers():
    text = json.dumps({'name': '[' * 10000, 'q': '\\"[[[', 'v': [[1]]})
    assert bounded_json.nesting_depth(text) == 3
    assert bounded_json.loads(text, 'x')['v'] == [[1]]
    with pytest.raises(bounded_json.JsonInputError, match='nested deeper than 2 levels'):
        bounded_json.loads(text, 'x', max_depth=2)
    with pytest.raises(bounded_json.JsonInputError, match='larger than 10 bytes'):
        bounded_json.loads(text, 'x', max_bytes=10)


def test_the_loader_takes_bytes_and_keeps_what_json_keeps():
    value = bounded_json.loads(b'{"n": NaN, "s": "we\xffb", "i": -' + b'9' * 40 + b'}', 'x')
    assert value['s'] == u'we\ufffdb' and value['n'] != value['n'] and value['i'] == -int('9' * 40)


@pytest.mark.parametrize('text', ['"' * 4000000, '"\\"' * 2000000, '{"a": "' + 'x' * 8000000])
def test_the_depth_scan_stays_linear_on_hostile_strings(text):
    started = time.monotonic()
    with pytest.raises(bounded_json.JsonInputError):
        bounded_json.loads(text, 'x', max_depth=0)
    assert time.monotonic() - started < BOUND_S


# --- evidence leaving the host ----------------------------------------------------------------

DETECTION = types.SimpleNamespace(ID='deep', TITLE='t', REFERENCES=[], REMEDIATION=finding.make_remediation(),
                                  APPLIES={'image': True, 'binary': None, 'root': None}, PROBES=(), SETTINGS={})


def detection_keeping(evidence):
    return types.SimpleNamespace(**dict(vars(DETECTION), detect=lambda ctx: finding.make_finding(
        DETECTION, 'ok', 'kept it', evidence=evidence)))


def test_json_safe_cuts_a_600_deep_value_instead_of_failing():
    safe = finding.json_safe({'evidence': nested(600)})
    assert depth_of(safe) == finding.MAX_DEPTH
    assert '(cut: nested deeper than 64 levels)' in json.dumps(safe)


@pytest.mark.parametrize('depth', [600, 5000])
def test_a_detection_keeping_deep_evidence_costs_nothing_else(depth):
    """The host keeps every finding: the deep one cut and marked, the others untouched."""
    ctx = AuditContext(root='/nonexistent', live=False)
    deep = registry.run_one(ctx, detection_keeping({'value': nested(depth), 'count': 3}))
    assert deep['status'] == 'ok' and deep['evidence']['count'] == 3
    assert deep['evidence']['cut'] == 'cut where marked: values nested deeper than 64 levels'
    assert depth_of(deep) <= finding.MAX_DEPTH + 1
    text = json.dumps(finding.json_safe({'postmortem': {'deep': deep}}), allow_nan=False)
    assert '(cut: nested deeper than 64 levels)' in text


def test_evidence_larger_than_its_bound_is_cut_in_order_and_said():
    evidence = {'first': 'kept', 'lines': ['x' * 1000] * 5000, 'after': 'y' * 10}
    bounded = finding.bounded_finding(finding.make_finding(DETECTION, 'ok', 's', evidence=evidence),
                                      max_evidence_chars=100000)
    kept = bounded['evidence']
    assert kept['first'] == 'kept'
    assert kept['lines'][-1] == '(cut: evidence larger than 100000 characters)' and len(kept['lines']) <= 101
    assert kept['(cut)'] == '(cut: evidence larger than 100000 characters)' and 'after' not in kept
    assert kept['cut'] == 'cut where marked: evidence beyond 100000 characters'
    assert len(json.dumps(bounded)) < 110000


def test_a_huge_summary_and_a_summary_that_is_no_text_are_bounded():
    long = finding.bounded_finding(finding.make_finding(DETECTION, 'ok', 'x' * 100000))
    assert len(long['summary']) == finding.MAX_SUMMARY_CHARS + len(' (cut)')
    odd = finding.bounded_finding(dict(finding.make_finding(DETECTION, 'ok', 's'), summary=nested(3000)))
    assert odd['summary'].startswith("{'d': {'d': {'d': {'d': '(cut: nested deeper than 4 levels)'")


def test_ordinary_findings_leave_unchanged():
    evidence = {'instances': [finding.instance('c%d' % n, 'ok', 'fine', {'flags': ['UP'], 'n': n, 'x': 0.5})
                              for n in range(200)], 'nan': float('nan')}
    made = finding.make_finding(DETECTION, 'ok', 'fine', evidence=evidence)
    bounded = finding.bounded_finding(made)
    assert bounded['evidence']['instances'] == made['evidence']['instances'] and 'cut' not in bounded['evidence']
    assert bounded['evidence']['nan'] == 'nan'


# --- the controller's report ----------------------------------------------------------------

def hostile_result(depth):
    deep = nested(depth)
    return {'ansible_facts': {'postmortem': {
        'pi_ir_tx': {'id': 'pi_ir_tx', 'title': 't', 'status': 'affected', 'summary': nested(depth, 'summary'),
                     'evidence': {'deep': deep},
                     'remediation': ['a list', 'not a mapping'], 'references': []},
        'llama_lora_cache': {'id': 'llama_lora_cache', 'title': 't', 'status': 'at_risk', 'summary': 'fine',
                             'evidence': {}, 'references': [],
                             'remediation': {'role': nested(depth), 'vars': nested(depth), 'module': None,
                                             'manual': [nested(depth)], 'disruption': nested(depth)}},
    }, 'postmortem_run': {'duration_ms': deep}}}


@pytest.mark.parametrize('depth', [450, 3000])
def test_the_report_survives_any_nesting_a_result_can_hold(tmp_path, depth):
    started = time.monotonic()
    built = report.build(['deep', 'fine'], {'deep': hostile_result(depth), 'fine': None},
                         [('pi_ir_tx', 't'), ('llama_lora_cache', 't')], '0.2.0')
    paths, problems = report_files.write(built, str(tmp_path), ['json', 'junit', 'html'])
    lines = report_summary.summary_lines(built, paths)
    assert time.monotonic() - started < BOUND_S
    assert problems == []
    with open(paths['json']) as handle:
        written = json.loads(handle.read(), parse_constant=lambda name: pytest.fail('non-strict JSON %s' % name))
    ET.parse(paths['junit'])
    host = [h for h in written['hosts'] if h['name'] == 'deep'][0]
    assert host['state'] == 'audited' and host['findings']['pi_ir_tx']['status'] == 'affected'
    # What the C encoder takes (it recurses in C up to Python's limit) is written as the host sent it;
    # deeper goes through plain(), which cuts where the host would.
    assert ('(cut: nested deeper than 64 levels)' in json.dumps(host['findings'])) is (depth > 900)
    text = '\n'.join(lines)
    # The fix offered is the registry's (the host's remediation is a list here): never the host's words.
    assert 'deep: pi_ir_tx [affected]' in text and 'fix: role homelab.postmortem.pi_ir_tx' in text
    assert all(len(line) <= report_summary.WIDTH for line in lines if not line.strip().startswith(('Full report', '/')))


def test_fix_text_takes_any_remediation():
    """Whatever a host's remediation holds, the fix offered is the registry's (pi_ir_tx's role), and only a
    disruption of the model's is taken from the host."""
    expected = 'role homelab.postmortem.pi_ir_tx (switch: pi_ir_tx_reboot) (disruption: reboot)'
    for remediation in (['a', 'list'], 'text', {'manual': 'not a list'}, {'role': 'r', 'vars': nested(5000)},
                        {'role': ['x'] * 3, 'disruption': nested(5000)}):
        assert report_summary.fix_text('pi_ir_tx', {'remediation': remediation}) == expected
    assert report_summary.fix_text('pi_ir_tx', {'remediation': {'disruption': 'none'}}) == expected.rsplit(' (', 1)[0]
    assert report_summary.fix_text('not_a_check', {'remediation': {'role': 'r'}}) == 'see the docs page'


def test_plain_cuts_where_the_host_would():
    assert depth_of(report_encoding.plain({'a': nested(5000)})) == finding.MAX_DEPTH
    assert report_encoding.plain({'a': [1, {'b': float('inf')}]}) == {'a': [1, {'b': 'inf'}]}
