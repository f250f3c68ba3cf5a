"""Every import in plugins/ runs one way: no circle, and no layer imports a layer above it.

The layers are declared once, by the picture in docs/architecture.md ("The layers"): each ``[rank name]``
line names its files (``plugins/...`` patterns, the most specific pattern a file matches wins), and the
``[host]`` line the files shipped to a host, which never import the controller's. Every Python file
under plugins/ is parsed with ast, imports inside functions included: Ansible's dependency finder
ships those too, and a function-local import is an arrow no reader sees at the top of the file.
"""
import ast
import os
import re

import pytest

from ..helpers.paths import REPO_ROOT

PACKAGE = 'ansible_collections.homelab.postmortem.'
LAYER_LINE = re.compile(r'\[(\d+) ([a-z]+)\]')
HOST_LINE = re.compile(r'\[host\]')


def read_picture():
    """[(rank, name, [patterns])] and the host patterns, from docs/architecture.md's layer picture."""
    with open(os.path.join(REPO_ROOT, 'docs', 'architecture.md')) as handle:
        text = handle.read()
    section = text.split('\n## The layers\n', 1)[1].split('\n## ', 1)[0]
    picture = section.split('```\n', 2)[1]
    layers, host, current = [], [], None
    for line in picture.splitlines():
        found = LAYER_LINE.search(line)
        if found:
            current = (int(found.group(1)), found.group(2), [])
            layers.append(current)
        elif HOST_LINE.search(line):
            current = (None, 'host', host)
        elif 'plugins/' not in line:
            current = None
        patterns = [t for t in line.split() if t.startswith('plugins/')]
        if patterns and current is None:
            raise AssertionError('docs/architecture.md: %r names files outside a layer line' % line)
        if current is not None:
            current[2].extend(patterns)
    return layers, host


def _specificity(pattern, path):
    """How specifically ``pattern`` matches ``path`` (higher wins), or None."""
    if pattern == path:
        return 3
    folder, _slash, leaf = pattern.rpartition('/')
    if leaf == '<id>.py':
        return 2 if os.path.dirname(path) == folder and path.endswith('.py') else None
    if pattern.endswith('/<package>/*.py'):
        base = pattern[:-len('<package>/*.py')]
        rest = path[len(base):] if path.startswith(base) else ''
        return 1 if rest.count('/') == 1 and rest.endswith('.py') else None
    if leaf == '*.py':
        return 0 if os.path.dirname(path) == folder and path.endswith('.py') else None
    if pattern.endswith('/'):
        return 0 if path.startswith(pattern) else None
    return None


def layer_of(path, layers):
    best = None
    for rank, name, patterns in layers:
        for pattern in patterns:
            score = _specificity(pattern, path)
            if score is not None and (best is None or score > best[0]):
                best = (score, rank, name, pattern)
    if best is None:
        raise AssertionError('%s is in no layer of docs/architecture.md\'s picture' % path)
    return best[1], best[2], best[3]


def python_files():
    found = {}
    for root, _dirs, files in os.walk(os.path.join(REPO_ROOT, 'plugins')):
        for name in files:
            if name.endswith('.py'):
                path = os.path.relpath(os.path.join(root, name), REPO_ROOT).replace(os.sep, '/')
                module = path[:-3].replace('/', '.')
                found[module[:-len('.__init__')] if module.endswith('.__init__') else module] = path
    return found


def import_graph(sources):
    """{importing path: {imported path: line}} for every import of the collection's own code in
    ``sources`` ({path: text}), at any depth."""
    modules = dict((path[:-3].replace('/', '.').replace('.__init__', ''), path) for path in sources)
    graph = {}
    for path, text in sources.items():
        arrows = graph.setdefault(path, {})
        for node in ast.walk(ast.parse(text, path)):
            names = []
            if isinstance(node, ast.ImportFrom) and (node.module or '').startswith(PACKAGE):
                base = node.module[len(PACKAGE):]
                names = [base + '.' + a.name if base + '.' + a.name in modules else base for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name[len(PACKAGE):] for a in node.names if a.name.startswith(PACKAGE)]
            for name in names:
                if name in modules and modules[name] != path:
                    arrows.setdefault(modules[name], node.lineno)
    return graph


def circles(graph):
    """The strongly connected components with more than one file (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(path):
    return os.path.dirname(path)


def violations(graph, layers, host):
    """Every arrow that breaks the picture: upward, across siblings that stay apart, or host to controller."""
    found = []
    for source, arrows in sorted(graph.items()):
        rank, name, pattern = layer_of(source, layers)
        on_host = any(_specificity(p, source) is not None for p in host)
        for target, line in sorted(arrows.items()):
            where = '%s:%d imports %s' % (source, line, target)
            target_rank, target_name, _target_pattern = layer_of(target, layers)
            if on_host and not any(_specificity(p, target) is not None for p in host):
                found.append('%s: the host side imports the controller' % where)
            elif target_rank > rank or (target_rank == rank and target_name != name):
                found.append('%s: layer %s (%d) may not import layer %s (%d)' % (where, name, rank, target_name, target_rank))
            elif target_name == name and pattern.endswith('<id>.py'):
                found.append('%s: %s are apart, none imports another' % (where, name))
            elif target_name == name and pattern.endswith('<package>/*.py') and _package(source) != _package(target):
                found.append('%s: a component imports only its own package' % where)
    return found


def _sources():
    sources = {}
    for path in python_files().values():
        with open(os.path.join(REPO_ROOT, path)) as handle:
            sources[path] = handle.read()
    return sources


LAYERS, HOST = read_picture()


def test_the_picture_declares_ordered_layers_and_every_file_is_in_one():
    ranks = [rank for rank, _name, _patterns in LAYERS]
    assert ranks == sorted(ranks) or ranks == sorted(ranks, reverse=True), ranks
    assert len(set(name for _rank, name, _patterns in LAYERS)) == len(LAYERS)
    assert HOST, 'the picture has no [host] line'
    for path in python_files().values():
        layer_of(path, LAYERS)


def test_no_import_circle_in_plugins():
    assert circles(import_graph(_sources())) == []


def test_no_layer_imports_a_layer_above_it():
    assert violations(import_graph(_sources()), LAYERS, HOST) == []


INJECTED = {
    'a verdict importing its detection': ('plugins/module_utils/verdicts/pi_ir_tx.py', 'def judge():\n'
                                          '    from ansible_collections.homelab.postmortem.plugins.module_utils.detections import pi_ir_tx\n'),
    'the base importing the registry': ('plugins/module_utils/finding.py',
                                        'from ansible_collections.homelab.postmortem.plugins.module_utils import registry\n'),
    'a component importing another': ('plugins/module_utils/ollama/common.py',
                                      'from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes\n'),
    'a module importing the controller': ('plugins/modules/audit_facts.py',
                                          'from ansible_collections.homelab.postmortem.plugins.plugin_utils import report\n'),
}


@pytest.mark.parametrize('case', sorted(INJECTED))
def test_an_injected_upward_import_is_found(case):
    path, added = INJECTED[case]
    sources = _sources()
    sources[path] += '\n\n' + added
    graph = import_graph(sources)
    assert [v for v in violations(graph, LAYERS, HOST) if v.startswith(path)], case


def test_an_injected_circle_is_found():
    sources = _sources()
    sources['plugins/module_utils/errors.py'] += ('\n\ndef late():\n'
                                                  '    from ansible_collections.homelab.postmortem.plugins.module_utils import finding\n')
    assert ['plugins/module_utils/errors.py', 'plugins/module_utils/finding.py'] in circles(import_graph(sources))
