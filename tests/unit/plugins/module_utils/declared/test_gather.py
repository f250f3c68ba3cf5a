"""The host side of declared checks as audit_facts runs it (module_utils/declared/gather.py): the
wire form, one check's budget and isolation, answers that are too large, image audits; and the
selection of declared checks by id and group next to the built-in ones (registry.select)."""
import re
import sys
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.declared import gather, spec
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner


def _check(check_id='site.one', gather_=None, groups=('site',), timeout=30):
    return {'id': check_id, 'title': 'One', 'groups': list(groups), 'timeout': timeout, 'digest': 'd1',
            'gather': gather_ if gather_ is not None else [{'name': 'f', 'kind': 'file', 'path': '/etc/hostname'}]}


def test_wire_checks_are_normalized_with_their_defaults():
    [check] = gather.checks_from_wire([_check()])
    assert check.problem is None and check.GROUPS == ('declared', 'site')
    assert check.gather == [{'name': 'f', 'kind': 'file', 'path': '/etc/hostname', 'content': 'none',
                             'max_bytes': 65536, 'allow_error': False}]


@pytest.mark.parametrize('entry, message', [
    ('x', 'declared[0] must be a mapping'),
    ({'id': 'NoDot'}, "declared[0]: id 'NoDot' is not a declared check id"),
    ({'id': 'pi_ir_tx'}, "declared[0]: id 'pi_ir_tx' is not a declared check id"),
    ({'id': 'site.x', 'groups': 'bad group'}, 'groups must be a list of group names'),
])
def test_wire_entries_that_cannot_be_named_fail_the_module(entry, message):
    with pytest.raises(gather.WireError, match=re.escape(message)):
        gather.checks_from_wire([entry])


def test_a_check_with_bad_questions_is_its_own_error_only():
    checks = gather.checks_from_wire([
        _check('site.bad', [{'name': 'c', 'kind': 'command', 'argv': 'rm -rf /'},
                            {'name': 'h', 'kind': 'http', 'url': 'http://192.0.2.1/'}]),
        _check('site.good')])
    answers, timings = gather.run(AuditContext(), checks)
    assert answers['site.bad']['status'] == 'error'
    assert 'question 1 (c): argv must be a non-empty list of arguments' in answers['site.bad']['reason']
    assert 'question 2 (h): url must name a loopback address' in answers['site.bad']['reason']
    assert answers['site.good']['answers']['f']['error'] is None and set(timings) == set(['site.bad', 'site.good'])


def test_a_shell_is_refused():
    [check] = gather.checks_from_wire([_check(gather_=[{'name': 'c', 'kind': 'command', 'argv': ['bash', '-c', 'x']}])])
    assert 'runs bash, a shell' in check.problem


def test_a_question_that_fails_stops_its_check_unless_allowed(tmp_path):
    fifo = tmp_path / 'fifo'
    import os
    os.mkfifo(str(fifo))
    strict, lenient = gather.checks_from_wire([
        _check('site.strict', [{'name': 'f', 'kind': 'file', 'path': str(fifo), 'content': 'text'}]),
        _check('site.lenient', [{'name': 'f', 'kind': 'file', 'path': str(fifo), 'content': 'text', 'allow_error': True}])])
    answers, _t = gather.run(AuditContext(), [strict, lenient])
    assert answers['site.strict'] == {'digest': 'd1', 'status': 'error', 'reason': '%s: is a fifo, not a regular file; its '
                                      'content was not read (question f, file)' % fifo}
    assert answers['site.lenient']['answers']['f']['error'].endswith('its content was not read')
    assert answers['site.lenient']['answers']['f']['exists'] is None  # the kind's shape, every value null


def test_an_endless_command_costs_its_check_budget_and_the_next_check_still_runs():
    hang, fine = gather.checks_from_wire([
        _check('site.hang', [{'name': 'a', 'kind': 'command', 'argv': ['sleep', '60'], 'timeout': 300},
                             {'name': 'b', 'kind': 'command', 'argv': ['sleep', '60'], 'timeout': 300}], timeout=1),
        _check('site.fine', [{'name': 'e', 'kind': 'command', 'argv': ['true']}])])
    started = time.monotonic()
    answers, _t = gather.run(AuditContext(runner=CommandRunner(timeout=30)), [hang, fine])
    assert time.monotonic() - started < 5
    assert answers['site.hang']['status'] == 'unknown'
    assert answers['site.hang']['reason'] == ('sleep 60 did not finish within the detection time budget of 1 s '
                                              '(detection_timeout) (question a, command)')
    assert answers['site.fine']['answers']['e']['rc'] == 0


def test_answers_larger_than_the_check_bound_are_refused_not_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(spec, 'MAX_ANSWER_CHARS', 1000)
    (tmp_path / 'big').write_text('x' * 2000)
    [check] = gather.checks_from_wire([_check(gather_=[{'name': 'f', 'kind': 'file', 'path': str(tmp_path / 'big'),
                                                        'content': 'text'}])])
    answer = gather.run(AuditContext(), [check])[0]['site.one']
    assert answer['status'] == 'error' and 'larger than 1000 characters' in answer['reason']


def test_an_image_audit_answers_files_and_not_the_running_system(tmp_path):
    live_only, files = gather.checks_from_wire([
        _check('site.live', [{'name': 'l', 'kind': 'listening'}]),
        _check('site.files', [{'name': 'f', 'kind': 'file', 'path': '/etc/fstab'}])])
    answers, _t = gather.run(AuditContext(root=str(tmp_path)), [live_only, files])
    assert answers['site.live'] == {'digest': 'd1', 'status': 'not_applicable',
                                    'reason': 'Image audit (root=%s): site.live asks the running system (listening).' % tmp_path}
    assert answers['site.files']['answers']['f']['exists'] is False


def test_a_bug_in_a_question_is_that_checks_error(monkeypatch):
    def broken(ctx, question, shared):
        raise KeyError('oops')
    monkeypatch.setitem(gather.questions.ASK, 'listening', broken)
    [check] = gather.checks_from_wire([_check(gather_=[{'name': 'l', 'kind': 'listening'}])])
    answer = gather.run(AuditContext(), [check])[0]['site.one']
    assert answer['status'] == 'error' and answer['reason'].startswith('bug in homelab.postmortem (declared check site.one)')


def test_selection_takes_declared_ids_groups_and_exclusions():
    declared = gather.checks_from_wire([_check('site.a', groups=['backup']), _check('site.b', groups=[])])
    available = dict(registry.BY_ID)
    available.update((c.ID, c) for c in declared)

    def ids(requested):
        return [d.ID for d in registry.select(requested, available)]
    assert ids(['declared']) == ['site.a', 'site.b']
    assert ids(['backup', 'pi']) == ['pi_ir_tx', 'site.a']
    assert ids(['all', '!declared']) == [d.ID for d in registry.DETECTIONS]
    assert ids(['!backup'])[-1] == 'site.b'
    with pytest.raises(registry.SelectionError):
        registry.select(['site.c'], available)


def test_the_module_imports_no_declared_code_without_declared_checks():
    """An audit without declared checks compiles none of their code on the host (start-up is paid
    on every host, every run: docs/performance.md)."""
    code = ('import sys; sys.path.insert(0, %r)\n'
            'from ansible_collections.homelab.postmortem.plugins.module_utils import facts_module\n'
            'print([m for m in sys.modules if ".declared" in m])' % registry.__file__.split('/ansible_collections/', maxsplit=1)[0])
    import subprocess
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == '[]'
