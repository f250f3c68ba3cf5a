"""Typed settings and group selection: mistakes fail once, before any detection runs."""
import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.podman_export_idmap import DETECTION as podman_export_idmap

from ...helpers.settings_spec import check_spec


def test_a_mistyped_setting_names_detection_key_type_and_known_keys():
    with pytest.raises(registry.SelectionError) as caught:
        registry.validate_settings({'podman_export_idmap': {'probe_max_containers': 'five'}})
    message = str(caught.value)
    assert message.startswith("settings.podman_export_idmap.probe_max_containers: expected int (0 to 1000): 'five' "
                              "is not a whole number; known settings of podman_export_idmap: ")
    for key in podman_export_idmap.SETTINGS:
        assert key in message


@pytest.mark.parametrize('check,values,expected', [
    ('podman_export_idmap', {'probe_max_containers': '7'}, {'probe_max_containers': 7}),
    ('podman_export_idmap', {'probe_timeout': 2.0}, {'probe_timeout': 2}),
    # A string is one entry, not a list of its characters.
    ('podman_export_idmap', {'users': 'nobody'}, {'users': ['nobody']}),
    ('llama_sleep_race', {'preset_paths': '/presets/router.ini'}, {'preset_paths': ['/presets/router.ini']}),
    ('pi_ir_tx', {'fixed_in': 6.19}, {'fixed_in': '6.19'}),
    ('pi_ir_tx', {'fixed_in': 'v6.18.60'}, {'fixed_in': '6.18.60'}),
    ('pi_ir_tx', {'fixed_in': None}, {'fixed_in': None}),
    ('pi_ir_tx', None, {}),
])
def test_settings_are_converted_to_their_types(check, values, expected):
    assert registry.validate_settings({check: values}) == {check: expected}


@pytest.mark.parametrize('check,values,fragment', [
    ('podman_export_idmap', {'probe_max_containers': True}, 'got a boolean'),
    ('podman_export_idmap', {'probe_max_containers': -1}, 'below the minimum 0'),
    ('podman_export_idmap', {'probe_timeout': None}, 'null is not allowed'),
    ('podman_export_idmap', {'probe_timeout': '٣'}, 'is not a whole number'),
    ('podman_export_idmap', {'users': {'a': 1}}, 'got a dict'),
    ('pi_ir_tx', {'fixed_in': '9' * 5000}, 'longer than'),
    ('pi_ir_tx', {'fixed_in': '６.18'}, 'is not a version'),
    ('pi_ir_tx', {'affected_from': 'six'}, 'is not a version'),
    ('pi_ir_tx', ['fixed_in'], 'settings.pi_ir_tx must be a dict'),
    ('pi_ir_tx', {'fixed': '6.19'}, 'unknown setting(s) for pi_ir_tx: fixed; known settings of pi_ir_tx: affected_from'),
    ('nope', {}, "settings for unknown check 'nope'"),
])
def test_bad_settings_fail_with_the_reason(check, values, fragment):
    with pytest.raises(registry.SelectionError) as caught:
        registry.validate_settings({check: values})
    assert fragment in str(caught.value)


def test_every_detection_spec_is_valid():
    for detection in registry.DETECTIONS:
        assert check_spec(detection.SETTINGS) == [], detection.ID


def test_defaults_come_from_the_spec():
    ctx = AuditContext(settings=registry.validate_settings({'podman_export_idmap': {'probe_timeout': 5}}))
    merged = ctx.settings_for(podman_export_idmap)
    assert merged['probe_timeout'] == 5
    assert merged['probe_max_containers'] == 5
    assert merged['users'] == []


def ids(detections):
    return [d.ID for d in detections]


def test_groups_select_their_detections_in_report_order():
    """Selection is set logic over the groups the detections declare (GROUP), kept in report order; stated
    over the registry so that a new detection needs no edit here."""
    def of(*groups):
        return [d.ID for d in registry.DETECTIONS if d.GROUP in groups]
    assert ids(registry.select(['podman'])) == of('podman') and len(of('podman')) >= 2
    assert ids(registry.select(['all', '!llama'])) == [d.ID for d in registry.DETECTIONS if d.GROUP != 'llama']
    assert ids(registry.select(['vllm'])) == of('vllm')
    assert ids(registry.select(['docker'])) == of('docker')
    assert ids(registry.select(['llama', '!llama_sleep_race'])) == [i for i in of('llama') if i != 'llama_sleep_race']
    others = ['!%s' % g for g in registry.GROUPS if g != 'llama' and of(g)]
    assert ids(registry.select(others)) == of('llama')
    assert ids(registry.select(['all'])) == [d.ID for d in registry.DETECTIONS]


@pytest.mark.parametrize('requested,fragment', [
    (['podmn'], "unknown check 'podmn'; known checks: pi_ir_tx"),
    ([None], 'check names must be non-empty strings'),
    ([''], 'check names must be non-empty strings'),
])
def test_bad_selections_are_refused(requested, fragment):
    with pytest.raises(registry.SelectionError) as caught:
        registry.select(requested)
    assert fragment in str(caught.value)


def test_every_group_is_a_known_group_and_no_group_shadows_an_id():
    for detection in registry.DETECTIONS:
        assert detection.GROUP in registry.GROUPS, detection.ID
    assert not set(registry.GROUPS) & set(registry.BY_ID)


class _NeedsRoot:
    ID = 'needs_root'
    GROUP = 'podman'
    TITLE = 'Needs root'
    REFERENCES = ['x']
    REMEDIATION = {}
    PROBES = ()
    SETTINGS = {}
    APPLIES = {'image': False, 'binary': 'sometool', 'root': 'its containers are root\'s'}

    @staticmethod
    def detect(ctx):
        return {'status': 'ok'}


@pytest.mark.parametrize('ctx_args,status,summary', [
    (dict(root='/mnt/image', live=False), 'not_applicable', 'Image audit (root=/mnt/image): needs_root reads only a running system.'),
    (dict(which=lambda name: None, euid=0), 'not_applicable', 'sometool is not installed.'),
    (dict(which=lambda name: '/usr/bin/' + name, euid=1000), 'unknown',
     "Needs root (its containers are root's): run the audit with become: true."),
    (dict(which=lambda name: '/usr/bin/' + name, euid=0), 'ok', None),
])
def test_applicability_is_enforced_before_detect(ctx_args, status, summary):
    finding = registry.run_one(AuditContext(**ctx_args), _NeedsRoot)
    assert finding['status'] == status
    if summary:
        assert finding['summary'] == summary
