"""What reaches the operator's terminal: a host's escape codes, newlines and direction overrides are
shown, never obeyed (issue 32); the report files keep the original text."""
import pytest

from ansible_collections.homelab.postmortem.plugins.plugin_utils import report, report_summary, terminal


@pytest.mark.parametrize('raw,shown', [
    ('\x1b[2J\x1b]0;owned\x07summary', '\\x1b[2J\\x1b]0;owned\\x07summary'),
    ('a\nGate: passed FORGED', 'a\\nGate: passed FORGED'),
    ('cr\rtab\tnul\x00del\x7f', 'cr\\rtab\\tnul\\x00del\\x7f'),
    ('c1 csi \x9b2J', 'c1 csi \\x9b2J'),
    ('rtl \u202egnp.exe', 'rtl \\u202egnp.exe'),
    ('lone \udcff surrogate', 'lone \\udcff surrogate'),
    ('plain ASCII, and Ünïcödé text stay as they are', 'plain ASCII, and Ünïcödé text stay as they are'),
])
def test_visible(raw, shown):
    assert terminal.visible(raw) == shown
    assert all(ord(c) >= 0x20 and not 0x7f <= ord(c) <= 0x9f for c in terminal.visible(raw))


def test_every_summary_line_is_one_visible_line():
    """A summary with an escape-laden finding and a forged history time stamp: after visible_lines no
    line holds a control character, and the line count is what the summary made (no line was split)."""
    evil = {'id': 'pi_ir_tx', 'title': 't', 'status': 'affected', 'summary': '\x1b[2J\x1b]0;owned\x07 IR broken',
            'evidence': {}, 'remediation': {}, 'references': []}
    built = report.build(['pi\x1b[31m1'], {'pi\x1b[31m1': {'ansible_facts': {'postmortem': {'pi_ir_tx': evil}}}},
                         [('pi_ir_tx', 'Pi IR')], '0.3.0')
    built['drift'] = {'since': '2026-12-01\x1b[2J\nGate: passed', 'counts': {}, 'note': ''}
    lines = report_summary.summary_lines(built, {'json': '/r/postmortem.json'})
    shown = terminal.visible_lines(lines)
    assert len(shown) == len(lines)
    text = '\n'.join(shown)
    assert '\x1b' not in text and '\\x1b[2J\\x1b]0;owned\\x07 IR broken' in text
    assert 'Since 2026-12-01\\x1b[2J\\nGate: passed' in text
    assert built['hosts'][0]['findings']['pi_ir_tx']['summary'].startswith('\x1b[2J')
