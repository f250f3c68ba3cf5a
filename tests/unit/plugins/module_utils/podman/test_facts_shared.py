"""The podman facts podman_restart_userns and podman_export_idmap share in one run: podman is asked once."""
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.podman_export_idmap import DETECTION as podman_export_idmap
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.podman_restart_userns import DETECTION as podman_restart_userns

from ....helpers.podman import FakePodman, container, make_ctx


@pytest.fixture(autouse=True)
def as_root(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 0)


def test_both_podman_detections_in_one_run_ask_podman_once(tmp_path):
    """audit_facts runs both detections on one context: podman info, ps and inspect run once, not twice."""
    fake = FakePodman([container('mapped', 'm', stopped_by_user=False)])
    ctx = make_ctx(tmp_path, fake)
    findings, _timings = registry.run(ctx, [podman_restart_userns, podman_export_idmap])
    assert findings['podman_restart_userns']['status'] == 'at_risk'
    assert findings['podman_export_idmap']['status'] == 'at_risk'
    verbs = [c[1] for c in fake.calls]
    assert verbs.count('--version') == 1 and verbs.count('ps') == 1 and verbs.count('container') == 1
    assert 'info' not in verbs


def test_without_containers_podman_is_asked_nothing_but_ps(tmp_path):
    """podman ps lists nothing: no podman info, no podman --version, for either detection."""
    fake = FakePodman([])
    findings, _timings = registry.run(make_ctx(tmp_path, fake), [podman_restart_userns, podman_export_idmap])
    assert [c[1:] for c in fake.calls] == [['ps', '--all', '--format', 'json']]
    assert findings['podman_restart_userns']['status'] == 'not_applicable'
    assert findings['podman_export_idmap']['status'] == 'not_applicable'
    assert findings['podman_export_idmap']['evidence']['users'][0]['podman_facts'] == 'not read: no container'


def test_the_facts_match_podman_info_or_come_from_it(tmp_path):
    """Where a cheap source is not certain (here: PID 1 is systemd and has a journal, so the event
    logger depends on podman's build), podman info is asked once and its answers are the evidence."""
    fake = FakePodman([container('mapped', 'm', stopped_by_user=False)], version='4.3.1')
    ctx = make_ctx(tmp_path, fake)
    (tmp_path / 'proc' / '1' / 'comm').write_text('systemd\n')
    (tmp_path / 'root' / 'run' / 'log' / 'journal' / 'abc').mkdir(parents=True)
    findings, _timings = registry.run(ctx, [podman_restart_userns, podman_export_idmap])
    evidence = findings['podman_restart_userns']['evidence']
    assert evidence['event_logger'] == 'journald' and evidence['podman_version'] == '4.3.1'
    assert evidence['podman_facts']['event_logger'] == 'podman info --format json'
    assert 'built with systemd' in evidence['podman_facts']['why_podman_info']
    assert [c[1] for c in fake.calls].count('info') == 1
