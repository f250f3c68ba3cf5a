"""The summary callback's lines: a host's answer is shown as visible text, its status only when it is one
of the model's, one line per host."""
from ansible_collections.homelab.postmortem.plugins.plugin_utils import callback_lines


def answer(**statuses):
    return {'ansible_facts': {'postmortem': dict((cid, {'status': status}) for cid, status in statuses.items())}}


def test_progress_names_the_worst_findings_and_counts_the_play():
    progress = callback_lines.Progress()
    progress.play('Audit hosts for silent failures', 3)
    assert progress.audited('pi-07', answer(pi_ir_tx='affected', llama_sleep_race='at_risk')) == [
        'Audit hosts for silent failures: 3 host(s)', '[1/3] pi-07: affected (pi_ir_tx)']
    assert progress.audited('pi-08', answer(pi_ir_tx='ok', vllm_weight_cache='not_applicable')) == ['[2/3] pi-08: nothing to fix']
    assert progress.not_audited('pi-09', 'unreachable', {'msg': 'ssh: connect\nrefused'}) == [
        '[3/3] pi-09: NOT AUDITED, unreachable: ssh: connect refused']


def test_a_hostile_answer_is_visible_text_and_a_forged_status_is_not_shown():
    progress = callback_lines.Progress()
    progress.play('p', 1)
    lines = progress.audited('h', answer(**{'\x1b]0;owned\x07': 'affected', 'x': 'pwned'}))
    assert lines[-1] == '[1/1] h: affected (\\x1b]0;owned\\x07)'
    assert all('\x1b' not in line for line in lines)
    assert callback_lines.worst(answer(x='pwned')) == (None, [])
    assert callback_lines.failed('h', 'T', {'msg': '\x1b[2Jgone'}) == ["h: FAILED in 'T': \\x1b[2Jgone"]
    assert callback_lines.visible_block('-a\n+\x1b[31mred\n') == ['-a', '+\\x1b[31mred']
    assert callback_lines.said('h', {'msg': ['one', 'two\nlines']}) == ['h: one', 'h: two lines']


def test_the_recap_is_one_line():
    assert callback_lines.recap({'a': {'ok': 3, 'changed': 1, 'failures': 0, 'unreachable': 0, 'ignored': 1},
                                 'b': {'ok': 2, 'changed': 0, 'failures': 1, 'unreachable': 0, 'ignored': 0}}) == [
        'Ansible: 2 host(s); tasks ok 5, changed 1, failed 1, unreachable 0, failures ignored 1']
