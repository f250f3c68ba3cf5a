"""Check files (plugin_utils/declared_checks.py): loaded and validated before any host is contacted;
every problem of every file found in one pass, each named with its file, line and check."""
import builtins
import textwrap

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_checks

GOOD = '''\
groups: [site]
checks:
  - id: site.backup_fresh
    title: The nightly backup is fresh
    docs: https://wiki.example/backup
    advice: [Look at the timer's journal., Run it by hand.]
    groups: [backup]
    timeout: 20
    gather:
      - name: backup
        kind: file
        path: /srv/backup/latest.tar
    judge:
      applies: backup.exists
      affected: backup.size == `0`
      at_risk: age(backup.mtime) > seconds('26h')
      evidence:
        size: backup.size
      summary:
        ok: "backup is {size} bytes"
'''


def _load(tmp_path, text, name='checks.yml'):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return declared_checks.load(str(path), registry.BY_ID, registry.GROUPS)


def _problems(tmp_path, text):
    with pytest.raises(declared_checks.CheckFileProblem) as caught:
        _load(tmp_path, text)
    return caught.value.problems


def test_a_good_file_loads_with_its_groups_wire_and_digest(tmp_path):
    checks = _load(tmp_path, GOOD)
    [check] = checks.checks
    assert (check.id, check.groups, check.timeout, check.line) == ('site.backup_fresh', ['declared', 'site', 'backup'], 20, 3)
    assert check.advice == ["Look at the timer's journal.", 'Run it by hand.']
    wire = checks.wire()[0]
    assert set(wire) == set(['id', 'title', 'groups', 'timeout', 'digest', 'gather'])  # no judge: it stays here
    assert wire['gather'][0]['content'] == 'none' and len(wire['digest']) == 16
    changed = _load(tmp_path, GOOD.replace("seconds('26h')", "seconds('30h')"), 'other.yml').checks[0]
    assert changed.digest != check.digest
    assert checks.report_checks() == [('site.backup_fresh', 'The nightly backup is fresh')]


def test_a_directory_of_files_in_name_order(tmp_path):
    (tmp_path / 'b.yml').write_text(GOOD)
    (tmp_path / 'a.yaml').write_text(GOOD.replace('site.backup_fresh', 'site.aaa'))
    (tmp_path / 'notes.txt').write_text('not a check file')
    checks = declared_checks.load([str(tmp_path)], registry.BY_ID, registry.GROUPS)
    assert [c.id for c in checks.checks] == ['site.aaa', 'site.backup_fresh']


def test_every_problem_is_named_with_file_line_and_check(tmp_path):
    text = GOOD.replace('    title: The nightly', '    titel: x\n    title: The nightly') \
        .replace('        path: /srv', '        pth: /x\n        path: /srv') \
        .replace('      at_risk: age(backup.mtime)', '      at_risk: age(bakup.mtime)') \
        .replace('        ok: "backup is {size} bytes"', '        ok: "backup is {sise} bytes"\n        okay: "x"')
    problems = _problems(tmp_path, text)
    path = str(tmp_path / 'checks.yml')
    assert problems == [
        '%s:4: check site.backup_fresh: unknown key titel (did you mean title?); a check has id, title, docs, advice, '
        'groups, timeout, gather, judge' % path,
        '%s:13: check site.backup_fresh: gather[0] (backup): unknown option pth (did you mean path?); a file question '
        'takes allow_error, content, kind, max_bytes, name, path' % path,
        '%s:18: check site.backup_fresh: judge.at_risk reads bakup, which is not a question of this check (did you mean '
        'backup?); it can read backup, evidence, host, now' % path,
        '%s:22: check site.backup_fresh: summary names {sise}, which is not an evidence field (did you mean size?); it '
        'can name {size}, {status}' % path,
        '%s:23: check site.backup_fresh: summary for okay (did you mean ok?); summaries are for affected, at_risk, ok, '
        'not_applicable' % path,
    ]


