# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Does the command Quadlet generates run the same container as the recorded ``podman run``?

The generator's ExecStart= is read the way systemd runs it (specifiers, then words with
quotes and C escapes, then ``$$``), both command lines are parsed with podman's own option
spec, and compared option by option. What Quadlet adds to every container (--cgroups=split,
--sdnotify=conmon, --replace, --rm, -d, its --cidfile, --name) and what the conversion moves
elsewhere on purpose (--restart to [Service] Restart=) are left out; everything else must be
the same, with the same values.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv

from ansible_collections.homelab.postmortem.plugins.module_utils import systemd_unit
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options, quadlet, quadlet_keys

# What Quadlet puts on every generated command line (pkg/systemd/quadlet/quadlet.go ConvertContainer).
QUADLET_ADDS = {'--cgroups': ('split',), '--sdnotify': ('conmon',), '--replace': ('true',), '--rm': ('true',),
                '--detach': ('true',), '--cidfile': ('%t/%N.cid',)}
# Options of the original the conversion does not carry in ExecStart, by design.
NOT_CARRIED = ('--name', '--restart', '--rm', '--replace', '--detach', '--cidfile')
SINGLE = tuple(option for option, (_key, _since, how) in quadlet_keys.KEYS.items() if how in ('single', 'bool')) + (
    '--user', '--sdnotify', '--rootfs')
KEYVAL = ('--env', '--label', '--annotation')


def exec_argv(exec_start):
    """The argv systemd runs for ``ExecStart=<exec_start>``: %% and $$ reduced, other %x kept."""
    value = exec_start.split('=', 1)[1] if exec_start.startswith('ExecStart=') else exec_start
    value = value.replace('%%', '\x00')
    words = systemd_unit.split_words(value)
    return [w.replace('\x00', '%').replace('$$', '$') for w in words]


def _normalise(command, drop, env_values=None, container=None):
    found = {}
    for option in command.options:
        name, value = option.name, option.value
        if name in drop and (drop[name] is None or value in drop[name]):
            continue
        if name == '--env' and value is not None and '=' not in value and env_values and value in env_values:
            value = '%s=%s' % (value, env_values[value])
        if name == '--volume' and container is not None and value is not None:
            value = quadlet.absolute_volume(value, container)
        if name in ('--cap-add', '--cap-drop') and value is not None:
            value = value.lower()
        if name == '--mount' and value is not None:
            # Quadlet writes the type first and src= as source= (resolveContainerMountParams).
            value = tuple(sorted('source=' + f[4:] if f.startswith('src=') else f for f in next(csv.reader([value]))))
        if name == '--security-opt' and value == 'no-new-privileges=true':
            value = 'no-new-privileges'
        found.setdefault(name, []).append(value)
    result = {}
    for name, values in found.items():
        if name in KEYVAL:
            pairs = dict(v.split('=', 1) if '=' in v else (v, None) for v in values)
            result[name] = sorted('%s=%s' % kv for kv in pairs.items())
        elif name in SINGLE:
            result[name] = [values[-1]]
        else:
            result[name] = sorted(values, key=repr)
    return result


def compare(original, generated, specs, env_values=None, container=None, image=None, version_text='5.4.2'):
    """[difference]: empty when ``generated`` (argv) runs what ``original`` (argv) ran.

    ``image``: the image the unit uses instead of the recorded one (a commit), or None.
    """
    first = options.parse_command(original, specs[0], specs[1], version_text)
    second = options.parse_command(generated, specs[0], specs[1], version_text)
    differences = []
    if [(o.name, o.value) for o in first.global_options] != [(o.name, o.value) for o in second.global_options]:
        differences.append('global options %s became %s' % ([(o.name, o.value) for o in first.global_options],
                                                            [(o.name, o.value) for o in second.global_options]))
    before = _normalise(first, _original_drop(), env_values, container)
    after = _normalise(second, dict(QUADLET_ADDS, **{'--name': None}))
    for name in sorted(set(before) | set(after)):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        if was is None:
            differences.append('added %s %s' % (name, now))
        elif now is None:
            differences.append('lost %s %s' % (name, was))
        else:
            differences.append('changed %s %s -> %s' % (name, was, now))
    expected = list(first.positional)
    if image is not None and expected and not first.flag('--rootfs'):
        expected[0] = image
    if expected != list(second.positional):
        differences.append('image and command %s became %s' % (expected, list(second.positional)))
    return differences


def _original_drop():
    drop = dict((name, None) for name in NOT_CARRIED)
    drop.update({'--sdnotify': ('conmon',), '--cgroups': ('split',)})
    return drop
