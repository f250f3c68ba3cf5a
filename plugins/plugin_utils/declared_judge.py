# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict of a declared check, on the controller: the host's answers are data, judged here.

audit_report calls ``judge_results`` before the report is built: each host's ``postmortem_declared``
answers become findings under the declared ids, in the finding model (statuses, instances,
evidence, summary, advice and a docs link for the fix). The rules of the trust boundary
(docs/architecture.md) hold: a host that puts a finding of its own under a declared id, or answers
for a declared id the run does not know, is not trusted at all; an answer asked by another
definition of the check (the file changed during the run) is that check's error. Summaries are
filled by our own code, one pass over the template: what a host's text holds (``{{ }}`` too)
stays text. Every expression runs under declared_jmespath's bounds; a check that breaks them, or
whose condition is not true or false, is an ``error`` finding for that check alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math

from ansible_collections.homelab.postmortem.plugins.module_utils.declared.spec import MAX_ANSWER_CHARS
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import (
    STATUS_RANK, bound_instances, bounded_finding, make_remediation, worst_status)
from ansible_collections.homelab.postmortem.plugins.module_utils.context import DEFAULT_MAX_INSTANCES
from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_jmespath as jp
from ansible_collections.homelab.postmortem.plugins.plugin_utils.declared_checks import TEMPLATE_FIELD

HOST_STATUSES = ('error', 'unknown', 'not_applicable')
MAX_ITEMS = 1000
MAX_VALUE_TEXT = 500
DEFAULT_SUMMARY = {
    'affected': '%s: affected (judge.affected is true).',
    'at_risk': '%s: at risk (judge.at_risk is true).',
    'ok': '%s: ok.',
    'not_applicable': '%s: does not apply on this host (judge.applies is false).',
}


def _one_line(text, limit=1000):
    return ' '.join(str(text).split())[:limit]


def _described(value):
    if value is None:
        return 'null (a value it reads is missing or not of the type it expects)'
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    return {'str': 'text', 'list': 'a list', 'dict': 'an object'}.get(type(value).__name__, type(value).__name__)


def _shown(value):
    """A value as summary text: text as it is (on one line), numbers plainly, anything else as JSON."""
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else ('%.2f' % value).rstrip('0').rstrip('.')
    if isinstance(value, str):
        return _one_line(value, MAX_VALUE_TEXT)
    return json.dumps(value, separators=(',', ':'), sort_keys=True, default=str)[:MAX_VALUE_TEXT]


def fill(template, fields):
    """The template with every {field} replaced by its value, once: a value's own braces stay text."""
    def one(match):
        value = fields.get(match.group(1))
        if value is None:
            raise jp.JudgeFailure('summary: {%s} is null on this host (a value it reads is missing); give it a default '
                                  'in its evidence expression (%s: "<expression> || \'unknown\'")'
                                  % (match.group(1), match.group(1)))
        return _shown(value)
    return TEMPLATE_FIELD.sub(one, template)


class _Judging(object):
    """One check on one host: its data, its limits."""

    def __init__(self, check, data, now):
        self.check = check
        self.judge = check.judge
        self.data = data
        self.now = now
        self.limits = jp.Limits()

    def value(self, key, data, what=None):
        compiled = self.judge['evidence'][key] if what == 'evidence' else self.judge.get(key)
        label = 'judge.evidence.%s' % key if what == 'evidence' else 'judge.%s' % key
        return jp.evaluate(compiled, data, self.limits, self.now, label)

    def condition(self, key, data):
        if self.judge.get(key) is None:
            return False
        value = self.value(key, data)
        if not isinstance(value, bool):
            raise jp.JudgeFailure('judge.%s gave %s, not true or false (compare it, or guard a missing value: '
                                  '"x != null && ...")' % (key, _described(value)))
        return value

    def status(self, data):
        if self.condition('affected', data):
            return 'affected'
        if self.condition('at_risk', data):
            return 'at_risk'
        return 'ok'

    def evidence(self, data):
        return dict((key, self.value(key, data, 'evidence')) for key in self.judge['evidence'])

    def summary(self, status, fields):
        template = self.judge['summary'].get(status)
        if template is None:
            return DEFAULT_SUMMARY[status] % self.check.title
        return fill(template, fields)


def _finding(check, status, summary, evidence=None, instances=None):
    evidence = dict(evidence or {})
    evidence['declared_in'] = '%s:%d' % (check.source, check.line)
    if instances:
        status = worst_status(i['status'] for i in instances)
        evidence['instances'] = instances
    advice = list(check.advice) or ['See the check\'s documentation.']
    finding = {
        'id': check.id,
        'title': check.title,
        'status': status,
        'summary': summary,
        'evidence': evidence,
        'remediation': make_remediation(manual=advice + ['Docs: %s' % check.docs]),
        'references': [check.docs] if check.docs.startswith(('http://', 'https://')) else [],
    }
    return bound_instances(bounded_finding(finding), DEFAULT_MAX_INSTANCES)


def _instances(judging, context):
    items = judging.value('instances', context)
    if not isinstance(items, list):
        raise jp.JudgeFailure('judge.instances gave %s, not a list' % _described(items))
    if len(items) > MAX_ITEMS:
        raise jp.JudgeFailure('judge.instances gave %d items, at most %d are judged' % (len(items), MAX_ITEMS))
    instances = []
    for item in items:
        data = dict(context)
        data['item'] = item
        name = judging.value('name', data)
        if isinstance(name, bool) or not isinstance(name, (str, int, float)):
            raise jp.JudgeFailure('judge.name gave %s for an item, not text or a number' % _described(name))
        fields = judging.evidence(data)
        data['evidence'] = fields
        status = judging.status(data)
        shown = dict(fields, name=_shown(name), status=status)
        instances.append({'name': _shown(name), 'status': status, 'summary': judging.summary(status, shown),
                          'evidence': fields})
    return instances