@pytest.mark.parametrize('change, problem', [
    (('site.backup_fresh', 'backup_fresh'), ':3: check backup_fresh: id must be namespace.name in lower case'),
    (('groups: [backup]', 'groups: [podman]'), 'group podman is the name of a built-in group'),
    (('groups: [backup]', 'groups: [pi_ir_tx]'), 'group pi_ir_tx is the name of a built-in check'),
    (('timeout: 20', 'timeout: 0'), 'timeout must be a whole number of seconds, 1 to 600, got 0'),
    (('        kind: file', '        kind: files'), "kind must be one of command, file, glob, http, listening, processes, "
                                                    "systemd, got 'files'"),
    (('      affected: backup.size == `0`\n      at_risk: age(backup.mtime) > seconds(\'26h\')\n', ''),
     'judge needs affected, at_risk or both'),
    (('backup.size == `0`', 'backup.size =='), 'judge.affected is not a JMESPath expression'),
    (("seconds('26h')", "secs('26h')"), 'calls secs(), which is not a function (did you mean seconds()?)'),
    (('        path: /srv/backup/latest.tar', '        path: srv/backup'), "path must be an absolute path, got 'srv/backup'"),
    (('- name: backup', '- name: now'), "name now is the judge's own (now, host, item, evidence)"),
])
def test_each_mistake_is_refused(tmp_path, change, problem):
    problems = _problems(tmp_path, GOOD.replace(*change))
    assert any(problem in p for p in problems), problems


def test_ids_are_unique_across_files(tmp_path):
    (tmp_path / 'a.yml').write_text(GOOD)
    (tmp_path / 'b.yml').write_text(GOOD)
    with pytest.raises(declared_checks.CheckFileProblem) as caught:
        declared_checks.load(str(tmp_path), registry.BY_ID, registry.GROUPS)
    assert caught.value.problems == ['%s:3: check id site.backup_fresh is already declared at %s:3'
                                     % (tmp_path / 'b.yml', tmp_path / 'a.yml')]


@pytest.mark.parametrize('text, problem', [
    ('checks: &a [1]\nother: *a\n', ':1: aliases (*name) are not supported in check files'),
    ('checks: [1]\nchecks: [2]\n', ':2: the key checks is given twice'),
    ('checks: [\n', 'expected node content'),
    ('- a list\n', ':1: expected a mapping with checks: [...]'),
    ('', 'is empty'),
    ('checks: []\n', ':1: checks must be a list of at least one check'),
    ('chekcs: []\n', ':1: unknown key chekcs (did you mean checks?)'),
])
def test_files_that_are_not_check_files(tmp_path, text, problem):
    problems = _problems(tmp_path, text)
    assert any(problem in p for p in problems), problems


def test_a_billion_laughs_is_refused_at_once(tmp_path):
    lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x]']
    lines += ['a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]' % ((i, i) + (i - 1,) * 9) for i in range(1, 9)]
    assert 'aliases (*name) are not supported' in _problems(tmp_path, '\n'.join(lines) + '\n')[0]


def test_paths_that_do_not_exist_or_hold_nothing(tmp_path):
    with pytest.raises(declared_checks.CheckFileProblem) as caught:
        declared_checks.load([str(tmp_path / 'nope.yml'), str(tmp_path)], registry.BY_ID, registry.GROUPS)
    assert caught.value.problems == ['postmortem_check_files: %s does not exist' % (tmp_path / 'nope.yml'),
                                     'postmortem_check_files: %s holds no *.yml file' % tmp_path]


def test_a_fifo_where_a_check_file_should_be_is_refused_not_read(tmp_path):
    import os
    os.mkfifo(str(tmp_path / 'checks.yml'))
    with pytest.raises(declared_checks.CheckFileProblem) as caught:
        declared_checks.load(str(tmp_path / 'checks.yml'), registry.BY_ID, registry.GROUPS)
    assert caught.value.problems == ['%s: it is not a regular file' % (tmp_path / 'checks.yml')]


