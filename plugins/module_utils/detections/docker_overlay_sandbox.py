# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_overlay_sandbox: running containers cut off their swarm overlay network.

The overlay driver counts the endpoints joined to each network on a node and
destroys the network's sandbox at zero. Since Engine 29.0.0 a container start
that fails after the driver's Join is rolled back with two Leaves, so every
failed start (a taken host port, a bad endpoint option) takes one join too
many; healthy containers lose the network while ``docker ps`` says running.
The state is the failure: whatever the Engine version, a running container
whose overlay interface has no carrier, or whose network's sandbox is gone, is
cut off. Read-only: the Engine API over its socket, the sandbox files, and the
interface flags read inside each container's own network namespace.

Where the sandboxes are is the daemon's own answer: the directory of each
running container's sandbox key. An exec root that is only assumed (the
setting, dockerd's command line and config file, the default) never makes a
container cut off: a sandbox missing there is unknown, not gone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import address as docker_address
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_remediation


def _absent(ctx, detection, settings):
    """Why there is no daemon to judge (asked before root is required; the socket's directory is world-readable)."""
    path = docker_address.socket_path(settings['socket'])
    return None if os.path.lexists(path) else 'No Docker daemon socket at %s.' % path


def _verdict():
    # absent() found the socket: the code that talks to the daemon is loaded only now.
    from ansible_collections.homelab.postmortem.plugins.module_utils.verdicts import docker_overlay_sandbox as verdict
    return verdict


DETECTION = Detection(
    'docker_overlay_sandbox',
    group='docker',
    title='A failing swarm task cuts healthy containers off their overlay network while docker ps says running',
    applies={'image': False, 'binary': None,
             'root': "the daemon's socket and the containers' network namespaces are root's"},
    references=[
        'https://github.com/moby/moby/pull/50945 (rollback with sbLeave: a second Leave on failure, first in v29.0.0)',
        'moby/moby daemon/libnetwork/endpoint.go Endpoint.sbJoin; drivers/overlay/ov_network.go leaveSandbox',
        'moby/moby#53834 (the report; not found upstream, no fix released)',
    ],
    remediation=make_remediation(
        role='homelab.postmortem.docker_overlay_recover',
        role_vars={'docker_overlay_recover_restart': True},
        manual=[
            'Fix the failing start first: docker service ps SERVICE --no-trunc shows the error; scale the service '
            'to 0 (docker service scale SERVICE=0) while you fix it.',
            'Then restart the daemon on each affected node, one node at a time (systemctl restart docker), and '
            'start the containers without a restart policy that were running (docker start NAME).',
            'Check again: the sandbox <exec-root>/netns/<epoch>-<network id> exists and eth0 in each container has a carrier.',
        ],
        disruption='restart',
    ),
    probes=('overlay_ping',),
    settings={
        'socket': {'type': 'str', 'default': 'unix:///var/run/docker.sock',
                   'description': "The daemon's API socket (DOCKER_HOST form, unix only)."},
        'exec_root': {'type': 'str', 'default': None,
                      'description': "The daemon's exec root, used only where a container's sandbox key does not show it "
                                     "(NetworkSettings.SandboxKey is <exec-root>/netns/<id>); unset: as dockerd resolves it "
                                     "(--exec-root, else \"exec-root\" in its config file, else its default)."},
        'api_timeout': {'type': 'int', 'default': 10, 'min': 1, 'max': 300,
                        'description': 'Seconds one Engine API request may take.'},
        'affected_from': {'type': 'version', 'default': '29.0.0',
                          'description': 'First Engine version whose failed starts take a join too many (moby PR #50945).'},
        'fixed_in': {'type': 'version', 'default': None,
                     'description': 'First Engine version with the fix; unset while upstream has none.'},
        'journal_unit': {'type': 'str', 'default': 'docker.service',
                         'description': 'Unit whose journal is searched for "Peer entry was not in db" warnings.'},
        'probe_max_containers': {'type': 'int', 'default': 20, 'min': 1, 'max': 500,
                                 'description': 'Containers the overlay_ping probe sends one ping from.'},
    },
    absent=_absent,
    verdict=_verdict,
)
