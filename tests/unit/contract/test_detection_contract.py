"""The contract every registered detection keeps: adding one touches a known set of files.

For each detection: its module in detections/, its docs page with the standard
sections and a current generated block, its README row, its facts module, its
entry in audit_facts' documentation, a valid settings spec, declarations the
registry enforces, and a remediation in the one documented shape that points at
a role or module that exists.
"""
import ast
import importlib
import os
import re

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry, settings
from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DISRUPTIONS, REMEDIATION_KEYS

from ..helpers.paths import REPO_ROOT, load_script
from ..helpers.settings_spec import check_spec

DETECTIONS = registry.DETECTIONS
IDS = [d.ID for d in DETECTIONS]
SECTIONS = ('## What breaks', '## How we detect it', '## Evidence', '## The fix', '## Where it runs and settings',
            '## References')


def read(*parts):
    with open(os.path.join(REPO_ROOT, *parts)) as handle:
        return handle.read()


def module_doc(name):
    tree = ast.parse(read('plugins', 'modules', '%s.py' % name))
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == 'DOCUMENTATION':
            return yaml.safe_load(node.value.value)
    raise AssertionError('%s has no DOCUMENTATION' % name)


GEN = load_script('gen_detection_docs')


def test_every_file_in_detections_is_registered():
    folder = os.path.join(REPO_ROOT, 'plugins', 'module_utils', 'detections')
    files = sorted(f[:-3] for f in os.listdir(folder) if f.endswith('.py') and f != '__init__.py')
    assert files == sorted(IDS)


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_declarations(detection):
    assert isinstance(detection, Detection)
    module = importlib.import_module('ansible_collections.homelab.postmortem.plugins.module_utils.detections.%s' % detection.ID)
    assert module.DETECTION is detection
    # The Detection is handed to the question and the verdict: a module never looks itself up.
    assert 'sys.modules[__name__]' not in read('plugins', 'module_utils', 'detections', '%s.py' % detection.ID)
    assert re.match(r'^[a-z][a-z0-9_]+$', detection.ID)
    assert detection.ID.startswith(detection.GROUP + '_') and detection.GROUP in registry.GROUPS
    assert detection.TITLE and detection.REFERENCES
    assert set(detection.APPLIES) == {'image', 'binary', 'root'}
    assert isinstance(detection.APPLIES['image'], bool)
    assert isinstance(detection.PROBES, tuple)
    assert check_spec(detection.SETTINGS) == []
    has_verdict = os.path.exists(os.path.join(REPO_ROOT, 'plugins', 'module_utils', 'verdicts', '%s.py' % detection.ID))
    assert detection.has_verdict == has_verdict


def _verdict_source(detection_id):
    path = os.path.join(REPO_ROOT, 'plugins', 'module_utils', 'verdicts', '%s.py' % detection_id)
    return read(path) if os.path.exists(path) else ''


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_detection_reads_the_host_only_through_ctx(detection):
    source = read('plugins', 'module_utils', 'detections', '%s.py' % detection.ID) + _verdict_source(detection.ID)
    for forbidden in ('subprocess', 'geteuid', 'getuid', 'os.system', 'module.run_command'):
        assert forbidden not in source, '%s uses %s; go through ctx' % (detection.ID, forbidden)


