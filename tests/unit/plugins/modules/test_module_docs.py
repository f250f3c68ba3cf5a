"""Every module's DOCUMENTATION, EXAMPLES and RETURN is YAML (sanity checks more; this fails fast)."""
import ast
import glob
import os
import re

import pytest
import yaml

from ...helpers.paths import REPO_ROOT

MODULES = sorted(glob.glob(os.path.join(REPO_ROOT, 'plugins', 'modules', '*.py')))


@pytest.mark.parametrize('path', MODULES, ids=os.path.basename)
def test_docs_parse(path):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) in ('DOCUMENTATION', 'EXAMPLES', 'RETURN'):
            found[node.targets[0].id] = yaml.safe_load(node.value.value)
    assert set(found) == {'DOCUMENTATION', 'EXAMPLES', 'RETURN'}
    assert found['DOCUMENTATION']['short_description']
    assert found['RETURN'], 'RETURN must describe what the module returns'


FRAGMENTS = sorted(glob.glob(os.path.join(REPO_ROOT, 'plugins', 'doc_fragments', '*.py')))


def _documentation(path):
    """The DOCUMENTATION text of a module (a top-level string) or doc fragment (a class attribute)."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'DOCUMENTATION':
            return yaml.safe_load(node.value.value)
    raise AssertionError('%s has no DOCUMENTATION' % path)


def _texts(doc, where='DOCUMENTATION'):
    """(where, [lines]) for every description and notes list, however deep (options, suboptions)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ('description', 'notes') and isinstance(value, (list, str)):
                yield '%s.%s' % (where, key), [value] if isinstance(value, str) else [str(v) for v in value]
            else:
                yield from _texts(value, '%s.%s' % (where, key))
    elif isinstance(doc, list):
        for position, value in enumerate(doc):
            yield from _texts(value, '%s[%d]' % (where, position))


def headings_without_body(lines):
    """What ansible-doc would print as a heading with nothing under it. ansible-doc has no headings: a
    Markdown heading in a description is printed as is, and what followed it on the page it was taken
    from (a table, a code block) is not there. A line that ends with a colon introduces something, and
    as the last line of its list it introduces nothing."""
    problems = []
    for position, line in enumerate(lines):
        if any(re.match(r'#{1,6} ', part.strip()) for part in line.splitlines()):
            problems.append('a Markdown heading, printed without what was under it: %r' % line[:80])
        elif line.rstrip().endswith(':') and position == len(lines) - 1:
            problems.append('ends with a colon and nothing follows: %r' % line[-80:])
    return problems


@pytest.mark.parametrize('path', MODULES + FRAGMENTS, ids=os.path.basename)
def test_no_heading_without_body(path):
    problems = []
    for where, lines in _texts(_documentation(path)):
        problems += ['%s: %s' % (where, p) for p in headings_without_body(lines)]
    assert not problems, '\n'.join(problems)


def test_heading_without_body_is_found():
    # The vllm_weight_cache_facts description before the fix: a sub-heading whose table was left out.
    assert headings_without_body(["It is the same code in 0.30.0.", "### The key's fields, per release",
                                  "Returns C(ansible_facts.postmortem.vllm_weight_cache)."])
    assert headings_without_body(['The fields per release:'])
    assert headings_without_body(['Text.\n## Heading'])
    # A colon followed by what it introduces, a hash that is not a heading, and a C(#) comment are fine.
    assert not headings_without_body(['The statuses:', 'C(ok) - nothing wrong.', 'Issue #35 and C(#comment) lines.'])