def _instances_summary(check, instances):
    worst = worst_status(i['status'] for i in instances)
    first = [i for i in instances if i['status'] == worst][0]
    if len(instances) == 1:
        return first['summary']
    counts = dict((s, sum(1 for i in instances if i['status'] == s)) for s in set(i['status'] for i in instances))
    parts = ', '.join('%d %s' % (counts[s], s) for s in sorted(counts, key=lambda s: -STATUS_RANK[s]))
    return '%d instance(s) of %s: %s. %s' % (len(instances), check.id, parts, first['summary'])


def judge_check(check, answer, host):
    """The finding of one declared check from one host's answer (never raises)."""
    if not isinstance(answer, dict):
        return _finding(check, 'error', 'The host\'s answer for %s is %s, not a mapping; not judged.'
                        % (check.id, _described(answer)))
    if answer.get('digest') != check.digest:
        return _finding(check, 'error', 'The host answered another definition of %s (the check file changed during '
                        'the run, or the host was sent another one); audit again.' % check.id)
    if 'status' in answer:
        status, reason = answer.get('status'), answer.get('reason')
        if status not in HOST_STATUSES or not isinstance(reason, str):
            return _finding(check, 'error', 'The host\'s answer for %s has a status that is not one a host may give '
                            '(%s); not judged.' % (check.id, _one_line(repr(status), 60)))
        return _finding(check, status, _one_line(reason))
    answers, now = answer.get('answers'), answer.get('now')
    if not isinstance(answers, dict) or isinstance(now, bool) or not isinstance(now, (int, float, type(None))):
        return _finding(check, 'error', 'The host\'s answers for %s are not a mapping with the host\'s time; not judged.'
                        % check.id)
    if isinstance(now, float) and not math.isfinite(now):
        # NaN made every age comparison false (ok), an infinity at_risk: a time that is no time is an error (#49).
        return _finding(check, 'error', 'The host\'s time for %s is not a finite number (%r); not judged.' % (check.id, now))
    try:
        jp.measure(answers, 'the host\'s answers', max_values=MAX_ANSWER_CHARS // 4, max_chars=MAX_ANSWER_CHARS, finite=True)
        context = dict(answers)
        context['now'] = now
        context['host'] = host
        judging = _Judging(check, context, now)
        if check.judge.get('applies') is not None and not judging.condition('applies', context):
            return _finding(check, 'not_applicable', judging.summary('not_applicable', {'status': 'not_applicable'}))
        if check.judge.get('instances') is not None:
            instances = _instances(judging, context)
            if not instances:
                return _finding(check, 'not_applicable', 'Nothing to judge on this host (judge.instances is empty).')
            return _finding(check, None, _instances_summary(check, instances), instances=instances)
        fields = judging.evidence(context)
        status = judging.status(dict(context, evidence=fields))
        return _finding(check, status, judging.summary(status, dict(fields, status=status)), evidence=fields)
    except jp.JudgeFailure as exc:
        return _finding(check, 'error', 'The judge of %s failed on this host\'s answers: %s' % (check.id, _one_line(exc)))


def _failed(reason):
    return {'failed': True, 'msg': reason}


def judge_result(result, checks, host):
    """The host's registered audit result with its declared checks judged: their findings added to
    ``ansible_facts.postmortem`` (after the registry's), or a failed result when the host's answer
    cannot be trusted. Results that are not an audited host's are returned as they are."""
    if not isinstance(result, dict) or result.get('failed') or result.get('unreachable') or result.get('skipped'):
        return result
    facts = result.get('ansible_facts')
    if not isinstance(facts, dict):
        return result
    findings, declared = facts.get('postmortem'), facts.get('postmortem_declared')
    if not isinstance(findings, dict):
        return result  # report.build says what is wrong with it
    if findings:
        forged = [cid for cid in findings if cid in checks.by_id]
        if forged:
            return _failed('the audit returned findings of its own for declared check(s) (%s), which only the '
                           'controller judges: a host that answers so is not trusted, none of its findings are used'
                           % ', '.join(sorted(forged)[:3]))
    if declared is None:
        return result
    if not isinstance(declared, dict):
        return _failed('the declared checks\' answers are %s, not a mapping' % _described(declared))
    unknown = [cid for cid in declared if cid not in checks.by_id]
    if unknown:
        return _failed('the audit answered for %d declared check id(s) this run does not know (%s): a host that '
                       'answers for checks it was not asked is not trusted, none of its findings are used'
                       % (len(unknown), ', '.join(_one_line(repr(c), 60) for c in unknown[:3])))
    merged = dict(findings)
    for check in checks.checks:
        if check.id in declared:
            merged[check.id] = judge_check(check, declared[check.id], host)
    judged = dict(result)
    judged['ansible_facts'] = dict(facts)
    judged['ansible_facts']['postmortem'] = merged
    return judged


def judge_results(results, checks):
    """{host: result} with every host's declared checks judged (judge_result)."""
    return dict((host, judge_result(result, checks, host)) for host, result in results.items())
