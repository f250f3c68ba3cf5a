import os

import pytest
import yaml

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import COLLECTION_VERSION
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

from ...helpers.paths import REPO_ROOT

ALL = [d.ID for d in registry.DETECTIONS]


def ids(detections):
    return [d.ID for d in detections]


def test_every_detection_has_the_metadata_the_report_needs():
    for detection in registry.DETECTIONS:
        assert detection.ID and detection.TITLE
        assert detection.REFERENCES, detection.ID
        assert detection.REMEDIATION.get('manual') or detection.REMEDIATION.get('role'), detection.ID
        assert isinstance(detection.PROBES, tuple)
        assert isinstance(detection.SETTINGS, dict)
        assert callable(detection.detect)


@pytest.mark.parametrize('requested,expected', [
    (None, ALL),
    (['all'], ALL),
    (['llama_sleep_race'], ['llama_sleep_race']),
    (['!pi_ir_tx'], [i for i in ALL if i != 'pi_ir_tx']),
    (['all', '!llama_sleep_race'], [i for i in ALL if i != 'llama_sleep_race']),
    (['!all'], []),
    (['llama_sleep_race', 'pi_ir_tx'], ['pi_ir_tx', 'llama_sleep_race']),  # report order, not request order
])
def test_select(requested, expected):
    assert ids(registry.select(requested)) == expected


def test_select_rejects_unknown_ids_with_the_known_ones():
    with pytest.raises(registry.SelectionError, match='known checks: pi_ir_tx'):
        registry.select(['pi_ir_rx'])


def test_unknown_probe_and_settings_are_refused():
    with pytest.raises(registry.SelectionError, match='unknown probe'):
        registry.validate_probes(['nope'])
    with pytest.raises(registry.SelectionError, match='unknown setting'):
        registry.validate_settings({'pi_ir_tx': {'fixed': '6.19'}})
    with pytest.raises(registry.SelectionError, match='unknown check'):
        registry.validate_settings({'nope': {}})
    registry.validate_settings({'pi_ir_tx': {'fixed_in': '6.19'}})


class Exploding:
    ID = 'exploding'
    GROUP = 'pi'
    TITLE = 'Explodes'
    REFERENCES = []
    REMEDIATION = {'manual': []}
    PROBES = ()
    SETTINGS = {}
    APPLIES = {'image': True, 'binary': None, 'root': None}

    def __init__(self, exc):
        self.exc = exc

    def detect(self, ctx):
        raise self.exc


@pytest.mark.parametrize('exc,text', [
    (DetectionError('include loop in config.txt: a -> b -> a'), 'include loop in config.txt: a -> b -> a'),
    (KeyError('boom'), "bug in homelab.postmortem (detection exploding): KeyError: 'boom'; please report it"),
])
def test_a_failing_detection_becomes_an_error_finding(exc, text):
    result = registry.run_one(AuditContext(root='/nonexistent', live=False), Exploding(exc))
    assert result['status'] == 'error'
    assert result['summary'] == text


def test_reported_collection_version_matches_galaxy_yml():
    galaxy = os.path.join(REPO_ROOT, 'galaxy.yml')
    with open(galaxy) as handle:
        assert yaml.safe_load(handle)['version'] == COLLECTION_VERSION


def test_the_audit_starts_without_loading_what_only_probes_and_present_services_need():
    """Every module the audit imports is compiled from the AnsiballZ payload on every host, every
    run (docs/performance.md): the HTTP client, http.client and the probe-only helpers are imported
    when a probe runs or a service answers, not at start-up. A fresh interpreter, as on a host."""
    import subprocess
    import sys
    # The collections path this test imported the collection from (.../ansible_collections/homelab/...).
    collections_path = registry.__file__
    for _level in range(6):
        collections_path = os.path.dirname(collections_path)
    code = ('import sys; sys.path.insert(0, %r)\n'
            'from ansible_collections.homelab.postmortem.plugins.module_utils import facts_module\n'
            'print("\\n".join(sorted(sys.modules)))' % collections_path)
    loaded = set(subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.split())
    prefix = 'ansible_collections.homelab.postmortem.plugins.module_utils.'
    assert prefix + 'registry' in loaded
    late = ['ansible.module_utils.urls', 'http.client', 'ssl', prefix + 'deadline_http', prefix + 'llama.lora_probe',
            prefix + 'llama.probes', prefix + 'rpi.ir_trace', prefix + 'podman.export', prefix + 'audit_interface']
    assert [name for name in late if name in loaded] == []


def test_the_probe_marker_default_is_the_probes_own():
    from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_lora_cache
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe
    assert llama_lora_cache.PROBE_MARKERS == lora_probe.DEFAULT_MARKERS
