"""The bounded JMESPath of declared checks (plugin_utils/declared_jmespath.py).

Upstream is the oracle for what an expression means: every case of jmespath.py's own compliance
suite (tests/unit/fixtures/jmespath_compliance, the files upstream's tests/test_compliance.py runs)
gives the same result through our bounded interpreter, with our own equality, contains, join and
to_string, and every error case is an error. Then the bounds: expressions that multiply their
input, compare structures that share themselves, build huge strings or loop are stopped with a
reason, within a time bound."""
import json
import os
import time

import jmespath
import pytest

from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_jmespath as jp

from ...helpers.paths import FIXTURES_DIR

COMPLIANCE = os.path.join(FIXTURES_DIR, 'jmespath_compliance')


def _cases(kind):
    for name in sorted(os.listdir(COMPLIANCE)):
        if not name.endswith('.json'):
            continue
        with open(os.path.join(COMPLIANCE, name), encoding='utf-8') as handle:
            for group in json.load(handle):
                for case in group['cases']:
                    if kind in case:
                        yield pytest.param(group['given'], case['expression'], case[kind],
                                           id='%s:%s' % (name, case['expression'][:60]))


def _evaluate(expression, data, limits=None, now=None):
    tree = jmespath.compile(expression).parsed
    return jp.evaluate(jp.Compiled(expression, tree), data, limits or jp.Limits(), now, 'expr')


@pytest.mark.parametrize('given, expression, expected', list(_cases('result')))
def test_upstream_compliance_results(given, expression, expected):
    assert _evaluate(expression, given) == expected
    # and exactly what upstream's own interpreter gives (types included: 1 is not 1.0 nor true)
    ours, upstream = _evaluate(expression, given), jmespath.search(expression, given)
    assert json.dumps(ours, sort_keys=True) == json.dumps(upstream, sort_keys=True)


@pytest.mark.parametrize('given, expression, error', list(_cases('error')))
def test_upstream_compliance_errors(given, expression, error):
    compiled, why = jp.compile_expression(expression, names=None)
    if error == 'syntax':
        assert compiled is None and why.startswith('is not a JMESPath expression'), why
    elif error in ('invalid-arity', 'unknown-function'):
        # Found before any host is contacted, not when a host's answers are judged.
        assert compiled is None and why.startswith('calls '), why
    else:
        assert error in ('invalid-type', 'invalid-value'), error
        assert compiled is not None, why
        with pytest.raises(jp.JudgeFailure):
            jp.evaluate(compiled, given, jp.Limits(), None, 'expr')


def _bounded(expression, data, seconds=5.0):
    """Evaluates within the bounds; returns (JudgeFailure message or None, seconds taken)."""
    started = time.monotonic()
    try:
        _evaluate(expression, data)
        problem = None
    except jp.JudgeFailure as exc:
        problem = str(exc)
    taken = time.monotonic() - started
    assert taken < seconds, (expression, taken)
    return problem, taken


BIG_LIST = list(range(50000))


@pytest.mark.parametrize('expression, data, reason', [
    # Each step multiplies the list by 8: the flatten is charged before it is built.
    (' | '.join(['[@,@,@,@,@,@,@,@][]'] * 10), BIG_LIST, 'evaluation steps'),
    # A structure that shares itself, 8**12 paths, compared with another built the same way.
    ('[%s, %s] | @[0] == @[1]' % ((' | '.join(['[@,@,@,@,@,@,@,@]'] * 12),) * 2), [1], 'evaluation steps'),
    # Strings that double: join and to_string refuse before building.
    (' | '.join(["join('', [@,@,@,@,@,@,@,@])"] * 8), 'x' * 10000, 'join() would build'),
    (' | '.join(['to_string([@,@,@,@,@,@,@,@])'] * 8), 'x' * 10000, 'more than'),
    # A result that shares itself: counted along every path.
    (' | '.join(['[@,@,@,@,@,@,@,@]'] * 12), [1], 'result of more than'),
    # contains() over shared structures.
    ('contains([%s], %s)' % ((' | '.join(['[@,@,@,@,@,@,@,@]'] * 10),) * 2), [1], 'evaluation steps'),
    # Work that is plainly a lot: sort_by over a large list, many times.
    (' | '.join(['sort_by(@, &@)'] * 200), BIG_LIST, 'stopped after'),
])
def test_expressions_that_blow_up_are_stopped_with_a_reason(expression, data, reason):
    problem, _taken = _bounded(expression, data)
    assert problem is not None and reason in problem, problem


def test_the_time_bound_holds_whatever_the_step_count():
    limits = jp.Limits(steps=10 ** 12, seconds=0.2)
    started = time.monotonic()
    with pytest.raises(jp.JudgeFailure, match='s of evaluation'):
        jp.evaluate(jp.Compiled('x', jmespath.compile(' | '.join(['sort_by(@, &@)'] * 100)).parsed), BIG_LIST, limits,
                    None, 'expr')
    assert time.monotonic() - started < 2


