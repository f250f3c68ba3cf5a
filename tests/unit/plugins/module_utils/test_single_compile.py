"""single_compile: the collection's modules imported from an AnsiballZ-like zip, each compiled once.

The premise is Python's own behaviour (Lib/zipimport.py: zipimporter.get_filename calls
_get_module_code, which compiles the source; exec_module compiles it again): the control import
without the finder must show two compiles per module, or the finder has no reason to exist.
Everything runs in a fresh interpreter, so this test process's own imports are not touched.
"""
import json
import os
import subprocess
import sys
import zipfile

from ...helpers.paths import REPO_ROOT

PACKAGE = 'ansible_collections/homelab/postmortem/plugins/module_utils'
SOURCE = os.path.join(REPO_ROOT, 'plugins', 'module_utils', 'single_compile.py')

SCRIPT = r'''
import builtins, json, sys, traceback, zipimport
compiled = []
real_compile = builtins.compile
def counting_compile(source, filename, *args, **kwargs):
    compiled.append(str(filename).rsplit('/', 1)[-1])
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
sys.path.insert(0, %(zip)r)
import ansible_collections.homelab.postmortem.plugins.module_utils.single_compile as single_compile
loader_is_zip = isinstance(single_compile.__loader__, zipimport.zipimporter)
installed = single_compile.install(single_compile.__loader__) if %(install)r else False
again = single_compile.install(single_compile.__loader__) if %(install)r else False
del compiled[:]
from ansible_collections.homelab.postmortem.plugins.module_utils.pkg import leaf
from ansible_collections.homelab.postmortem.plugins.module_utils import pkg
try:
    leaf.fail()
except ValueError:
    shown = traceback.format_exc()
print(json.dumps({
    'loader_is_zip': loader_is_zip, 'installed': installed, 'again': again,
    'finders': sum(1 for f in sys.meta_path if type(f).__name__ == 'SingleCompileFinder'),
    'compiled': sorted(c for c in compiled if c.endswith('.py')),
    'leaf_loader': type(leaf.__loader__).__name__, 'leaf_file': leaf.__file__, 'pkg_path': list(pkg.__path__), 'answer': leaf.ANSWER, 'sibling': leaf.SIBLING,
    'shown_line': 'raise ValueError' in shown, 'other_loader': __import__('colorsys').__spec__.loader.__class__.__name__,
}))
'''


def _payload(tmp_path):
    archive = str(tmp_path / 'payload.zip')
    with zipfile.ZipFile(archive, 'w') as payload:
        parts = PACKAGE.split('/')
        for depth in range(1, len(parts) + 1):
            payload.writestr('/'.join(parts[:depth]) + '/__init__.py', '')
        with open(SOURCE) as handle:
            payload.writestr(PACKAGE + '/single_compile.py', handle.read())
        payload.writestr(PACKAGE + '/pkg/__init__.py', 'PACKAGE_NAME = "pkg"\n')
        payload.writestr(PACKAGE + '/pkg/sibling.py', 'VALUE = 41\n')
        payload.writestr(PACKAGE + '/pkg/leaf.py', '# -*- coding: utf-8 -*-\n"""caf\u00e9"""\n'
                         'from . import sibling\nSIBLING = sibling.VALUE\nANSWER = SIBLING + 1\n\n\n'
                         'def fail():\n    raise ValueError("shown with its source line")\n')
    return archive


def _run(archive, install):
    out = subprocess.run([sys.executable, '-c', SCRIPT % {'zip': archive, 'install': install}], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return json.loads(out)


def test_zipimport_compiles_each_module_twice_without_the_finder(tmp_path):
    control = _run(_payload(tmp_path), install=False)
    assert control['loader_is_zip'] and control['finders'] == 0
    assert control['compiled'] == ['__init__.py', '__init__.py', 'leaf.py', 'leaf.py', 'sibling.py', 'sibling.py']


def test_the_finder_compiles_each_module_once_and_the_modules_behave_the_same(tmp_path):
    archive = _payload(tmp_path)
    result = _run(archive, install=True)
    control = _run(archive, install=False)
    assert result['installed'] is True and result['again'] is True and result['finders'] == 1
    assert result['compiled'] == ['__init__.py', 'leaf.py', 'sibling.py']
    assert result['leaf_loader'] == '_SourceLoader' and control['leaf_loader'] == 'zipimporter'
    for key in ('leaf_file', 'pkg_path', 'answer', 'sibling', 'shown_line'):
        assert result[key] == control[key], key
    assert result['leaf_file'] == archive + '/' + PACKAGE + '/pkg/leaf.py'
    assert result['shown_line'] is True  # tracebacks still show the source line (get_source)
    assert result['other_loader'] != '_SourceLoader'  # only the collection's own names


def test_nothing_is_installed_when_the_collection_is_not_in_a_zip():
    from ansible_collections.homelab.postmortem.plugins.module_utils import single_compile
    before = list(sys.meta_path)
    assert single_compile.install(single_compile.__loader__) is False
    assert single_compile.install(None) is False
    assert sys.meta_path == before
