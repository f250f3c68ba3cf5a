# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declared checks (``postmortem_check_files``): YAML files of the user's own checks, loaded and
validated on the controller before any host is contacted.

A file is a mapping: ``groups`` (optional, every check of the file is in them) and ``checks``, a
list of checks, each with ``id`` (``namespace.name``), ``title``, ``docs``, optional ``advice``,
``groups`` and ``timeout``, ``gather`` (the questions: module_utils/declared/spec.py) and ``judge``
(JMESPath expressions: plugin_utils/declared_jmespath.py). Every problem of every file is found in
one pass and named with its file, line and check, with a "did you mean" for misspelled keys
(docs/declared_checks.md has the schema). What goes to the hosts is ``wire()``: the questions only;
the verdict stays here (declared_judge.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import hashlib
import json
import os
import re
import sys

import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils.declared import spec
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_drift import read_bounded

MAX_FILE_BYTES = 1024 * 1024
MAX_FILES = 200
MAX_CHECKS = 500
MAX_EVIDENCE_KEYS = 30
MAX_TITLE = 200
MAX_DOCS = 2000
MAX_ADVICE_LINES = 10
FILE_KEYS = ('groups', 'checks')
CHECK_KEYS = ('id', 'title', 'docs', 'advice', 'groups', 'timeout', 'gather', 'judge')
JUDGE_KEYS = ('applies', 'instances', 'name', 'affected', 'at_risk', 'evidence', 'summary')
SUMMARY_STATUSES = ('affected', 'at_risk', 'ok', 'not_applicable')
TEMPLATE_FIELD = re.compile(r'\{([A-Za-z_][A-Za-z0-9_]*)\}')
JMESPATH_NEEDED = ('postmortem_check_files needs the Python package jmespath on the controller, in the Python that '
                   'runs ansible-playbook (%s): pip install "jmespath>=1.0.1" (requirements/controller.txt has it)')


class CheckFileProblem(ValueError):
    """Everything wrong with the check files, one problem a line (``problems``)."""

    def __init__(self, problems):
        super(CheckFileProblem, self).__init__('; '.join(problems))
        self.problems = problems


class _Mapping(dict):
    line = 0
    lines = None


class _Sequence(list):
    line = 0
    lines = None


class _Loader(getattr(yaml, 'CSafeLoader', yaml.SafeLoader)):  # pylint: disable=too-many-ancestors
    """PyYAML's safe loader (libyaml's parser where PyYAML has it), keeping each mapping's and list's
    lines; aliases refused (a few lines of aliases can stand for billions of values): a node met a
    second time is one."""

    def construct_object(self, node, deep=False):
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.MarkedYAMLError(None, None, 'aliases (*name) are not supported in check files', node.start_mark)
        return super(_Loader, self).construct_object(node, deep)


def _construct_mapping(loader, node):
    loader.flatten_mapping(node)
    data = _Mapping()
    data.line = node.start_mark.line + 1
    data.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise yaml.MarkedYAMLError(None, None, 'keys must be text, got %r' % (key,), key_node.start_mark)
        if key in data:
            raise yaml.MarkedYAMLError(None, None, 'the key %s is given twice' % key, key_node.start_mark)
        data[key] = loader.construct_object(value_node, deep=True)
        data.lines[key] = key_node.start_mark.line + 1
    return data


def _construct_sequence(loader, node):
    data = _Sequence(loader.construct_object(child, deep=True) for child in node.value)
    data.line = node.start_mark.line + 1
    data.lines = [child.start_mark.line + 1 for child in node.value]
    return data


_Loader.add_constructor('tag:yaml.org,2002:map', _construct_mapping)
_Loader.add_constructor('tag:yaml.org,2002:seq', _construct_sequence)


def _line(container, key, default):
    lines = getattr(container, 'lines', None)
    if isinstance(lines, dict) and key in lines:
        return lines[key]
    if isinstance(lines, list) and isinstance(key, int) and key < len(lines):
        return lines[key]
    return getattr(container, 'line', None) or default


def _suggest(word, choices):
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return ' (did you mean %s?)' % close[0] if close else ''


class Check(object):
    """One validated declared check."""

    def __init__(self, source, line, check_id, title, docs, advice, groups, timeout, gather, judge, definition):
        self.source = source
        self.line = line
        self.id = check_id
        self.title = title
        self.docs = docs
        self.advice = advice
        self.groups = groups
        self.timeout = timeout
        self.gather = gather
        self.judge = judge
        # Changes when anything the host asks or the judge reads changes: a host's answers are judged
        # only by the definition they were asked for (declared_judge).
        self.digest = hashlib.sha256(json.dumps(definition, sort_keys=True, default=str).encode('utf-8')).hexdigest()[:16]

    def wire(self):
        return {'id': self.id, 'title': self.title, 'groups': list(self.groups), 'timeout': self.timeout,
                'digest': self.digest, 'gather': self.gather}

    def stub(self):
        return spec.DeclaredCheck(self.id, self.title, self.groups, self.gather, self.timeout, self.digest)


class CheckSet(object):
    """The run's declared checks, in file order."""

    def __init__(self, checks, files):
        self.checks = checks
        self.files = files
        self.by_id = dict((c.id, c) for c in checks)

    def wire(self):
        return [c.wire() for c in self.checks]

    def available(self, builtin):
        """{id: detection or declared stub} for registry.select: the registry's, then these."""
        merged = dict(builtin)
        merged.update((c.id, c.stub()) for c in self.checks)
        return merged

    def report_checks(self):
        """[(id, title)] for the report, after the registry's."""
        return [(c.id, c.title) for c in self.checks]

    def described(self):
        """{id: {docs, advice, source}}: what the report shows for a declared check instead of the
        registry's remediation (advice and a docs link only)."""
        return dict((c.id, {'docs': c.docs, 'advice': list(c.advice), 'source': '%s:%d' % (c.source, c.line)})
                    for c in self.checks)


def check_files(paths):
    """The files ``postmortem_check_files`` names (a file, a directory of *.yml/*.yaml, or a list of
    them), in order; CheckFileProblem when one cannot be used."""
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise CheckFileProblem(['postmortem_check_files must be a path or a list of paths (files or directories '
                                'of *.yml), got %r' % (paths,)])
    files, problems = [], []
    for given in paths:
        path = os.path.abspath(os.path.expanduser(given))
        if os.path.isdir(path):
            found = sorted(os.path.join(path, n) for n in os.listdir(path)
                           if n.endswith(('.yml', '.yaml')) and not n.startswith('.'))
            if not found:
                problems.append('postmortem_check_files: %s holds no *.yml file' % given)
            files.extend(found)
        elif os.path.exists(path):
            files.append(path)
        else:
            problems.append('postmortem_check_files: %s does not exist' % given)
    if len(files) > MAX_FILES:
        problems.append('postmortem_check_files names %d files, at most %d' % (len(files), MAX_FILES))
    if problems:
        raise CheckFileProblem(problems)
    return files


def load(paths, builtin_ids, builtin_groups):
    """The CheckSet of the files ``paths`` names; CheckFileProblem with every problem otherwise.
    ``builtin_ids``/``builtin_groups``: the registry's, which declared ids and groups may not take."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import declared_jmespath
    if declared_jmespath.jmespath is None:
        raise CheckFileProblem([JMESPATH_NEEDED % sys.executable])
    files = check_files(paths)
    checks, problems, seen = [], [], {}
    for path in files:
        try:
            _load_file(path, declared_jmespath, set(builtin_ids), set(builtin_groups), checks, problems, seen)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            # A shape no check above foresaw: still the file's problem, with its name, never a bare Python error (#49).
            problems.append('%s: this file could not be read as check files are written (%s: %s); see docs/declared_checks.md'
                            % (path, type(exc).__name__, ' '.join(str(exc).split())[:200]))
    if len(checks) > MAX_CHECKS:
        problems.append('postmortem_check_files holds %d checks, at most %d' % (len(checks), MAX_CHECKS))
    ids = set(c.id for c in checks)
    for check in checks:
        for group in check.groups:
            if group in ids:
                problems.append('%s:%d: check %s: group %s is also a check id' % (check.source, check.line, check.id, group))
    if problems:
        raise CheckFileProblem(problems)
    return CheckSet(checks, files)


def _read(path, problems):
    try:
        data = read_bounded(path, MAX_FILE_BYTES)
    except ValueError as exc:
        problems.append('%s: %s' % (path, exc))
        return None
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        problems.append('%s: is not UTF-8 text (byte %d)' % (path, exc.start))
        return None
    try:
        return yaml.load(text, Loader=_Loader)  # nosec: _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problems.append('%s:%s: %s%s' % (path, (mark.line + 1) if mark else '?', ' '.join(str(exc.problem or exc).split())[:300],
                                         _quote_hint(text, mark)))
    except (yaml.YAMLError, RecursionError) as exc:
        problems.append('%s: is not YAML: %s' % (path, ' '.join(str(exc).split())[:300]))
    except (ValueError, TypeError, OverflowError) as exc:
        # PyYAML's safe loader raises these for a value it takes for a date or number and cannot build
        # (title: 2026-13-45, a 5,000-digit integer): said as the file's problem, never a bare Python error.
        problems.append('%s: a value YAML reads as a date or number is not one (%s): quote it to keep it as text'
                        % (path, ' '.join(str(exc).split())[:200]))
    return None


# A plain YAML value cannot start with these: a JMESPath expression that does (!expr, `literal`, *.a, &key, @)
# must be quoted. The likeliest mistake in a check file, so the error says how to write it.
_NOT_PLAIN = '!`*&@%'


def _quote_hint(text, mark):
    if mark is None:
        return ''
    lines = text.split('\n')
    rest = lines[mark.line][mark.column:].strip() if mark.line < len(lines) else ''
    if not rest or rest[0] not in _NOT_PLAIN:
        return ''
    value = rest.split(' #', 1)[0].strip()[:60].replace("'", "''")
    return " (a value that starts with %s must be quoted: '%s')" % (rest[0], value)


def _groups(value, where, builtin_ids, builtin_groups):
    problems = []
    if value is None:
        return [], problems
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > spec.MAX_GROUPS:
        return [], ['%s: groups must be a list of at most %d group names' % (where, spec.MAX_GROUPS)]
    groups = []
    for group in value:
        if not isinstance(group, str) or not spec.GROUP_RE.match(group):
            problems.append('%s: group %r is not a group name (lower-case letters, digits, - and _)' % (where, group))
        elif group == 'all' or group in builtin_groups or group in builtin_ids:
            problems.append('%s: group %s is the name of a built-in %s; declared checks take groups of their own'
                            % (where, group, 'check' if group in builtin_ids else 'group'))
        elif group not in groups:
            groups.append(group)
    return groups, problems


def _load_file(path, jmespath_module, builtin_ids, builtin_groups, checks, problems, seen):
    data = _read(path, problems)
    if data is None and not problems:
        problems.append('%s: is empty (a mapping with checks: [...] is expected)' % path)
    if data is None:
        return
    if not isinstance(data, dict):
        problems.append('%s:%d: expected a mapping with checks: [...] (and optional groups), got %s'
                        % (path, getattr(data, 'line', 1), type(data).__name__))
        return
    for key in data:
        if key not in FILE_KEYS:
            problems.append('%s:%d: unknown key %s%s; a check file has %s' % (
                path, _line(data, key, 1), key, _suggest(key, FILE_KEYS), ', '.join(FILE_KEYS)))
    file_groups, found = _groups(data.get('groups'), '%s:%d' % (path, _line(data, 'groups', 1)), builtin_ids, builtin_groups)
    problems.extend(found)
    entries = data.get('checks')
    if not isinstance(entries, list) or not entries:
        problems.append('%s:%d: checks must be a list of at least one check' % (path, _line(data, 'checks', 1)))
        return
    for index, entry in enumerate(entries):
        line = _line(entries, index, 1)
        check = _check(path, line, entry, jmespath_module, builtin_ids, builtin_groups, file_groups, problems)
        if check is None:
            continue
        if check.id in seen:
            problems.append('%s:%d: check id %s is already declared at %s' % (path, line, check.id, seen[check.id]))
            continue
        seen[check.id] = '%s:%d' % (path, line)
        checks.append(check)


def _text(value, where, key, limit, problems, required=True):
    if value is None and not required:
        return None
    if value is None:
        problems.append('%s: %s is missing (required)' % (where, key))
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append('%s: %s must be text, got %s' % (where, key, 'an empty text' if isinstance(value, str) else type(value).__name__))
        return None
    if len(value) > limit:
        problems.append('%s: %s is %d characters, at most %d' % (where, key, len(value), limit))
        return None
    return value.strip()


def _check(path, line, entry, jmespath_module, builtin_ids, builtin_groups, file_groups, problems):
    if not isinstance(entry, dict):
        problems.append('%s:%d: a check must be a mapping (id, title, docs, gather, judge), got %s'
                        % (path, line, type(entry).__name__))
        return None
    check_id = entry.get('id')
    label = check_id if isinstance(check_id, str) else '#%s' % line
    before = len(problems)

    def where(key=None, container=entry):
        return '%s:%d: check %s' % (path, _line(container, key, line), label) if key is not None else \
            '%s:%d: check %s' % (path, line, label)

    for key in entry:
        if key not in CHECK_KEYS:
            problems.append('%s: unknown key %s%s; a check has %s' % (where(key), key, _suggest(key, CHECK_KEYS),
                                                                      ', '.join(CHECK_KEYS)))
    if not isinstance(check_id, str) or not spec.ID_RE.match(check_id):
        problems.append('%s: id must be namespace.name in lower case (site.backup_fresh), got %r' % (where('id'), check_id))
    elif check_id in builtin_ids:
        problems.append('%s: id %s is a built-in check' % (where('id'), check_id))
    title = _text(entry.get('title'), where('title'), 'title', MAX_TITLE, problems)
    if title and '\n' in title:
        problems.append('%s: title must be one line' % where('title'))
    docs = _text(entry.get('docs'), where('docs'), 'docs (a link or a line of text)', MAX_DOCS, problems)
    advice = entry.get('advice') or []
    if isinstance(advice, str):
        advice = [advice]
    if not isinstance(advice, list) or len(advice) > MAX_ADVICE_LINES or \
            not all(isinstance(a, str) and a.strip() and len(a) <= spec.MAX_TEXT for a in advice):
        problems.append('%s: advice must be text or a list of at most %d lines of text' % (where('advice'), MAX_ADVICE_LINES))
        advice = []
    groups, found = _groups(entry.get('groups'), where('groups'), builtin_ids, builtin_groups)
    problems.extend(found)
    timeout = entry.get('timeout', spec.DEFAULT_CHECK_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= spec.MAX_CHECK_TIMEOUT:
        problems.append('%s: timeout must be a whole number of seconds, 1 to %d, got %r'
                        % (where('timeout'), spec.MAX_CHECK_TIMEOUT, timeout))
    gather = _gather(entry.get('gather'), where, entry, problems)
    # The names of questions that have problems of their own count too: one mistake, one message.
    # gather: 5 or gather: true is _gather's problem to word; iterating it here was a bare TypeError (#49).
    asked = entry.get('gather') if isinstance(entry.get('gather'), list) else []
    names = [q.get('name') for q in asked if isinstance(q, dict) and isinstance(q.get('name'), str)]
    judge = _judge(entry.get('judge'), where, entry, names, jmespath_module, problems)
    if len(problems) > before:
        return None
    all_groups = [spec.DECLARED_GROUP] + [g for g in file_groups + groups if g != spec.DECLARED_GROUP]
    all_groups = [g for position, g in enumerate(all_groups) if g not in all_groups[:position]]
    definition = {'id': check_id, 'title': title, 'groups': all_groups, 'timeout': timeout, 'gather': gather,
                  'judge': dict((k, v) for k, v in entry['judge'].items())}
    return Check(path, line, check_id, title, docs, [a.strip() for a in advice], all_groups, timeout, gather, judge,
                 definition)


def _gather(value, where, entry, problems):
    if not isinstance(value, list) or not 1 <= len(value) <= spec.MAX_QUESTIONS:
        problems.append('%s: gather must be a list of 1 to %d questions' % (where('gather'), spec.MAX_QUESTIONS))
        return []
    questions = []
    for index, question in enumerate(value):
        name = question.get('name') if isinstance(question, dict) else None
        at = '%s: gather[%d]%s' % (where(index, value), index, (' (%s)' % name) if isinstance(name, str) else '')
        normalized, found = spec.normalize_question(question)
        for key, why in found:
            if key is None:
                problems.append('%s: %s' % (at, why))
                continue
            line_at = '%s: gather[%d]%s' % (where(key, question), index, (' (%s)' % name) if isinstance(name, str) else '')
            if why == 'unknown option':
                kind = question.get('kind')
                known = sorted(spec.options_of(kind))
                problems.append('%s: unknown option %s%s; a %s question takes %s' % (
                    line_at, key, _suggest(key, known), kind, ', '.join(known)))
            else:
                problems.append('%s: %s %s' % (line_at, key, why))
        if normalized is None:
            continue
        if any(q['name'] == normalized['name'] for q in questions):
            problems.append('%s: the name %s is used by another question' % (at, normalized['name']))
            continue
        questions.append(normalized)
    return questions


def _judge(value, where, entry, names, jmespath_module, problems):
    if not isinstance(value, dict):
        problems.append('%s: judge must be a mapping (%s)' % (where('judge'), ', '.join(JUDGE_KEYS)))
        return None
    for key in value:
        if key not in JUDGE_KEYS:
            problems.append('%s: unknown judge key %s%s; a judge has %s' % (
                where(key, value), key, _suggest(key, JUDGE_KEYS), ', '.join(JUDGE_KEYS)))
    if 'affected' not in value and 'at_risk' not in value:
        problems.append('%s: judge needs affected, at_risk or both (conditions, JMESPath)' % where('judge'))
    with_instances = value.get('instances') is not None
    root_names = set(names) | set(('now', 'host'))
    item_names = root_names | set(('item',))
    judge = {}
    for key in ('applies', 'instances', 'name', 'affected', 'at_risk'):
        if value.get(key) is None:
            continue
        if key == 'name' and not with_instances:
            problems.append('%s: name names each instance: it needs instances' % where(key, value))
            continue
        per_item = with_instances and key in ('name', 'affected', 'at_risk')
        names = item_names if per_item else root_names
        # The conditions come after the evidence, and may read it: evidence.<field>.
        names = names | set(('evidence',)) if key in ('affected', 'at_risk') else names
        compiled, why = jmespath_module.compile_expression(value[key], names)
        if why:
            problems.append('%s: judge.%s %s' % (where(key, value), key, why))
        judge[key] = compiled
    if with_instances and value.get('name') is None:
        problems.append('%s: instances need a name (an expression on item)' % where('instances', value))
    evidence = value.get('evidence') or {}
    judge['evidence'] = {}
    if not isinstance(evidence, dict) or len(evidence) > MAX_EVIDENCE_KEYS:
        problems.append('%s: evidence must be a mapping of at most %d names to expressions'
                        % (where('evidence', value), MAX_EVIDENCE_KEYS))
        evidence = {}
    for key, text in evidence.items():
        if not spec.NAME_RE.match(key) or key in ('name', 'status', 'instances'):
            problems.append('%s: evidence name %s must be lower case (letters, digits, _) and not name, status or '
                            'instances' % (where(key, evidence), key))
            continue
        compiled, why = jmespath_module.compile_expression(text, item_names if with_instances else root_names)
        if why:
            problems.append('%s: judge.evidence.%s %s' % (where(key, evidence), key, why))
        judge['evidence'][key] = compiled
    judge['summary'] = _summary(value.get('summary'), where, value, sorted(judge['evidence']), with_instances, problems)
    return judge


def _summary(value, where, judge, fields, with_instances, problems):
    """{status: template}: one text for every status, or a mapping by status. A template names
    evidence fields as {field} (and {name} per instance, {status}); any other brace is text."""
    if value is None:
        return {}
    templates = value if isinstance(value, dict) else dict((s, value) for s in SUMMARY_STATUSES)
    known = list(fields) + ['status'] + (['name'] if with_instances else [])
    checked = {}
    for status, template in templates.items():
        at = where(status, value) if isinstance(value, dict) else where('summary', judge)
        if status not in SUMMARY_STATUSES:
            problems.append('%s: summary for %s%s; summaries are for %s' % (
                at, status, _suggest(status, SUMMARY_STATUSES), ', '.join(SUMMARY_STATUSES)))
            continue
        if not isinstance(template, str) or not template.strip() or len(template) > spec.MAX_TEXT:
            problems.append('%s: summary must be text of at most %d characters' % (at, spec.MAX_TEXT))
            continue
        for field in TEMPLATE_FIELD.findall(template):
            if field not in known:
                problems.append('%s: summary names {%s}, which is not an evidence field%s; it can name %s' % (
                    at, field, _suggest(field, known), ', '.join('{%s}' % k for k in known)))
        checked[status] = template
    return checked
