# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The podman_quadlet module's plan: what the unit will be, and what must be true before it is used."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet

# Paths podman itself writes into a container's layer (mount points of the files it manages).
PODMAN_MANAGED = ('/etc', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/etc/passwd', '/etc/group',
                  '/run', '/run/.containerenv', '/run/secrets', '/dev', '/proc', '/sys', '/tmp', '/var/tmp')
_ANONYMOUS = re.compile(r'^[0-9a-f]{64}$')


def image_name_for_commit(container):
    return 'localhost/postmortem-quadlet-%s:%s' % (re.sub(r'[^a-z0-9._-]', '-', container.name.lower()),
                                                   container.id[:12])


def mount_destinations(container):
    return [m.get('Destination') for m in container.raw.get('Mounts') or [] if m.get('Destination')]


def layer_changes(diff, container):
    """The writable-layer changes that would be lost with the container, from ``podman diff --format json``."""
    diff = diff or {}
    paths = []
    for kind in ('added', 'changed', 'deleted'):
        paths.extend((kind, p) for p in diff.get(kind) or [] if isinstance(p, str))
    all_paths = [p for _kind, p in paths]
    mounts = mount_destinations(container)
    significant = []
    for kind, path in paths:
        if path in PODMAN_MANAGED:
            continue
        if any(path == m or path.startswith(m.rstrip('/') + '/') or m.startswith(path.rstrip('/') + '/') for m in mounts):
            continue
        # A changed directory is reported because something in it changed; count the something.
        if kind == 'changed' and any(o.startswith(path.rstrip('/') + '/') for o in all_paths):
            continue
        significant.append('%s %s' % (kind, path))
    return significant


def build(container, version, image_config=None, image=None, restart_sec=1, unconfined=False, specs=None,
          version_text=None):
    """(unit text, notes, source) for ``container``; ConversionProblem when it cannot be converted faithfully.

    ``specs``: (global, run) OptionSpec of the host's podman, needed to read a CreateCommand.
    """
    rootfs = None
    if container.create_command:
        if specs is None:
            raise quadlet.ConversionProblem("podman's options are not known (podman --help could not be read)")
        env_values = dict(item.split('=', 1) for item in (container.raw.get('Config') or {}).get('Env') or []
                          if '=' in item)
        unit, recorded_image, rootfs, command = quadlet.from_create_command(
            container, version, specs, env_values, version_text)
        source = 'CreateCommand'
    else:
        unit, recorded_image, rootfs, command = quadlet.from_inspect(container, image_config, version)
        source = 'inspect'
    if rootfs is not None and image:
        raise quadlet.ConversionProblem('--rootfs %s: the container runs from a root filesystem on the host, so its '
                                        'writable-layer changes cannot be committed to an image' % rootfs)
    _keep_anonymous_volumes(unit, container)
    text = quadlet.render(container, unit, image or recorded_image, command, restart_sec=restart_sec,
                          unconfined=unconfined, rootfs=rootfs)
    return text, unit.notes, source


def _keep_anonymous_volumes(unit, container):
    """The new container must mount the old one's anonymous volumes, or their data looks lost."""
    covered = set()
    for key, value in unit.keys:
        if key == 'Volume':
            parts = value.split(':')
            covered.add(parts[1] if len(parts) > 1 else parts[0])
    for mount in container.raw.get('Mounts') or []:
        name, dest = mount.get('Name') or '', mount.get('Destination')
        if mount.get('Type') == 'volume' and dest and dest not in covered and _ANONYMOUS.match(name):
            unit.add('Volume', '%s:%s' % (name, dest), 'multi', ['--volume', '%s:%s' % (name, dest)])
            unit.notes.append('anonymous volume %s at %s is mounted by name, so its data stays with the container'
                              % (name[:12], dest))
