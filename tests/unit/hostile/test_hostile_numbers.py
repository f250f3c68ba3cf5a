"""Numbers bounded where they are validated: settings refuse what would overflow later (a timeout
of 10**10 s breaks select() and socket timeouts: "timestamp out of range for platform time_t",
measured here on Python 3.11), and a version that does not parse is unknown, never a version
outside an affected range.
"""
import select

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, registry, settings

from ..helpers.settings_spec import check_spec


def test_a_timeout_of_ten_billion_seconds_is_what_breaks_select():
    """The premise, measured: why numbers must be bounded before they reach a timeout."""
    with pytest.raises(OverflowError):
        select.select([], [], [], 10 ** 10)


UNBOUNDED = {'type': 'int', 'default': 1, 'min': 1, 'description': 'a count without a max'}


@pytest.mark.parametrize('entry,value,fragment', [
    ({'type': 'int', 'default': 1, 'min': 1, 'max': 300, 'description': 'd'}, 10 ** 10, 'above the maximum 300'),
    (UNBOUNDED, 10 ** 400, 'a whole number of 1329 bits is too large (at most 2**53)'),
    (UNBOUNDED, -(10 ** 20), 'too large (at most 2**53)'),
    (UNBOUNDED, 1e300, 'too large (at most 2**53)'),       # a YAML float that is whole
    ({'type': 'float', 'default': 1.0, 'min': 0, 'max': 10, 'description': 'd'}, '1e400', 'not a finite number'),
    ({'type': 'float', 'default': 1.0, 'description': 'd'}, float('inf'), 'not a finite number'),
    ({'type': 'float', 'default': 1.0, 'description': 'd'}, float('nan'), 'not a finite number'),
    ({'type': 'float', 'default': 1.0, 'description': 'd'}, 10 ** 400, 'a number of 1329 bits is too large'),
    ({'type': 'float', 'default': 1.0, 'description': 'd'}, 1e300, 'too large (at most 2**53)'),
    ({'type': 'int', 'default': 1, 'min': 1, 'max': 9, 'description': 'd'}, '9' * 5000, 'is not a whole number'),
])
def test_settings_refuse_numbers_that_overflow_later(entry, value, fragment):
    with pytest.raises(settings._Invalid) as exc:  # pylint: disable=protected-access
        settings.convert(entry, value)
    assert fragment in str(exc.value)
    assert len(str(exc.value)) < 200


def test_every_number_setting_declares_its_bounds():
    """Enforced for every detection by the contract test through check_spec."""
    assert check_spec({'n': UNBOUNDED}) == ['n: a number needs a max (a number within 2**53), got None']
    assert check_spec({'n': dict(UNBOUNDED, max=10 ** 20)}) == [
        'n: a number needs a max (a number within 2**53), got 100000000000000000000']
    for detection in registry.DETECTIONS:
        for key, entry in detection.SETTINGS.items():
            if entry['type'] in ('int', 'float'):
                assert entry.get('min') is not None and entry.get('max') is not None, (detection.ID, key)


def test_a_ten_billion_second_timeout_never_reaches_a_detection():
    for check, key in (('docker_overlay_sandbox', 'api_timeout'), ('ollama_schema_order', 'probe_timeout'),
                       ('podman_export_idmap', 'probe_timeout')):
        with pytest.raises(registry.SelectionError, match='above the maximum'):
            registry.validate_settings({check: {key: 10 ** 10}})


@pytest.mark.parametrize('text', [
    'abc', '9' * 5000, '1.' + '2' * 5000, '1.2.3.4.5.6.7.8.9', '29.0.0' + '.0' * 3000, '1234567890.1', '٢٩.0.0',
    '29.0.0 ' + 'x' * 300,
])
def test_versions_that_do_not_parse_are_unknown_not_small(text):
    """Before: '1.222...2' read as (1,) and '29.0.0.0...' as (29, 0, 0, 0, 0, 0, 0, 0): comparable, so
    "outside the affected range". Now they do not parse."""
    assert hostio.version_tuple(text) is None


@pytest.mark.parametrize('text,expected', [
    ('20.10.24+dfsg1', (20, 10, 24)), ('29.0.0', (29, 0, 0)), ('6.18.34+rpt-rpi-v8', (6, 18, 34)),
    ('v0.8.5.post1', (0, 8, 5)), ('0.12.4-rc0', (0, 12, 4)), ('1.2.3.4.5.6.7.8', (1, 2, 3, 4, 5, 6, 7, 8)),
])
def test_real_versions_still_parse(text, expected):
    assert hostio.version_tuple(text) == expected


def test_the_module_bounds_its_timeouts_as_the_controller_does():
    from ansible_collections.homelab.postmortem.plugins.module_utils import audit_interface, facts_module
    assert facts_module.MAX_SECONDS == audit_interface.MAX_SECONDS
