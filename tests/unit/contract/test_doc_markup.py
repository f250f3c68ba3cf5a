"""The documentation speaks semantic markup (ansible-core 2.15+): an option is O(), never C() or I(), in
every module (its DOCUMENTATION and RETURN), doc fragment and role spec; and every module takes its
attributes from the attributes doc fragment instead of restating them.

What C() and I() may still hold is everything that is not an option of the plugin being documented: code,
paths, commands, keys of a file or of a return value. The few option names that are also something else
are listed in SAME_NAME_ELSEWHERE with what they are there.
"""
import ast
import os
import re

import pytest
import yaml

from ..helpers.paths import REPO_ROOT

MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(REPO_ROOT, 'plugins', 'modules')) if f.endswith('.py'))
LOOKUPS = sorted(f[:-3] for f in os.listdir(os.path.join(REPO_ROOT, 'plugins', 'lookup')) if f.endswith('.py'))
FRAGMENTS = sorted(f[:-3] for f in os.listdir(os.path.join(REPO_ROOT, 'plugins', 'doc_fragments')) if f.endswith('.py'))
ROLES = sorted(r for r in os.listdir(os.path.join(REPO_ROOT, 'roles'))
               if os.path.isfile(os.path.join(REPO_ROOT, 'roles', r, 'meta', 'argument_specs.yml')))
COLLECTION = 'homelab.postmortem.'
# How far each module supports the attributes: one of these variants of plugins/doc_fragments/attributes.py.
ATTRIBUTE_VARIANTS = ('facts', 'action', 'diff', 'no_diff', 'plan')
# (plugin, name): what C(name) means there, where it is not the option.
SAME_NAME_ELSEWHERE = {
    ('vllm_lora_fold', 'peft_version'): "adapter_config.json's key of the same name",
}
CLASSIC = re.compile(r'\b([CI])\(([^()]*)\)')


def _assigned_strings(path):
    """{name: value} of the module-level string assignments of a Python file (DOCUMENTATION, RETURN, ...)."""
    with open(path, encoding='utf-8') as handle:
        tree = ast.parse(handle.read())
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def _fragment(slug):
    """The parsed fragment a module names in extends_documentation_fragment (homelab.postmortem.<name>[.<var>])."""
    assert slug.startswith(COLLECTION), 'only this collection\'s fragments are known here: %s' % slug
    name, _dot, variable = slug[len(COLLECTION):].partition('.')
    strings = _assigned_strings(os.path.join(REPO_ROOT, 'plugins', 'doc_fragments', '%s.py' % name))
    return yaml.safe_load(strings[(variable or 'documentation').upper()])


def option_names(options, prefix=''):
    """Every option and suboption, by its dotted path (O(a.b) names a suboption)."""
    names = set()
    for name, spec in (options or {}).items():
        names.add(prefix + name)
        names |= option_names((spec or {}).get('suboptions') or (spec or {}).get('options'), prefix + name + '.')
    return names