def test_every_verdict_belongs_to_a_detection_and_loads_only_after_its_first_question():
    """verdicts/<id>.py is the judging code of detection <id>, imported only inside the detection's verdict
    loader and nowhere at module level: a module-level import would compile it on every host, every run
    (docs/architecture.md). The import is a static ``from ... import`` (Ansible's dependency finder ships
    what it names), never a name in a string, and the verdict never imports a detection."""
    folder = os.path.join(REPO_ROOT, 'plugins', 'module_utils', 'verdicts')
    verdicts = sorted(f[:-3] for f in os.listdir(folder) if f.endswith('.py') and f != '__init__.py')
    assert set(verdicts) <= set(IDS), 'verdicts without a detection: %s' % sorted(set(verdicts) - set(IDS))
    for root, _dirs, files in os.walk(os.path.join(REPO_ROOT, 'plugins')):
        for name in files:
            if not name.endswith('.py') or os.path.join('module_utils', 'verdicts') in root:
                continue
            tree = ast.parse(read(os.path.join(root, name)))
            for node in tree.body:
                if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith('module_utils.verdicts'):
                    raise AssertionError('%s imports a verdict at module level' % os.path.join(root, name))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, 'attr', getattr(node.func, 'id', '')) in (
                        'import_module', '__import__'):
                    raise AssertionError('%s imports a module by a name in a string' % os.path.join(root, name))
    for detection_id in verdicts:
        tree = ast.parse(read('plugins', 'module_utils', 'detections', '%s.py' % detection_id))
        loader = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == '_verdict'][0]
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and (n.module or '').endswith('module_utils.verdicts') for a in n.names]
        in_loader = [a.name for n in ast.walk(loader) if isinstance(n, ast.ImportFrom) for a in n.names]
        assert imported == in_loader == [detection_id], '%s: only _verdict() imports verdicts.%s' % (detection_id, detection_id)
        verdict = ast.parse(read('plugins', 'module_utils', 'verdicts', '%s.py' % detection_id))
        assert not [n for n in ast.walk(verdict) if isinstance(n, ast.ImportFrom) and '.detections' in (n.module or '')
                    ], 'verdicts/%s.py imports a detection: it is handed the detection instead' % detection_id


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_remediation_shape(detection):
    remediation = detection.REMEDIATION
    assert tuple(sorted(remediation)) == tuple(sorted(REMEDIATION_KEYS))
    assert remediation['disruption'] in DISRUPTIONS
    assert remediation['manual'] and all(isinstance(step, str) and step for step in remediation['manual'])
    assert isinstance(remediation['vars'], dict)
    if remediation['role']:
        role = remediation['role'].split('.')[-1]
        specs = yaml.safe_load(read('roles', role, 'meta', 'argument_specs.yml'))
        options = specs['argument_specs']['main']['options']
        unknown = set(remediation['vars']) - set(options)
        assert not unknown, 'role %s has no variables %s' % (role, unknown)
    else:
        assert not remediation['vars'], 'vars without a role'
    if remediation['module']:
        assert os.path.exists(os.path.join(REPO_ROOT, 'plugins', 'modules', '%s.py' % remediation['module'].split('.')[-1]))


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_docs_page(detection):
    text = read('docs', '%s.md' % detection.ID)
    assert text.startswith('# %s: ' % detection.ID)
    positions = [text.find('\n%s\n' % section) for section in SECTIONS]
    assert -1 not in positions, 'missing: %s' % [s for s, p in zip(SECTIONS, positions) if p == -1]
    assert positions == sorted(positions), 'sections out of order'
    assert GEN.updated(text, GEN.render(detection, settings.describe_type)) == text, \
        'docs/%s.md is stale: run .venv/bin/python scripts/gen_detection_docs.py' % detection.ID


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_readme_row(detection):
    assert '| [`%s`](docs/%s.md) |' % (detection.ID, detection.ID) in read('README.md')


@pytest.mark.parametrize('detection', DETECTIONS, ids=IDS)
def test_facts_module(detection):
    name = '%s_facts' % detection.ID
    source = read('plugins', 'modules', '%s.py' % name)
    assert "run_module('%s')" % detection.ID in source
    doc = module_doc(name)
    assert doc['module'] == name
    assert 'homelab.postmortem.detection' in doc['extends_documentation_fragment']
    text = yaml.safe_dump(doc)
    for key in detection.SETTINGS:
        assert 'C(%s)' % key in text, '%s does not document the setting %s' % (name, key)
    for probe in detection.PROBES:
        assert probe in text, '%s does not document the probe %s' % (name, probe)


def test_audit_facts_documents_every_check_and_group():
    checks = ' '.join(module_doc('audit_facts')['options']['checks']['description'])
    for detection in DETECTIONS:
        assert 'V(%s)' % detection.ID in checks
    for group in registry.groups():
        assert 'V(%s)' % group in checks


def test_every_disruptive_fix_has_a_switch_that_is_off_by_default():
    """remediate.yml never turns these on (plugin_utils/remediation.py derives them from the role specs'
    "Disruptive:" marker); a fix that restarts or reboots must have one, off by default, so that the
    disruption stays the user's choice."""
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import role_specs
    for detection in DETECTIONS:
        role = detection.REMEDIATION.get('role')
        if not role:
            continue
        switches = role_specs.switches(role_specs.load(role, os.path.join(REPO_ROOT, 'roles')))
        for name, option in switches:
            assert option.get('default') in (False, []), (role, name)
        if detection.REMEDIATION['disruption'] != 'none':
            assert switches, (detection.ID, role)
