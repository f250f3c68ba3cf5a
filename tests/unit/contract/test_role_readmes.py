"""Every role has a README generated from its declarations (scripts/gen_role_readmes.py), and the
declarations the README is made from are complete: an example that uses the role, disruptive
switches that are off by default, the same minimum ansible-core as the collection."""
import os

import pytest
import yaml

from ..helpers.paths import REPO_ROOT, load_script

ROLES = sorted(os.listdir(os.path.join(REPO_ROOT, 'roles')))


GEN = load_script('gen_role_readmes')


def _off(value):
    return value in (False, [], {}, '', None)


def test_every_role_is_documented_by_the_generator():
    # A role without meta/argument_specs.yml would get no README and no validation of its variables.
    assert GEN.roles() == ROLES


@pytest.mark.parametrize('role', ROLES)
def test_readme_is_current(role):
    path = os.path.join(REPO_ROOT, 'roles', role, 'README.md')
    assert os.path.isfile(path), 'roles/%s/README.md is missing: run .venv/bin/python scripts/gen_role_readmes.py' % role
    with open(path, encoding='utf-8') as handle:
        current = handle.read()
    assert current == GEN.expected()[path], \
        'roles/%s/README.md is stale: run .venv/bin/python scripts/gen_role_readmes.py' % role


@pytest.mark.parametrize('role', ROLES)
def test_example_plays_the_role_with_its_own_variables(role):
    spec = GEN.load_role(role)[0]
    assert spec.get('examples'), 'roles/%s/meta/argument_specs.yml: main has no examples' % role
    plays = yaml.safe_load(spec['examples'])
    assert isinstance(plays, list) and plays
    used = []
    for play in plays:
        for entry in play.get('roles', []):
            assert entry['role'] == 'homelab.postmortem.%s' % role
            unknown = set(entry.get('vars', {})) - set(spec['options'])
            assert not unknown, 'the example sets variables the role does not have: %s' % sorted(unknown)
            used.append(entry)
    assert used, 'the example never plays homelab.postmortem.%s' % role


@pytest.mark.parametrize('role', ROLES)
def test_disruptive_switches_are_off_by_default(role):
    spec = GEN.load_role(role)[0]
    for name, option in GEN.switches(spec):
        assert option['type'] in ('bool', 'list'), name
        assert _off(option.get('default')), '%s is disruptive and must be off by default' % name
        # The role's defaults/main.yml is what a play without the argument spec sees.
        with open(os.path.join(REPO_ROOT, 'roles', role, 'defaults', 'main.yml'), encoding='utf-8') as handle:
            assert _off(yaml.safe_load(handle).get(name)), '%s is on in roles/%s/defaults/main.yml' % (name, role)


@pytest.mark.parametrize('role', ROLES)
def test_a_role_whose_fix_disrupts_has_a_switch_for_it(role):
    spec = GEN.load_role(role)[0]
    kinds = set(d.REMEDIATION['disruption'] for d in GEN.fixed_by(role, GEN._detections()))
    if kinds - {'none'}:
        assert GEN.switches(spec), ('the fixes homelab.postmortem.%s makes disrupt (%s), but no option is marked '
                                    '"Disruptive:" in its argument spec' % (role, ', '.join(sorted(kinds))))


@pytest.mark.parametrize('role', ROLES)
def test_role_minimum_ansible_matches_the_collection(role):
    galaxy_info = GEN.load_role(role)[1]
    with open(os.path.join(REPO_ROOT, 'meta', 'runtime.yml'), encoding='utf-8') as handle:
        requires = yaml.safe_load(handle)['requires_ansible']
    minimum = requires.split(',')[0].lstrip('>=')
    assert minimum.startswith(str(galaxy_info['min_ansible_version']) + '.'), (requires, galaxy_info['min_ansible_version'])


def test_markup_becomes_markdown():
    assert GEN.markdown('only with I(pi_ir_tx_reboot); sets C(x=1), see M(homelab.postmortem.pi_ir_tx_fix)') == \
        'only with `pi_ir_tx_reboot`; sets `x=1`, see `homelab.postmortem.pi_ir_tx_fix`'
    assert GEN.markdown('L(the docs,https://example.invalid/d) and U(https://example.invalid)') == \
        '[the docs](https://example.invalid/d) and <https://example.invalid>'
