# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which ``podman run`` option becomes which Quadlet key, from which podman on, read how.

The table the conversion (quadlet.py) and the check of a generated unit (quadlet_check.py) share,
read from containers/podman's Quadlet for each release.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

QUADLET_MIN = (4, 4)
# containers/podman pkg/systemd/quadlet/quadlet.go: first release whose supportedContainerKeys has the key.
PODMAN_ARGS_MIN = (4, 4)
GLOBAL_ARGS_MIN = (4, 8)

# How podman 5.4.2's generator reads each key (pkg/systemd/parser/unitfile.go), which decides
# what a value may contain and how it is written:
#   single  Lookup: the last value, trailing blanks and surrounding double quotes stripped, no unescaping
#   multi   LookupAll: every value as written (an empty one clears the ones before)
#   words   LookupAllStrv: words split at blanks, quotes removed, backslashes kept
#   args    LookupAllArgs / LookupLastArgs: split like a command line, quotes removed, C escapes applied
#   keyval  LookupAllKeyVal: like args, each word split at its first '='
#   bool    LookupBoolean: 1/yes/true/on, anything else false; rendered back as --flag or --flag=false
# option -> (Quadlet key, first podman whose Quadlet has the key, how the key is read)
KEYS = {
    '--add-host': ('AddHost', (5, 3), 'multi'),
    '--annotation': ('Annotation', (4, 4), 'keyval'),
    '--cap-add': ('AddCapability', (4, 4), 'words'),
    '--cap-drop': ('DropCapability', (4, 4), 'words'),
    '--cgroups': ('CgroupsMode', (5, 3), 'single'),
    '--device': ('AddDevice', (4, 4), 'words'),
    '--dns': ('DNS', (4, 7), 'multi'),
    '--dns-option': ('DNSOption', (4, 7), 'multi'),
    '--dns-search': ('DNSSearch', (4, 7), 'multi'),
    '--entrypoint': ('Entrypoint', (5, 0), 'single'),
    '--env': ('Environment', (4, 4), 'keyval'),
    '--env-file': ('EnvironmentFile', (4, 4), 'args'),
    '--env-host': ('EnvironmentHost', (4, 4), 'bool'),
    '--expose': ('ExposeHostPort', (4, 4), 'multi'),
    '--gidmap': ('GIDMap', (4, 8), 'words'),
    '--group-add': ('GroupAdd', (5, 1), 'multi'),
    '--health-cmd': ('HealthCmd', (4, 5), 'single'),
    '--health-interval': ('HealthInterval', (4, 5), 'single'),
    '--health-log-destination': ('HealthLogDestination', (5, 3), 'single'),
    '--health-max-log-count': ('HealthMaxLogCount', (5, 3), 'single'),
    '--health-max-log-size': ('HealthMaxLogSize', (5, 3), 'single'),
    '--health-on-failure': ('HealthOnFailure', (4, 5), 'single'),
    '--health-retries': ('HealthRetries', (4, 5), 'single'),
    '--health-start-period': ('HealthStartPeriod', (4, 5), 'single'),
    '--health-startup-cmd': ('HealthStartupCmd', (4, 5), 'single'),
    '--health-startup-interval': ('HealthStartupInterval', (4, 5), 'single'),
    '--health-startup-retries': ('HealthStartupRetries', (4, 5), 'single'),
    '--health-startup-success': ('HealthStartupSuccess', (4, 5), 'single'),
    '--health-startup-timeout': ('HealthStartupTimeout', (4, 5), 'single'),
    '--health-timeout': ('HealthTimeout', (4, 5), 'single'),
    '--hostname': ('HostName', (4, 6), 'single'),
    '--init': ('RunInit', (4, 4), 'bool'),
    '--ip': ('IP', (4, 5), 'single'),
    '--ip6': ('IP6', (4, 5), 'single'),
    '--label': ('Label', (4, 4), 'keyval'),
    '--log-driver': ('LogDriver', (4, 5), 'single'),
    '--log-opt': ('LogOpt', (5, 2), 'words'),
    '--mount': ('Mount', (4, 5), 'args'),
    '--network': ('Network', (4, 4), 'multi'),
    '--network-alias': ('NetworkAlias', (5, 2), 'multi'),
    '--pids-limit': ('PidsLimit', (4, 7), 'single'),
    '--publish': ('PublishPort', (4, 4), 'multi'),
    '--pull': ('Pull', (4, 6), 'single'),
    '--read-only': ('ReadOnly', (4, 4), 'bool'),
    '--read-only-tmpfs': ('ReadOnlyTmpfs', (4, 8), 'bool'),
    '--secret': ('Secret', (4, 5), 'args'),
    '--shm-size': ('ShmSize', (4, 7), 'single'),
    '--stop-signal': ('StopSignal', (5, 2), 'single'),
    '--stop-timeout': ('StopTimeout', (5, 0), 'single'),
    '--subgidname': ('SubGIDMap', (4, 8), 'single'),
    '--subuidname': ('SubUIDMap', (4, 8), 'single'),
    '--sysctl': ('Sysctl', (4, 6), 'words'),
    '--tmpfs': ('Tmpfs', (4, 5), 'multi'),
    '--tz': ('Timezone', (4, 4), 'single'),
    '--uidmap': ('UIDMap', (4, 8), 'words'),
    '--ulimit': ('Ulimit', (4, 7), 'multi'),
    '--userns': ('UserNS', (4, 5), 'single'),
    '--volume': ('Volume', (4, 4), 'multi'),
    '--workdir': ('WorkingDir', (4, 6), 'single'),
}
# --security-opt values that have a key of their own; the rest go to PodmanArgs.
SECURITY_KEYS = (
    ('no-new-privileges', 'NoNewPrivileges', (4, 4), None),
    ('label=disable', 'SecurityLabelDisable', (4, 5), None),
    ('label=nested', 'SecurityLabelNested', (4, 6), None),
    ('label=type:', 'SecurityLabelType', (4, 5), 'single'),
    ('label=filetype:', 'SecurityLabelFileType', (4, 5), 'single'),
    ('label=level:', 'SecurityLabelLevel', (4, 5), 'single'),
    ('seccomp=', 'SeccompProfile', (4, 4), 'single'),
    ('mask=', 'Mask', (4, 6), 'args'),
    ('unmask=', 'Unmask', (4, 6), 'args'),
)
KEY_MINIMUMS = dict((key, since) for key, since, _how in KEYS.values())
KEY_MINIMUMS.update((key, since) for _p, key, since, _how in SECURITY_KEYS)
KEY_MINIMUMS.update({'User': (4, 4), 'Group': (4, 4), 'Notify': (4, 4), 'Rootfs': (4, 5), 'Exec': (4, 4),
                     'ContainersConfModule': (4, 8), 'GlobalArgs': GLOBAL_ARGS_MIN, 'PodmanArgs': PODMAN_ARGS_MIN})
NOTIFY_HEALTHY_MIN = (5, 0)
# What Quadlet itself puts on every command line; the originals are dropped.
QUADLET_OWNS = {
    '--name': 'ContainerName= carries it',
    '--restart': '[Service] Restart= carries it; systemd restarts the container',
    '--rm': 'Quadlet adds --rm', '--replace': 'Quadlet adds --replace',
    '--detach': 'Quadlet runs the container detached (-d)',
    '--cidfile': 'Quadlet writes its own --cidfile=%t/%N.cid, which ExecStop needs',
}
REFUSED = {
    '--pod': 'containers in a pod are converted with their pod (.pod units); not handled here',
    '--pod-id-file': 'containers in a pod are converted with their pod (.pod units); not handled here',
}
