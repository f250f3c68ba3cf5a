# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The podman_safe_export workflow: export a container through a commit, so the owners are the
ones it has inside, check the archive, and only then put it where it was asked for.

``podman commit`` maps a container's owners back through its ID mapping; a plain container
created from that image exports them unshifted. The archive is written beside ``dest``, its
owners are read with export.owners_in_tar, and it is renamed onto ``dest`` only when they are
right. The temporary container, image and file are removed whatever happens.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import uuid

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import export as podman_export


class ExportFailed(HostInputError):
    pass


def parse_owner(text):
    """'1000:1000' or '1000/1000' -> (1000, 1000); ValueError otherwise."""
    parts = str(text).replace('/', ':').split(':')
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError('%r is not uid:gid' % (text,))
    return int(parts[0]), int(parts[1])


def expected_owners(raw):
    """The expect_owners option as {path inside the archive: (uid, gid)}; ExportFailed when a value is no uid:gid."""
    try:
        return dict((str(path).strip('/'), parse_owner(owner)) for path, owner in (raw or {}).items())
    except ValueError as exc:
        raise ExportFailed('expect_owners: %s' % exc)


def file_mode(mode):
    """The mode option ('0600', 0o600 or 384) as a number; ExportFailed when it is none."""
    try:
        return int(mode, 8) if isinstance(mode, str) else int(mode)
    except (TypeError, ValueError):
        raise ExportFailed('mode %r is not a file mode (write it as a string, such as "0600")' % (mode,))


def verify(path, expect):
    """(owners found {path: 'uid/gid'}, problems) for the archive at ``path``: the files that are
    root's in every image must be 0/0, each expected path must be there with its owner."""
    wanted = set(podman_export.ROOT_OWNED) | set(expect)
    with open(path, 'rb') as handle:
        # Read to the end: an expected path may sort after usr/bin/su.
        found = podman_export.owners_in_tar(handle, wanted, stop_after=None, files_only=podman_export.ROOT_OWNED)
    owners = dict((p, '%d/%d' % (o['uid'], o['gid'])) for p, o in sorted(found.items()))
    problems = []
    for name in podman_export.ROOT_OWNED:
        if name in found and (found[name]['uid'], found[name]['gid']) != (0, 0):
            problems.append('%s is %s, not 0/0' % (name, owners[name]))
    for name, (uid, gid) in sorted(expect.items()):
        if name not in found:
            problems.append('%s is not in the archive' % name)
        elif (found[name]['uid'], found[name]['gid']) != (uid, gid):
            problems.append('%s is %s, not %d/%d' % (name, owners[name], uid, gid))
    if not found:
        problems.append('none of %s is in the archive, so its owners cannot be checked; name a path and its '
                        'owner in expect_owners' % ', '.join(podman_export.ROOT_OWNED))
    return owners, problems


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b''):
            digest.update(block)
    return digest.hexdigest()


class SafeExport(object):
    """One export of ``container`` to ``dest`` through ``ctx`` (its runner bounds each podman command).

    ``steps`` lists the podman commands run, ``result`` what the task returns (also after a
    failure), ``warnings`` what it should say besides.
    """

    def __init__(self, ctx, container, dest, expect=None, pause=True, mode='0600', backup=True, token=None):
        self.container = container
        self.dest = dest
        self.directory = os.path.dirname(dest) or '.'
        self.expect = expect or {}
        self.pause = pause
        self.mode = file_mode(mode)
        self.backup = backup
        self.token = token or uuid.uuid4().hex[:12]
        self.image_name = 'localhost/postmortem-safe-export-%s:tmp' % self.token
        self.steps = []
        self.warnings = []
        self.result = {'dest': dest, 'changed': False}
        self.cli = podman.PodmanCli(ctx, steps=self.steps)
        self.temp_container = None
        self.temp_image = None
        self.temp_file = None

    def unchanged_reason(self, force):
        """Why nothing is to be done (dest exists and force is off), or None; ExportFailed when
        dest cannot be written at all."""
        if not os.path.isdir(self.directory):
            raise ExportFailed('the directory of dest, %s, does not exist' % self.directory)
        if os.path.exists(self.dest) and not force:
            return '%s exists; set force: true to export again' % self.dest
        if self.cli.binary is None:
            raise ExportFailed('podman is not installed')
        return None

    def planned_steps(self):
        return ['podman container inspect %s' % self.container,
                'podman commit %s %s' % (self.container, self.image_name),
                'podman create %s' % self.image_name,
                'podman export -o <temporary file beside %s> <temporary container>' % self.dest,
                'verify owners, then rename onto %s' % self.dest,
                'podman rm <temporary container>; podman rmi %s' % self.image_name]

    def _podman(self, args, what):
        return self.cli.execute(args, what)[1].strip()

    def run(self):
        """Export, check, put in place; ExportFailed (after cleaning up) with the reason."""
        try:
            self._export()
        except (HostInputError, IOError, OSError) as exc:
            leftovers = self._cleanup()
            msg = str(exc)
            if leftovers:
                msg += ' (and cleaning up failed: %s)' % '; '.join(leftovers)
            raise ExportFailed(msg)
        leftovers = self._cleanup()
        if leftovers:
            self.warnings.append('the archive is written, but temporaries remain: %s' % '; '.join(leftovers))
        return self.result

    def _export(self):
        result = self.result
        found = self.cli.container(self.container)
        if found is None:
            raise ExportFailed('no container named %s' % self.container)
        result['mapping'] = found.uid_map
        commit = ['commit', '--quiet', '--pause=%s' % ('true' if self.pause else 'false'), self.container,
                  self.image_name]
        self.temp_image = self._podman(commit, 'podman commit') or self.image_name
        # The temporary container never runs: network none keeps rootless podman from
        # needing a network it may not have, and the command only has to be present.
        self.temp_container = self._podman(['create', '--network', 'none', self.temp_image, 'true'], 'podman create')
        self.temp_file = os.path.join(self.directory, '.%s.postmortem-%s.tmp' % (os.path.basename(self.dest), self.token))
        self._podman(['export', '--output', self.temp_file, self.temp_container], 'podman export')
        owners, problems = verify(self.temp_file, self.expect)
        result['owners'] = owners
        if problems:
            raise ExportFailed('the archive failed verification, %s was not written: %s' % (self.dest, '; '.join(problems)))
        os.chmod(self.temp_file, self.mode)
        # fsynced, the backup durable first, renamed over dest and made durable (the one write path).
        backup_file = filewrite.install_file(self.temp_file, self.dest, self.backup)
        self.temp_file = None
        if backup_file:
            result['backup_file'] = backup_file
        result.update(changed=True, size=os.path.getsize(self.dest), sha256=sha256(self.dest))

    def _cleanup(self):
        """Remove the temporaries; the problems, one line each."""
        problems = []
        if self.temp_container:
            try:
                self._podman(['rm', '--force', self.temp_container], 'removing the temporary container')
            except HostInputError as exc:
                problems.append(str(exc))
        if self.temp_image:
            try:
                self._podman(['rmi', '--force', self.temp_image], 'removing the temporary image')
            except HostInputError as exc:
                problems.append(str(exc))
        if self.temp_file and os.path.exists(self.temp_file):
            os.unlink(self.temp_file)
        return problems
