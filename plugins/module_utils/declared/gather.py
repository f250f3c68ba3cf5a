# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of declared checks: the questions the controller sent, asked and answered.

audit_facts imports this only when the controller sent declared checks (``declared``), so an audit
without them compiles none of it. Each check runs on its own: its questions share one time budget
(the check's ``timeout``, within ``detection_timeout``), a question that fails stops the check with
that reason (``error``, or ``unknown`` when the host did not answer in time) unless the question
allows it, anything else that goes wrong is that check's ``error``, and the answers of one check may
weigh at most spec.MAX_ANSWER_CHARS. The verdict is the controller's (plugin_utils/declared_judge.py):
what leaves here is data.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.homelab.postmortem.plugins.module_utils.declared import questions, spec
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import bounded_finding


class WireError(ValueError):
    """The ``declared`` option cannot be used at all (a module call's input, not the host's)."""


def _check_from_wire(number, entry):
    if not isinstance(entry, dict):
        raise WireError('declared[%d] must be a mapping, got %s' % (number, type(entry).__name__))
    check_id = entry.get('id')
    if not isinstance(check_id, str) or not spec.ID_RE.match(check_id):
        raise WireError('declared[%d]: id %r is not a declared check id (namespace.name)' % (number, check_id))
    groups = entry.get('groups') or []
    if not isinstance(groups, list) or not all(isinstance(g, str) and spec.GROUP_RE.match(g) for g in groups):
        raise WireError('declared[%d] (%s): groups must be a list of group names' % (number, check_id))
    if spec.DECLARED_GROUP not in groups:
        groups = [spec.DECLARED_GROUP] + groups
    title = entry.get('title') if isinstance(entry.get('title'), str) else check_id
    digest = entry.get('digest') if isinstance(entry.get('digest'), str) else ''
    timeout = entry.get('timeout', spec.DEFAULT_CHECK_TIMEOUT)
    problems = []
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= spec.MAX_CHECK_TIMEOUT:
        problems.append('timeout must be 1 to %d seconds, got %r' % (spec.MAX_CHECK_TIMEOUT, timeout))
        timeout = spec.DEFAULT_CHECK_TIMEOUT
    gather = entry.get('gather')
    normalized = []
    if not isinstance(gather, list) or not 1 <= len(gather) <= spec.MAX_QUESTIONS:
        problems.append('gather must be a list of 1 to %d questions' % spec.MAX_QUESTIONS)
        gather = []
    for position, question in enumerate(gather):
        done, found = spec.normalize_question(question)
        name = question.get('name') if isinstance(question, dict) else None
        problems.extend('question %d (%s): %s%s' % (position + 1, name or 'no name', (key + ' ') if key else '', why)
                        for key, why in found)
        if done is not None:
            if any(q['name'] == done['name'] for q in normalized):
                problems.append('question %d: the name %s is used twice' % (position + 1, done['name']))
            normalized.append(done)
    return spec.DeclaredCheck(check_id, title, groups, normalized, timeout, digest,
                              problem='; '.join(problems) if problems else None)


def checks_from_wire(declared):
    """[spec.DeclaredCheck] from the module's ``declared`` option; WireError when an entry cannot even
    be named (no usable id, an id twice); a check whose questions are wrong carries its ``problem``."""
    if not isinstance(declared, list):
        raise WireError('declared must be a list of checks, got %s' % type(declared).__name__)
    checks, seen = [], set()
    for number, entry in enumerate(declared):
        check = _check_from_wire(number, entry)
        if check.ID in seen:
            raise WireError('declared[%d]: id %s is given twice' % (number, check.ID))
        seen.add(check.ID)
        checks.append(check)
    return checks


def _shared_for(checks):
    """One systemctl show for every unit any of these checks names (questions.Shared)."""
    units, properties = [], []
    for check in checks:
        for question in check.gather:
            if question['kind'] == 'systemd':
                for unit in [question['unit']] if question.get('unit') else question['units']:
                    if unit not in units:
                        units.append(unit)
                properties.extend(p for p in question['properties'] if p not in properties)
    return questions.Shared(units, properties)


def run(ctx, checks):
    """({check id: answer}, {check id: milliseconds}) for the selected declared checks, in order."""
    shared = _shared_for([c for c in checks if c.problem is None])
    answers, timings = {}, {}
    for check in checks:
        started = time.time()
        answers[check.ID] = run_one(ctx, check, shared)
        timings[check.ID] = round((time.time() - started) * 1000.0, 1)
    return answers, timings


def _too_many_values(answers, limit):
    """The name of the first question whose answer takes the answers past ``limit`` values (every value
    counts, containers too, as the controller's measure counts them), or None."""
    values = 0
    for name, answer in answers.items():
        pending = [answer]
        while pending:
            item = pending.pop()
            values += 1
            if values > limit:
                return 'question %s' % name
            if isinstance(item, dict):
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)
    return None


def _failed(check, status, reason):
    return {'digest': check.digest, 'status': status, 'reason': reason}


def run_one(ctx, check, shared):
    """One check's answers, or its status and reason when it cannot be judged; never raises."""
    if check.problem:
        return _failed(check, 'error', 'the check cannot be asked: %s' % check.problem)
    if not ctx.live:
        live = sorted(set(q['kind'] for q in check.gather) & set(spec.LIVE_ONLY))
        if live:
            return _failed(check, 'not_applicable', 'Image audit (root=%s): %s asks the running system (%s).'
                           % (ctx.root, check.ID, ', '.join(live)))
    try:
        with ctx.runner.budget(min(check.timeout, ctx.detection_timeout)):
            answers = {}
            for question in check.gather:
                answer = questions.ask(ctx, question, shared)
                status = answer.pop('error_status', 'error')
                if answer['error'] is not None and not question['allow_error']:
                    return _failed(check, status, '%s (question %s, %s)' % (answer['error'], question['name'], question['kind']))
                answers[question['name']] = answer
    except HostInputError as exc:
        return _failed(check, exc.finding_status, str(exc))
    except Exception as exc:  # pylint: disable=broad-except
        # A bug in our code for one check must not cost the host its other findings; say it is ours.
        return _failed(check, 'error', 'bug in homelab.postmortem (declared check %s): %s: %s; please report it'
                       % (check.ID, type(exc).__name__, exc))
    too_many = _too_many_values(answers, spec.MAX_ANSWER_CHARS // 4)
    if too_many:
        # Counted here as the controller counts it (declared_jmespath.measure): refused on the host, so that an
        # answer the controller would refuse is never carried to it (800,000 short strings took a minute, #49).
        return _failed(check, 'error', 'the answers hold more than %d values (%s); narrow the questions '
                       '(max_bytes, max_matches, max)' % (spec.MAX_ANSWER_CHARS // 4, too_many))
    bounded = bounded_finding({'summary': '', 'evidence': {'answers': answers}}, spec.MAX_ANSWER_CHARS)
    if bounded['evidence'].get('cut'):
        # Refused, not cut: a cut answer could be judged ok.
        return _failed(check, 'error', 'the answers are larger than %d characters (%s); narrow the questions '
                       '(max_bytes, max_matches, max)' % (spec.MAX_ANSWER_CHARS, bounded['evidence']['cut']))
    return {'digest': check.digest, 'now': time.time(), 'answers': bounded['evidence']['answers']}
