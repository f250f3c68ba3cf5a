"""No function over 60 lines and no module over 500 lines in plugins/.

A function's size is the line span of its body (its first statement, the docstring included, to the
end of its last), as ast reports it; a module's is its number of lines. A piece of code that must
stay longer says why in a comment at its top (``# Over 60 lines:`` as the first line of a function's
body or right after its docstring, ``# Over 500 lines:`` in a module's first lines) and is listed in
EXCEPTIONS with the same reason. PENDING lists what another change is rewriting as this test is
written: each is to be split or made an exception when that change lands.

A listed entry that is no longer over its limit fails too, so the lists only shrink.
"""
import ast
import os

from ..helpers.paths import REPO_ROOT

FUNCTION_LIMIT = 60
MODULE_LIMIT = 500
FUNCTION_MARK = '# Over %d lines:' % FUNCTION_LIMIT
MODULE_MARK = '# Over %d lines:' % MODULE_LIMIT

# path (a module) or path::qualified.name (a function) -> why it stays longer.
EXCEPTIONS = {
}

# Not yet split: each is to be split or made an exception (with its reason at its top) in a change of its own.
PENDING = {}


def _functions(tree, prefix=''):
    """(qualified name, node) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield prefix + node.name, node
            yield from _functions(node, prefix + node.name + '.')
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + '.')


def body_lines(node):
    return node.body[-1].end_lineno - node.body[0].lineno + 1


def over_limits(path, text):
    """{entry: size} of the module and the functions in ``text`` over their limits."""
    found = {}
    lines = len(text.splitlines())
    if lines > MODULE_LIMIT:
        found[path] = lines
    for name, node in _functions(ast.parse(text)):
        if body_lines(node) > FUNCTION_LIMIT:
            found['%s::%s' % (path, name)] = body_lines(node)
    return found


def _plugin_files():
    for directory, _dirs, files in os.walk(os.path.join(REPO_ROOT, 'plugins')):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                yield os.path.relpath(path, REPO_ROOT), path


def _all_over_limits():
    found = {}
    for relative, path in _plugin_files():
        with open(path) as handle:
            found.update(over_limits(relative, handle.read()))
    return found


def _says_why(entry):
    path, _sep, name = entry.partition('::')
    with open(os.path.join(REPO_ROOT, path)) as handle:
        text = handle.read()
    if not name:
        return any(line.startswith(MODULE_MARK) for line in text.splitlines()[:40])
    node = dict(_functions(ast.parse(text)))[name]
    first = node.body[1] if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
        and isinstance(node.body[0].value.value, str) and len(node.body) > 1 else node.body[0]
    around = text.splitlines()[node.lineno:first.lineno]
    return any(line.strip().startswith(FUNCTION_MARK) for line in around)


def test_no_function_or_module_is_over_its_limit_unless_listed():
    unlisted = dict((entry, size) for entry, size in _all_over_limits().items()
                    if entry not in EXCEPTIONS and entry not in PENDING)
    assert unlisted == {}, 'split these, or say why at their top and list them in EXCEPTIONS: %r' % unlisted


def test_a_listed_entry_is_still_over_its_limit():
    # One test over the lists (not one per entry): with both lists empty, as now, it runs and passes rather than
    # being collected as an empty parameter set and skipped.
    measured = _all_over_limits()
    within = [entry for entry in sorted(set(EXCEPTIONS) | set(PENDING)) if entry not in measured]
    assert within == [], 'within their limits now: take them off the list: %s' % within


def test_every_exception_says_why_at_its_top():
    silent = [entry for entry in sorted(EXCEPTIONS) if not _says_why(entry)]
    assert silent == [], 'no %r or %r comment at their top: %s' % (FUNCTION_MARK, MODULE_MARK, silent)


def test_the_measure_counts_a_body_not_its_signature_and_nested_functions_too():
    body = ''.join('    x%d = %d\n' % (n, n) for n in range(FUNCTION_LIMIT))
    at_limit = 'def fits(\n        a,\n        b):\n    """Doc."""\n' + body[body.index('\n') + 1:]
    over = 'class C:\n    def long(self):\n' + ''.join('    ' + line + '\n' for line in body.splitlines()) + \
        '        def inner():\n            return 1\n'
    assert over_limits('fits.py', at_limit) == {}
    assert over_limits('long.py', over) == {'long.py::C.long': FUNCTION_LIMIT + 2}
    assert over_limits('big.py', 'x = 1\n' * (MODULE_LIMIT + 1)) == {'big.py': MODULE_LIMIT + 1}
    assert over_limits('ok.py', 'x = 1\n' * MODULE_LIMIT) == {}
