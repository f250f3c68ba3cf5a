"""Roles and playbooks decide by data, never by words a host wrote for people.

An instance's ``name``, a ``summary`` and a ``msg`` are display text: a detection may reword them, and a
compromised host can write anything there. A role that selects by them (the old docker_overlay_recover:
``selectattr('name', 'match', '^failed starts on ')``) changes what it does when a sentence changes. So no
YAML under roles/ or playbooks/ may apply a ``match``/``search``/``regex`` test, a ``regex_*`` filter, a
comparison (``==``, ``!=``, ``in``, ``equalto``, ``contains`` ...) or a string method (``startswith`` ...)
to such a field. Showing one (a ``debug`` message, a ``fail_msg``) is what they are for.

Every YAML file is parsed and every Jinja expression in it is read with Jinja's own parser: the bare
conditionals (``when``, ``that``, ``changed_when``, ``failed_when``, ``until``) and every templated
string anywhere else (``vars``, ``set_fact``, loops, module arguments). Molecule scenarios are left out:
they are tests, and a test may check a message's wording.

What counts as display text: ``summary`` and ``msg`` anywhere, ``name`` except directly under
``evidence`` (a detection's evidence names the thing it measured: data), through ``map(attribute=...)``,
``selectattr``/``rejectattr`` on those attributes, and through the filters that keep text text.
"""
import os

import jinja2
import pytest
import yaml
from jinja2 import nodes

from ..helpers.paths import REPO_ROOT

SCANNED = ('roles', 'playbooks')
CONDITIONALS = frozenset(['when', 'that', 'changed_when', 'failed_when', 'until'])
WORD_TESTS = frozenset(['match', 'search', 'regex', 'equalto', 'eq', '==', 'ne', '!=', 'sameas', 'in', 'contains',
                        'startswith', 'endswith'])
WORD_FILTERS = frozenset(['regex_search', 'regex_findall', 'regex_replace'])
WORD_METHODS = frozenset(['startswith', 'endswith', 'find', 'rfind', 'index', 'rindex', 'count', 'split', 'rsplit',
                          'partition', 'rpartition', '__contains__', '__eq__', '__ne__'])
COMPARISONS = frozenset(['eq', 'ne', 'in', 'notin'])
# Filters whose result is still the words they were given (or a list of them).
TEXT_FILTERS = frozenset(['list', 'first', 'last', 'unique', 'flatten', 'lower', 'upper', 'string', 'trim', 'default',
                          'd', 'join', 'sort', 'reverse', 'replace', 'truncate', 'select', 'reject', 'map', 'to_json',
                          'to_nice_json', 'random', 'batch', 'slice', 'min', 'max'])
_ENV = jinja2.Environment(extensions=['jinja2.ext.do', 'jinja2.ext.loopcontrols'])


def _display_attribute(path):
    """Whether an attribute path ('summary', 'evidence.name', 'item.name') ends in display text."""
    parts = str(path).split('.')
    if parts[-1] in ('summary', 'msg'):
        return True
    return parts[-1] == 'name' and (len(parts) < 2 or parts[-2] != 'evidence')


def _const(node):
    return node.value if isinstance(node, nodes.Const) else None


def _is_display(node):
    """Whether ``node`` evaluates to display text (or a list of it)."""
    if isinstance(node, nodes.Getattr):
        return _display_attribute(_dotted(node))
    if isinstance(node, nodes.Getitem) and isinstance(_const(node.arg), str):
        return _display_attribute(_const(node.arg)) and not (
            _const(node.arg) == 'name' and _dotted(node.node).split('.')[-1] == 'evidence')
    if isinstance(node, nodes.Filter):
        if node.name == 'map':
            attribute = [_const(k.value) for k in node.kwargs if k.key == 'attribute']
            if attribute:
                return _display_attribute(attribute[0])
        return node.name in TEXT_FILTERS and node.node is not None and _is_display(node.node)
    if isinstance(node, nodes.CondExpr):
        return _is_display(node.expr1) or (node.expr2 is not None and _is_display(node.expr2))
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return any(_is_display(item) for item in node.items)
    if isinstance(node, (nodes.Add, nodes.Concat)):
        return any(_is_display(child) for child in node.iter_child_nodes())
    return False


