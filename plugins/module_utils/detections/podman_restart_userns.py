# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""podman_restart_userns: a rootful, ID-mapped container on an AppArmor host restarts once, then stays down.

podman's restart decision is made by ``podman container cleanup``, which conmon
runs when the container exits. For a rootful container with its own
--uidmap/--gidmap and an AppArmor profile, that process fails ("profile ...
specified but AppArmor is disabled on the host") before it restarts anything,
and says so only to syslog, and only with ``podman --syslog``. Every status
still shows the restart policy.

STUCK (affected): a restart policy that should have brought the container back,
it is exited, and nobody stopped it. AT RISK: running, rootful, mapped, confined
by a profile, with a restart policy, on a host with AppArmor enabled.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection, Found
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, make_remediation


def _first_question(ctx, detection, settings):
    cli = podman.cli_for(ctx)
    # podman ps first: without a container there is nothing to judge and nothing to ask podman.
    containers = cli.containers()
    enabled, apparmor_text = podman.apparmor_state(ctx)
    evidence = {'apparmor': apparmor_text, 'containers': len(containers)}
    if not containers:
        evidence.update(containers_with_restart_policy=0, podman_facts='not read: no container')
        return make_finding(detection, 'not_applicable', 'No rootful container has a restart policy (0 container(s)).',
                            evidence=evidence)
    return Found(cli=cli, containers=containers, enabled=enabled, apparmor_text=apparmor_text, evidence=evidence)


def _verdict():
    # Containers to judge: the verdict is loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import podman_restart_userns as verdict
    return verdict


DETECTION = Detection(
    'podman_restart_userns',
    group='podman',
    title='Rootful podman restarts an ID-mapped container once on an AppArmor host, then gives up',
    applies={'image': False, 'binary': 'podman', 'root': 'rootful containers and their events belong to root'},
    references=[
        'https://github.com/containers/podman/issues/29925',
        'https://docs.podman.io/en/latest/markdown/podman-systemd.unit.5.html',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.podman_quadlet',
        role_vars={'podman_quadlet_from_findings': True},
        manual=[
            'Let systemd do the restarting: convert the container to a Quadlet .container unit with the same '
            'UIDMap=/GIDMap= and Restart=always in [Service] (the role homelab.postmortem.podman_quadlet does this).',
            'Start a STUCK container again by hand (podman start NAME); it will stop again at its next exit until converted.',
            'Trade-off, not a fix: --security-opt apparmor=unconfined removes the AppArmor confinement.',
            'Create containers with podman --syslog so the cleanup failure reaches the journal.',
        ],
        disruption='restart',
    ),
    probes=(),
    settings={
        'fixed_in': {'type': 'version', 'default': None,
                     'description': 'First podman version with the fix; unset while upstream has none.'},
    },
    question=_first_question,
    verdict=_verdict,
)