def strings_in(data):
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from strings_in(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings_in(value)


def options_in_classic_markup(plugin, texts, options):
    """C(option), C(option=value) and I(option) in ``texts`` where ``option`` is one of ``options``."""
    found = []
    for text in texts:
        for kind, body in CLASSIC.findall(text):
            name = body.split('=', 1)[0].strip()
            if name in options and (plugin, name) not in SAME_NAME_ELSEWHERE:
                found.append('%s(%s)' % (kind, body))
    return found


def module_docs(name, kind='modules'):
    strings = _assigned_strings(os.path.join(REPO_ROOT, 'plugins', kind, '%s.py' % name))
    return yaml.safe_load(strings['DOCUMENTATION']), yaml.safe_load(strings.get('RETURN') or '{}') or {}


@pytest.mark.parametrize('kind, name', [('modules', m) for m in MODULES] + [('lookup', m) for m in LOOKUPS])
def test_plugin_names_its_options_with_o(kind, name):
    doc, returns = module_docs(name, kind)
    options = option_names(doc.get('options'))
    for slug in doc.get('extends_documentation_fragment') or []:
        options |= option_names(_fragment(slug).get('options'))
    found = options_in_classic_markup(name, list(strings_in(doc)) + list(strings_in(returns)), options)
    assert not found, '%s: an option is O(name), O(name=value): %s' % (name, ', '.join(sorted(set(found))))


@pytest.mark.parametrize('name', MODULES)
def test_module_composes_its_attributes_from_the_fragment(name):
    doc, _returns = module_docs(name)
    assert 'attributes' not in doc, '%s restates an attributes block: extend homelab.postmortem.attributes.<variant>' % name
    fragments = doc.get('extends_documentation_fragment') or []
    assert COLLECTION + 'attributes' in fragments, name
    variants = [f for f in fragments if f.startswith(COLLECTION + 'attributes.')]
    assert variants in ([COLLECTION + 'attributes.' + v] for v in ATTRIBUTE_VARIANTS), \
        '%s: exactly one of attributes.%s, not %s' % (name, '/'.join(ATTRIBUTE_VARIANTS), variants)


def test_every_attribute_variant_is_a_fragment_with_support_for_each_attribute():
    described = _fragment(COLLECTION + 'attributes')['attributes']
    for variant in ATTRIBUTE_VARIANTS:
        attributes = _fragment(COLLECTION + 'attributes.' + variant)['attributes']
        for key, spec in attributes.items():
            assert 'support' in spec, (variant, key)
            assert key in described or 'description' in spec, '%s: attribute %s has no description' % (variant, key)
        assert {'check_mode', 'diff_mode'} <= set(attributes), variant


@pytest.mark.parametrize('name', FRAGMENTS)
def test_fragment_names_its_options_with_o(name):
    strings = _assigned_strings(os.path.join(REPO_ROOT, 'plugins', 'doc_fragments', '%s.py' % name))
    for variable, text in strings.items():
        if variable.isupper():
            doc = yaml.safe_load(text)
            found = options_in_classic_markup(name, strings_in(doc), option_names(doc.get('options')))
            assert not found, '%s.%s: an option is O(name): %s' % (name, variable, ', '.join(found))


@pytest.mark.parametrize('role', ROLES)
def test_role_spec_names_its_options_with_o(role):
    with open(os.path.join(REPO_ROOT, 'roles', role, 'meta', 'argument_specs.yml'), encoding='utf-8') as handle:
        specs = yaml.safe_load(handle)['argument_specs']
    for entry_point, spec in specs.items():
        found = options_in_classic_markup(role, strings_in(spec), option_names(spec.get('options')))
        assert not found, '%s (%s): an option is O(name): %s' % (role, entry_point, ', '.join(found))


@pytest.mark.parametrize('sample, options, expected', [
    (['Use C(dest) or I(dest) or C(dest=/x).'], {'dest'}, ['C(dest)', 'I(dest)', 'C(dest=/x)']),
    (['O(dest), V(dest), C(/etc/dest), C(src)'], {'dest'}, []),
    (['C(a.b) names a suboption'], option_names({'a': {'suboptions': {'b': {}}}}), ['C(a.b)']),
])
def test_the_check_finds_options_in_classic_markup(sample, options, expected):
    assert options_in_classic_markup('any', sample, options) == expected


# O(), M() and P() naming another collection's plugin become cross-references that only resolve where
# that collection's pages are built too: make docs builds this collection alone, so Sphinx -W fails on
# them (ansible.builtin.reboot's reboot_command did). Another collection's plugin is named in C(); so is
# an ANSIBLE_* variable, which antsibull-docs links to ansible-core's configuration pages as E().
FOREIGN_REFERENCE = re.compile(r'\b[OMP]\((?!%s)[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+[#)]|\bE\(ANSIBLE_' % re.escape(COLLECTION))


def _documentation_files():
    for directory in ('modules', 'lookup', 'doc_fragments'):
        for name in sorted(os.listdir(os.path.join(REPO_ROOT, 'plugins', directory))):
            if name.endswith('.py'):
                yield os.path.join('plugins', directory, name)
    for role in ROLES:
        yield os.path.join('roles', role, 'meta', 'argument_specs.yml')


@pytest.mark.parametrize('path', list(_documentation_files()))
def test_no_reference_to_another_collections_plugin(path):
    with open(os.path.join(REPO_ROOT, path), encoding='utf-8') as handle:
        found = FOREIGN_REFERENCE.findall(handle.read())
    assert not found, '%s: %s (name another collection\'s plugin in C())' % (path, found)


@pytest.mark.parametrize('sample, found', [
    ('see O(ansible.builtin.reboot#module:reboot_command)', True),
    ('like M(ansible.builtin.setup)', True),
    ('the P(community.general.foo#role) role', True),
    ('see O(homelab.postmortem.audit_facts#module:checks)', False),
    ('M(homelab.postmortem.audit_facts)', False),
    ('C(ansible.builtin.reboot)', False),
    ('E(ANSIBLE_COLLECTIONS_PATH)', True),
    ('E(OLLAMA_GO_TEMPLATE)', False),
])
def test_the_foreign_reference_check(sample, found):
    assert bool(FOREIGN_REFERENCE.search(sample)) == found


# This collection's own modules and lookups, named in C() where M() / P() would link them.
OWN_PLUGINS = set(COLLECTION + name for name in MODULES + LOOKUPS)


def own_plugins_in_code_markup(text):
    return sorted(set('C(%s)' % body for _kind, body in CLASSIC.findall(text) if body in OWN_PLUGINS))


@pytest.mark.parametrize('path', list(_documentation_files()))
def test_this_collections_plugins_are_named_with_m_or_p(path):
    with open(os.path.join(REPO_ROOT, path), encoding='utf-8') as handle:
        found = own_plugins_in_code_markup(handle.read())
    assert not found, '%s: %s (a module of this collection is M(...), a lookup P(...#lookup))' % (path, found)


def test_the_own_plugin_check():
    assert own_plugins_in_code_markup('see C(homelab.postmortem.audit_report) and C(homelab.postmortem.audit)') == [
        'C(homelab.postmortem.audit_report)']   # the second is a playbook
    assert own_plugins_in_code_markup('M(homelab.postmortem.audit_report), C(ansible.builtin.reboot)') == []
