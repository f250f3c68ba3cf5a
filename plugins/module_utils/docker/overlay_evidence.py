# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The codes docker_overlay_sandbox's instances carry in their evidence, and the one table of them.

Every instance has ``evidence.kind`` (what was looked at) and ``evidence.cause`` (why its status is
what it is); a cut-off container also lists every sign in ``evidence.causes``. The detection writes
them (verdicts/docker_overlay_sandbox.py) and the docker_overlay_recover plan reads them
(docker/overlay_recovery.py): a fix decides by these codes, never by an instance's name or summary,
which are words for people and may be reworded (docs/docker_overlay_sandbox.md, "Evidence").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CONTAINER = 'container'
NETWORK = 'network'
FAILED_STARTS = 'failed_starts'

# The container's overlay interface has its carrier while its network's sandbox file could not be
# looked for: the one unknown the recovery may count as recovered (the carrier is the direct proof).
SANDBOX_UNSEEN = 'sandbox_unseen'

# What makes a running container cut off, in the order its summary names them.
CUT_OFF_SIGNS = ('sandbox_gone', 'no_interface', 'no_carrier', 'no_ping_answer')

# kind -> status -> the causes an instance of that kind and status may give.
CAUSES = {
    CONTAINER: {
        'ok': ('overlay_up', 'not_running', 'left', 'exited'),
        'affected': CUT_OFF_SIGNS,
        'unknown': (SANDBOX_UNSEEN, 'unreadable', 'interfaces_unreadable'),
    },
    NETWORK: {
        'unknown': ('unreadable',),
    },
    FAILED_STARTS: {
        'ok': ('outside_affected_range',),
        'at_risk': ('in_affected_range',),
        'unknown': ('engine_version_unknown', 'swarm_unreadable', 'tasks_unreadable'),
    },
}