def _dotted(node):
    if isinstance(node, nodes.Getattr):
        return '%s.%s' % (_dotted(node.node), node.attr)
    if isinstance(node, nodes.Getitem) and isinstance(_const(node.arg), str):
        return '%s.%s' % (_dotted(node.node), _const(node.arg))
    if isinstance(node, nodes.Name):
        return node.name
    return '?'


def _decisions(tree):
    """Reasons, one per place in ``tree`` (a Jinja AST) where display text is matched or compared."""
    found = []
    for node in tree.find_all((nodes.Test, nodes.Filter, nodes.Compare, nodes.Call)):
        if isinstance(node, nodes.Test) and node.name in WORD_TESTS and _is_display(node.node):
            found.append('the test %r on %s' % (node.name, _dotted(node.node)))
        elif isinstance(node, nodes.Filter) and node.node is not None:
            found.extend(_filter_decisions(node))
        elif isinstance(node, nodes.Compare):
            sides = [node.expr] + [operand.expr for operand in node.ops]
            if any(op.op in COMPARISONS for op in node.ops) and any(_is_display(side) for side in sides):
                found.append('a comparison (%s) with display text' % ', '.join(op.op for op in node.ops))
        elif (isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr) and node.node.attr in WORD_METHODS
              and _is_display(node.node.node)):
            found.append('the method %s() on %s' % (node.node.attr, _dotted(node.node.node)))
    return found


def _filter_decisions(node):
    args = [_const(arg) for arg in node.args]
    if node.name in WORD_FILTERS and _is_display(node.node):
        return ['the filter %s on %s' % (node.name, _dotted(node.node))]
    if node.name in ('selectattr', 'rejectattr') and len(args) >= 2 and isinstance(args[0], str) \
            and _display_attribute(args[0]) and args[1] in WORD_TESTS:
        return ["%s('%s', '%s', ...)" % (node.name, args[0], args[1])]
    if node.name in ('select', 'reject') and args and args[0] in WORD_TESTS and _is_display(node.node):
        return ["%s('%s', ...) on display text" % (node.name, args[0])]
    return []


class _AnsibleLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """YAML as Ansible writes it: !unsafe and !vault values read as their plain scalar."""


_AnsibleLoader.add_multi_constructor('!', lambda loader, suffix, node: loader.construct_scalar(node)
                                     if isinstance(node, yaml.ScalarNode) else None)


def _expressions(data, key=None, where=''):
    """(where, Jinja source) for every expression in a loaded YAML document."""
    if isinstance(data, dict):
        for name, value in data.items():
            yield from _expressions(value, name, '%s.%s' % (where, name) if where else str(name))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _expressions(value, key, '%s[%d]' % (where, index))
    elif isinstance(data, str):
        if key in CONDITIONALS:
            yield where, '{{ %s }}' % data
        elif '{{' in data or '{%' in data:
            yield where, data


def violations(text, path='<text>'):
    """Every place in the YAML ``text`` where a display field decides something: 'path: where: reason: source'."""
    found = []
    for where, source in _expressions(yaml.load(text, Loader=_AnsibleLoader)):  # nosec: a safe loader
        try:
            tree = _ENV.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            found.append('%s: %s: Jinja this test cannot read (%s): %s' % (path, where, exc, source))
            continue
        found.extend('%s: %s: %s: %s' % (path, where, reason, ' '.join(source.split())) for reason in _decisions(tree))
    return found


def yaml_files():
    paths = []
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(REPO_ROOT, top)):
            dirs[:] = sorted(d for d in dirs if d != 'molecule')
            paths.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(('.yml', '.yaml')))
    return paths


FILES = yaml_files()


def test_every_role_and_playbook_is_scanned():
    relative = [os.path.relpath(p, REPO_ROOT) for p in FILES]
    assert 'playbooks/remediate.yml' in relative and 'roles/docker_overlay_recover/tasks/main.yml' in relative
    assert not [p for p in relative if '/molecule/' in p]