def test_a_type_error_is_named_by_type_never_by_value():
    huge = 'x' * (10 * 1024 * 1024)
    with pytest.raises(jp.JudgeFailure) as caught:
        _evaluate('abs(@)', huge)
    assert len(str(caught.value)) < 300 and 'string' in str(caught.value)


def test_equality_follows_jmespath():
    assert _evaluate('a == b', {'a': 1, 'b': 1.0}) is True
    assert _evaluate('a == b', {'a': 1, 'b': True}) is False
    assert _evaluate('a == b', {'a': {'x': [1, {'y': 2}]}, 'b': {'x': [1, {'y': 2}]}}) is True
    assert _evaluate('a != b', {'a': {'x': [1]}, 'b': {'x': [2]}}) is True
    assert _evaluate('contains(a, `{"x": 1}`)', {'a': [{'x': 1}]}) is True


@pytest.mark.parametrize('stamp, expected', [
    ('Mon 2026-11-30 03:00:00 UTC', 1796007600.0),        # systemctl show, which the host runs with TZ=UTC
    ('2026-11-30 03:00:00', 1796007600.0),
    ('2026-11-30T03:00:00Z', 1796007600.0),
    ('2026-11-30T04:00:00+01:00', 1796007600.0),
    ('2026-11-30T03:00:00.5Z', 1796007600.5),
    ('@1796007600', 1796007600.0),                        # systemctl show --timestamp=unix
    (1796007600, 1796007600.0),
    ('n/a', None), ('', None), (0, None), ('yesterday', None), ('2026-13-01', None), (None, None),
])
def test_epoch(stamp, expected):
    assert jp.epoch(stamp) == expected


def test_age_is_measured_on_the_hosts_clock():
    assert _evaluate('age(t)', {'t': 'Mon 2026-11-30 03:00:00 UTC'}, now=1796007600.0 + 90) == 90.0
    assert _evaluate('age(t)', {'t': 'n/a'}, now=1796007600.0) is None
    assert _evaluate('now()', {}, now=12.5) == 12.5


@pytest.mark.parametrize('span, seconds', [
    ('26h', 93600.0), ('1d 2h', 93600.0), ('90min', 5400.0), ('1min 30s', 90.0), ('500ms', 0.5), ('1w', 604800.0),
    ('30', 30.0), (45, 45.0), ('infinity', None), ('soon', None), ('', None), ('2h soon', None),
])
def test_seconds_reads_systemd_time_spans(span, seconds):
    # systemd.time(7): "2h 30min", the units usec, ms, s, min, h, d, w, M, y and their long names.
    assert jp.span_seconds(span) == seconds


def test_duration_and_versions():
    assert [jp.duration_text(s) for s in (5, 90, 3600 * 26 + 300, 86400 * 3 + 7200, -90)] == \
        ['5s', '1min 30s', '1d 2h', '3d 2h', '-1min 30s']
    assert [jp.compare_versions(a, b) for a, b in (('6.18', '6.18.0'), ('6.18.3', '6.18.10'), ('v1.2', '1.1'))] == [0, -1, 1]
    assert jp.compare_versions('not a version', '1.0') is None


def test_split_words_and_items():
    assert _evaluate("split(@, ':')", 'a:b::c') == ['a', 'b', '', 'c']
    assert _evaluate('words(@)', 'UUID=1 /data  ext4 defaults 0 2') == ['UUID=1', '/data', 'ext4', 'defaults', '0', '2']
    assert _evaluate('items(@)[?value > `1`].key', {'a': 1, 'b': 2}) == ['b']


@pytest.mark.parametrize('expression, why', [
    ('backup.size ==', 'is not a JMESPath expression'),
    ('lenght(backup)', 'calls lenght(), which is not a function (did you mean length()?)'),
    ('age(backup.mtime, `1`)', 'calls age() with 2 argument(s); it takes 1'),
    ('bakup.size', 'reads bakup, which is not a question of this check (did you mean backup?)'),
    ('x' * 2001, 'is 2001 characters long'),
    ('', 'must be a JMESPath expression'),
])
def test_compile_names_the_problem(expression, why):
    compiled, problem = jp.compile_expression(expression, set(['backup', 'now', 'host']))
    assert compiled is None and why in problem, problem


def test_compile_reads_only_the_root_names():
    # Fields under a projection or a function's expression are the item's, not the check's questions.
    compiled, problem = jp.compile_expression("units[?ActiveState == 'failed'].{n: unit} | sort_by(@, &n)",
                                              set(['units']))
    assert compiled is not None, problem


def test_a_negation_that_jmespath_reads_otherwise_is_refused():
    """jmespath.py's parser binds ! (45) tighter than . (40) and [] (BINDING_POWER in jmespath/parser.py),
    so !a.b is (!a).b: null whatever a.b is, which upstream evaluates without complaint."""
    assert jmespath.search('!a.b', {'a': {'b': True}}) is None and jmespath.search('!(a.b)', {'a': {'b': True}}) is False
    compiled, problem = jp.compile_expression('!a.b', set(['a']))
    assert compiled is None and 'write !(a.b)' in problem
    assert jp.compile_expression('!(a.b) && !contains(a.c, `1`)', set(['a']))[0] is not None
