"""Every fix module's RETURN documents the keys the fix protocol's result always carries, as they are for
that module.

The modules are the ones that import module_utils/fix_protocol.py; the keys are what
``fix_protocol.blank_result()`` returns (the result every fix module starts from), less the ones Ansible
documents for every module itself. A key added to the protocol fails here until each fix module says what
it holds there. ansible-core composes doc fragments into DOCUMENTATION only, never into RETURN
(ansible/utils/plugin_docs.py add_fragments), so each module describes the shared keys in its own words:
which file or object one RV(diff) entry is, which files RV(backups) holds, what RV(verified) reads back and
what RV(rolled_back) puts back. The same description of a shared key in two modules fails here too: that
is the generic text this test replaced.
"""
import ast
import os

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol

from ..helpers.paths import REPO_ROOT

MODULES_DIR = os.path.join(REPO_ROOT, 'plugins', 'modules')
# Keys of the protocol's result that Ansible documents for every module (its common return values).
ANSIBLE_OWN = frozenset(['changed'])
# The RETURN type of a key, from the Python type of its value in the blank result.
RETURN_TYPES = {list: 'list', bool: 'bool', str: 'str', dict: 'dict', int: 'int'}


def _tree(module):
    with open(os.path.join(MODULES_DIR, module + '.py'), encoding='utf-8') as handle:
        return ast.parse(handle.read())


def uses_fix_protocol(tree):
    """Whether a module imports module_utils/fix_protocol.py (``from ...module_utils import fix_protocol``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or '').endswith('.fix_protocol') or any(a.name == 'fix_protocol' for a in node.names):
                return True
    return False


def returns_of(tree):
    """The parsed RETURN of a module."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], 'id', None) == 'RETURN':
            return yaml.safe_load(node.value.value)
    raise AssertionError('no RETURN')


def protocol_keys(blank=None):
    """{key: its RETURN type} of every key the protocol's result always carries that a module documents."""
    blank = fix_protocol.blank_result() if blank is None else blank
    return dict((key, RETURN_TYPES[type(value)]) for key, value in blank.items() if key not in ANSIBLE_OWN)


def undocumented(returns, keys):
    """What a module's RETURN lacks or gets wrong for the protocol ``keys`` ({key: type})."""
    problems = []
    for key, kind in sorted(keys.items()):
        doc = (returns or {}).get(key)
        if not doc:
            problems.append('%s is not documented' % key)
            continue
        if not doc.get('description'):
            problems.append('%s has no description' % key)
        if doc.get('returned') != 'always':
            problems.append('%s: returned is %r; the protocol always returns it' % (key, doc.get('returned')))
        if doc.get('type') != kind:
            problems.append('%s: type is %r; the protocol returns a %s' % (key, doc.get('type'), kind))
    return problems


def _description(doc):
    text = doc.get('description') if isinstance(doc, dict) else None
    return ' '.join(text if isinstance(text, list) else [text or ''])


def shared_descriptions(returns_by_module, keys):
    """[(key, modules)] for each protocol key described word for word the same in two or more modules."""
    shared = []
    for key in sorted(keys):
        by_text = {}
        for module, returns in sorted(returns_by_module.items()):
            text = ' '.join(_description((returns or {}).get(key)).split())
            if text:
                by_text.setdefault(text, []).append(module)
        shared += [(key, modules) for modules in by_text.values() if len(modules) > 1]
    return shared


FIX_MODULES = sorted(name[:-3] for name in os.listdir(MODULES_DIR)
                     if name.endswith('.py') and uses_fix_protocol(_tree(name[:-3])))


def test_the_fix_modules_are_found():
    # The set is whatever imports fix_protocol; these are the ones there are today.
    assert set(['docker_overlay_recover_plan', 'llama_server_fix', 'ollama_gemma4_renderer_fix', 'pi_ir_tx_fix',
                'podman_quadlet', 'podman_safe_export', 'vllm_lora_fold']) <= set(FIX_MODULES)
    assert not uses_fix_protocol(_tree('audit_facts'))


def test_the_keys_come_from_the_protocol():
    # What a fix module's result is known to carry today: a key the protocol drops is caught here, one it adds
    # by test_return_documents_the_protocol_keys.
    keys = protocol_keys()
    assert {'diff', 'backups', 'verified', 'rolled_back', 'msg'} <= set(keys)
    assert keys['diff'] == 'list' and keys['verified'] == 'bool' and keys['msg'] == 'str'


@pytest.mark.parametrize('module', FIX_MODULES)
def test_return_documents_the_protocol_keys(module):
    problems = undocumented(returns_of(_tree(module)), protocol_keys())
    assert not problems, '%s RETURN: %s' % (module, '; '.join(problems))


def test_each_module_describes_the_keys_its_own_way():
    returns = dict((module, returns_of(_tree(module))) for module in FIX_MODULES)
    shared = shared_descriptions(returns, protocol_keys())
    assert not shared, '\n'.join('%s is described the same in %s; say what it holds in each' % (key, ', '.join(mods))
                                 for key, mods in shared)


def test_a_missing_or_new_key_is_found():
    returns = returns_of(_tree('llama_server_fix'))
    assert not undocumented(returns, protocol_keys())
    for key in protocol_keys():
        without = dict((k, v) for k, v in returns.items() if k != key)
        assert undocumented(without, protocol_keys()) == ['%s is not documented' % key]
    # A key the protocol starts to return fails every module until it is documented.
    grown = dict(fix_protocol.blank_result(), problems=[])
    assert undocumented(returns, protocol_keys(grown)) == ['problems is not documented']
    wrong = dict(returns, verified=dict(returns['verified'], type='str', returned='on success'))
    assert len(undocumented(wrong, protocol_keys())) == 2


def test_a_shared_description_is_found():
    generic = {'description': ['Backup copies made before anything was changed.'], 'returned': 'always', 'type': 'list'}
    found = shared_descriptions({'a_fix': {'backups': generic}, 'b_fix': {'backups': dict(generic)},
                                 'c_fix': {'backups': dict(generic, description='Another text.')}}, {'backups': 'list'})
    assert found == [('backups', ['a_fix', 'b_fix'])]