@pytest.mark.parametrize('path', FILES, ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_no_role_or_playbook_decides_by_display_text(path):
    with open(path, encoding='utf-8') as handle:
        text = handle.read()
    assert violations(text, os.path.relpath(path, REPO_ROOT)) == []


# --- the scanner can fail ----------------------------------------------------------------------

# The lines docker_overlay_recover had before #36, as they were.
OLD_JUDGE = '''
- name: Sort what the detection found on this node
  vars:
    docker_overlay_recover_instances: "{{ docker_overlay_recover_finding.evidence.instances | default([]) }}"
  ansible.builtin.set_fact:
    docker_overlay_recover_not_judged: >-
      {{ (docker_overlay_recover_instances | selectattr('status', 'equalto', 'unknown')
          | rejectattr('name', 'match', '^failed starts on ') | rejectattr('evidence.carrier', 'defined')
          | map(attribute='summary') | list)
         + ([docker_overlay_recover_finding.summary]
            if docker_overlay_recover_finding.status == 'error'
               or (docker_overlay_recover_finding.status == 'unknown' and docker_overlay_recover_instances | length == 0)
            else []) }}
'''
OLD_MAIN = '''
- name: Decide what this node needs
  ansible.builtin.set_fact:
    docker_overlay_recover_failing_services: >-
      {{ (ansible_facts.postmortem.docker_overlay_sandbox.evidence.instances | default([]))
         | selectattr('name', 'match', '^failed starts on ')
         | map(attribute='evidence.tasks') | flatten | map(attribute='service') | select | unique | list }}
'''


def test_the_old_role_lines_fail():
    assert violations(OLD_JUDGE) == ["<text>: [0].ansible.builtin.set_fact.docker_overlay_recover_not_judged: "
                                     "rejectattr('name', 'match', ...): " + ' '.join(OLD_JUDGE.split('>-', 1)[1].split())]
    assert [v.split(': ')[2] for v in violations(OLD_MAIN)] == ["selectattr('name', 'match', ...)"]


@pytest.mark.parametrize('task', [
    "- assert:\n    that: result.msg is search('denied')",
    "- assert:\n    that:\n      - ok\n      - \"'cut off' in finding.summary\"",
    "- debug:\n  when: item.name == 'failed starts on ovs'",
    "- debug:\n  when: item['summary'] is match('.*carrier')",
    "- debug:\n  when: item.summary.startswith('web')",
    "- set_fact:\n    x: \"{{ items | map(attribute='summary') | select('search', 'gone') | list }}\"",
    "- set_fact:\n    x: \"{{ items | map(attribute='summary') | first | regex_search('web') }}\"",
    "- set_fact:\n    x: \"{{ items | selectattr('summary', 'search', 'x') | list }}\"",
    "- set_fact:\n    x: \"{{ items | rejectattr('msg', 'equalto', 'x') | list }}\"",
    "- set_fact:\n    x: \"{{ items | selectattr('name', 'in', names) | list }}\"",
    "- debug:\n  loop: \"{{ items }}\"\n  failed_when: \"'error' in (result.msg | lower)\"",
    "- debug:\n    msg: \"{% if finding.summary is search('x') %}yes{% endif %}\"",
    "- debug:\n  until: out.msg != 'busy'",
    "- debug:\n    msg: !unsafe \"{{ x.summary is match('y') }}\"",
])
def test_a_decision_by_display_text_fails(task):
    assert len(violations(task)) == 1, violations(task)


@pytest.mark.parametrize('task', [
    # Showing words, deciding by data.
    "- debug:\n    msg: \"{{ finding.summary }}: {{ items | map(attribute='summary') | join('; ') }}\"",
    "- assert:\n    that: finding.status not in ['affected', 'error']\n    fail_msg: \"Still {{ finding.summary }}\"",
    "- set_fact:\n    x: \"{{ items | selectattr('evidence.kind', 'equalto', 'container') | map(attribute='evidence.container') | list }}\"",
    "- set_fact:\n    x: \"{{ items | selectattr('evidence.name', 'in', converted) | list }}\"",
    "- debug:\n  when: plan.not_judged | length == 0 and plan.summary_lines | default([]) | length > 0",
    "- debug:\n  when: plan.steps | length > 0",
])
def test_showing_display_text_and_deciding_by_data_pass(task):
    assert violations(task) == []


def test_jinja_the_scanner_cannot_read_fails():
    assert 'Jinja this test cannot read' in violations("- debug:\n  when: x is match(")[0]