def test_a_controller_without_jmespath_gets_a_worded_error(tmp_path, monkeypatch):
    (tmp_path / 'checks.yml').write_text(GOOD)
    real_import = builtins.__import__

    def no_jmespath(name, *args, **kwargs):
        if name == 'jmespath' or name.startswith('jmespath.'):
            raise ImportError('No module named jmespath')
        return real_import(name, *args, **kwargs)
    import sys
    from ansible_collections.homelab.postmortem.plugins import plugin_utils
    for module in [m for m in sys.modules if m.startswith('jmespath') or m.endswith('declared_jmespath')]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.delattr(plugin_utils, 'declared_jmespath', raising=False)
    monkeypatch.setattr(builtins, '__import__', no_jmespath)
    with pytest.raises(declared_checks.CheckFileProblem) as caught:
        declared_checks.load(str(tmp_path / 'checks.yml'), registry.BY_ID, registry.GROUPS)
    assert caught.value.problems[0].startswith('postmortem_check_files needs the Python package jmespath on the '
                                               'controller, in the Python that runs ansible-playbook')


@pytest.mark.parametrize('line, hint', [
    ("      affected: !unit.available", "(a value that starts with ! must be quoted: '!unit.available')"),
    ("      affected: `true`", "(a value that starts with ` must be quoted: '`true`')"),
    ('      affected: "backup.size == `0`"', None),
])
def test_an_unquoted_expression_gets_a_hint_where_yaml_stops(tmp_path, line, hint):
    """#44: "could not determine a constructor for the tag '!unit.available'" alone did not say what to do."""
    text = GOOD.replace("      affected: backup.size == `0`", line)
    if hint is None:
        _load(tmp_path, text)  # quoted: fine
        return
    [problem] = _problems(tmp_path, text)
    assert problem.startswith('%s:15: ' % (tmp_path / 'checks.yml')), problem
    assert problem.endswith(hint), problem


def test_a_missing_required_key_says_missing(tmp_path):
    [problem] = _problems(tmp_path, GOOD.replace('    docs: https://wiki.example/backup\n', ''))
    assert problem.endswith('check site.backup_fresh: docs (a link or a line of text) is missing (required)'), problem


@pytest.mark.parametrize('value', ['2026-13-45', '9' * 5000])
def test_a_value_yaml_cannot_build_is_the_files_problem(tmp_path, value):
    [problem] = _problems(tmp_path, GOOD.replace('    timeout: 20\n', '    timeout: %s\n' % value))
    assert problem.startswith('%s: a value YAML reads as a date or number is not one' % (tmp_path / 'checks.yml')), problem


@pytest.mark.parametrize('old, new, expected', [
    # #49's corpus: each was a bare Python error with no file, check or field.
    ('    gather:\n      - name: backup\n        kind: file\n        path: /srv/backup/latest.tar\n', '    gather: 5\n',
     'check site.backup_fresh: gather must be a list of 1 to 20 questions'),
    ('    gather:\n      - name: backup\n        kind: file\n        path: /srv/backup/latest.tar\n', '    gather: true\n',
     'check site.backup_fresh: gather must be a list of 1 to 20 questions'),
    ('        kind: file\n', '        kind: [file]\n', "check site.backup_fresh: gather[0] (backup): kind must be one of"),
    ('        kind: file\n', '        kind: {a: 1}\n', "check site.backup_fresh: gather[0] (backup): kind must be one of"),
])
def test_a_malformed_field_is_named_with_file_check_and_field(tmp_path, old, new, expected):
    assert old in GOOD
    problems = _problems(tmp_path, GOOD.replace(old, new))
    assert any(expected in p and p.startswith(str(tmp_path / 'checks.yml') + ':') for p in problems), problems
    assert not any('object is not iterable' in p or 'unhashable' in p for p in problems), problems
