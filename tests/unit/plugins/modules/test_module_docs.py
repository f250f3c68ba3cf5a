"""Every module's DOCUMENTATION, EXAMPLES and RETURN is YAML (sanity checks more; this fails fast)."""
import ast
import glob
import os

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
