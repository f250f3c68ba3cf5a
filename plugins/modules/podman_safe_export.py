#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_safe_export
short_description: Export a podman container's filesystem with the owners it has inside
version_added: 0.1.0
description:
  - C(podman export) of a container with its own ID mapping (C(--userns=keep-id), C(--uidmap),
    C(--userns=auto)) writes every file owner shifted by the mapping, with exit code 0. This module
    exports through a commit instead, which maps the owners back - C(podman commit) the container
    to a temporary image, C(podman create) a plain container from it, C(podman export) that.
  - The archive is written to a temporary file next to I(dest), its owners are checked, and only
    then is it renamed onto I(dest). Files that are root's in every image (C(etc/passwd),
    C(etc/group), C(usr/bin/su), C(bin/su)) must be 0/0, and every path in I(expect_owners) must
    have the owner given. When the check fails, or nothing could be checked, the module fails and
    I(dest) is not touched.
  - The temporary container, image and file are removed whether the export succeeds or fails.
  - Works for rootful containers and, with C(become_user), for a user's rootless containers.
options:
  container:
    description: Name or ID of the container to export.
    type: str
    required: true
  dest:
    description: Path of the archive to write. Its directory must exist.
    type: path
    required: true
  force:
    description:
      - Replace I(dest) when it exists. Without it an existing I(dest) is left alone and the task
        reports no change.
    type: bool
    default: false
  backup:
    description: With I(force), keep a timestamped copy of the archive being replaced.
    type: bool
    default: true
  mode:
    description: Permissions of the archive. The default keeps it private, since exports hold C(etc/shadow) and secrets.
    type: raw
    default: '0600'
  expect_owners:
    description:
      - Paths inside the archive (no leading C(/)) and the C(uid:gid) each must have, checked in addition
        to the root-owned files, for example C(home/user) with C(1000:1000). A listed path missing from the
        archive fails the export.
    type: dict
    default: {}
  pause:
    description: Pause the container while it is committed (podman's default), so the copy is consistent.
    type: bool
    default: true
  timeout:
    description: Seconds allowed for each podman command.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: Reports whether the archive would be written and the steps, and runs nothing.
  diff_mode:
    support: none
    description: An archive has no text diff.
  platform:
    platforms: posix
    support: full
    description: Target OS/families that can be operated against.
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.podman_export_idmap_facts
'''

EXAMPLES = r'''
- name: Back up a rootless keep-id container with the right owners
  homelab.postmortem.podman_safe_export:
    container: webapp
    dest: /home/alice/backups/webapp.tar
    expect_owners:
      home/user: "1000:1000"
  become: true
  become_user: alice

- name: Refresh a rootful container's archive
  homelab.postmortem.podman_safe_export:
    container: db
    dest: /srv/backup/db.tar
    force: true
  become: true
'''

RETURN = r'''
dest:
  description: Path of the archive.
  returned: always
  type: str
  sample: /srv/backup/db.tar
size:
  description: Size of the archive in bytes.
  returned: when the archive was written
  type: int
  sample: 83886080
sha256:
  description: SHA-256 of the archive.
  returned: when the archive was written
  type: str
owners:
  description: The checked paths and the C(uid/gid) each has in the archive.
  returned: when the archive was written or verification failed
  type: dict
  sample: {etc/passwd: 0/0, usr/bin/su: 0/0, home/user: 1000/1000}
mapping:
  description: The container's own UID mapping (empty when it has none, where a plain export would have been right too).
  returned: when the container exists
  type: list
  elements: str
  sample: ["0:1:1000", "1000:0:1", "1001:1001:64536"]
steps:
  description: The podman commands run (or, in check mode, that would run), temporaries included.
  returned: always
  type: list
  elements: str
backup_file:
  description: Copy of the replaced archive.
  returned: when I(force) replaced an archive and I(backup) is true
  type: str
'''

import hashlib
import os
import tarfile
import uuid

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import export as podman_export
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner


def _parse_owner(text):
    parts = str(text).replace('/', ':').split(':')
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError('%r is not uid:gid' % (text,))
    return int(parts[0]), int(parts[1])


class Exporter(object):
    def __init__(self, module):
        self.module = module
        module.get_bin_path('podman', required=True)
        self.steps = []
        ctx = AuditContext(runner=CommandRunner(timeout=module.params['timeout']), which=module.get_bin_path)
        self.cli = podman.PodmanCli(ctx, steps=self.steps)
        self.temp_container = None
        self.temp_image = None
        self.temp_file = None

    def run(self, args, what):
        return self.cli.execute(args, what)[1].strip()

    def cleanup(self):
        problems = []
        if self.temp_container:
            try:
                self.run(['rm', '--force', self.temp_container], 'removing the temporary container')
            except HostInputError as exc:
                problems.append(str(exc))
        if self.temp_image:
            try:
                self.run(['rmi', '--force', self.temp_image], 'removing the temporary image')
            except HostInputError as exc:
                problems.append(str(exc))
        if self.temp_file and os.path.exists(self.temp_file):
            os.unlink(self.temp_file)
        return problems


def _verify(path, expect):
    wanted = set(podman_export.ROOT_OWNED) | set(expect)
    with open(path, 'rb') as handle:
        found = _owners_including_dirs(handle, wanted)
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


def _owners_including_dirs(handle, wanted):
    """Like podman_export.owners_in_tar, but directories count too (expect_owners may name one)."""
    found = {}
    with tarfile.open(fileobj=handle, mode='r|') as archive:
        for member in archive:
            name = podman_export.normalize(member.name).rstrip('/')
            if name in podman_export.ROOT_OWNED and not member.isfile():
                continue
            if name in wanted:
                found[name] = {'uid': member.uid, 'gid': member.gid}
            if wanted.issubset(found):
                break
    return found


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b''):
            digest.update(block)
    return digest.hexdigest()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            container=dict(type='str', required=True),
            dest=dict(type='path', required=True),
            force=dict(type='bool', default=False),
            backup=dict(type='bool', default=True),
            mode=dict(type='raw', default='0600'),
            expect_owners=dict(type='dict', default={}),
            pause=dict(type='bool', default=True),
            timeout=dict(type='int', default=600),
        ),
        supports_check_mode=True,
    )
    params = module.params
    dest = params['dest']
    try:
        expect = dict((str(k).strip('/'), _parse_owner(v)) for k, v in params['expect_owners'].items())
    except ValueError as exc:
        module.fail_json(msg='expect_owners: %s' % exc, dest=dest, steps=[])
    directory = os.path.dirname(dest) or '.'
    if not os.path.isdir(directory):
        module.fail_json(msg='the directory of dest, %s, does not exist' % directory, dest=dest, steps=[])
    if os.path.exists(dest) and not params['force']:
        module.exit_json(changed=False, dest=dest, steps=[],
                         msg='%s exists; set force: true to export again' % dest)

    exporter = Exporter(module)
    token = uuid.uuid4().hex[:12]
    image_name = 'localhost/postmortem-safe-export-%s:tmp' % token
    planned = ['podman container inspect %s' % params['container'],
               'podman commit %s %s' % (params['container'], image_name),
               'podman create %s' % image_name,
               'podman export -o <temporary file beside %s> <temporary container>' % dest,
               'verify owners, then rename onto %s' % dest,
               'podman rm <temporary container>; podman rmi %s' % image_name]
    if module.check_mode:
        module.exit_json(changed=True, dest=dest, steps=planned, msg='would export %s through a commit' % params['container'])

    result = dict(dest=dest, changed=False)
    try:
        inspected = module.from_json(exporter.run(['container', 'inspect', params['container']], 'podman container inspect'))
        mappings = ((inspected or [{}])[0].get('HostConfig') or {}).get('IDMappings') or {}
        result['mapping'] = list(mappings.get('UidMap') or [])
        commit = ['commit', '--quiet', '--pause=%s' % ('true' if params['pause'] else 'false'),
                  params['container'], image_name]
        exporter.temp_image = exporter.run(commit, 'podman commit') or image_name
        # The temporary container never runs: network none keeps rootless podman from
        # needing a network it may not have, and the command only has to be present.
        exporter.temp_container = exporter.run(['create', '--network', 'none', exporter.temp_image, 'true'],
                                               'podman create')
        exporter.temp_file = os.path.join(directory, '.%s.postmortem-%s.tmp' % (os.path.basename(dest), token))
        exporter.run(['export', '--output', exporter.temp_file, exporter.temp_container], 'podman export')
        owners, problems = _verify(exporter.temp_file, expect)
        result['owners'] = owners
        if problems:
            raise RuntimeError('the archive failed verification, %s was not written: %s' % (dest, '; '.join(problems)))
        mode = params['mode']
        os.chmod(exporter.temp_file, int(mode, 8) if isinstance(mode, str) else int(mode))
        if os.path.exists(dest) and params['backup']:
            result['backup_file'] = filewrite.backup_file(dest)
        os.rename(exporter.temp_file, dest)
        exporter.temp_file = None
        result.update(changed=True, size=os.path.getsize(dest), sha256=_sha256(dest))
    except (HostInputError, RuntimeError, ValueError, IOError, OSError) as exc:
        leftovers = exporter.cleanup()
        msg = str(exc)
        if leftovers:
            msg += ' (and cleaning up failed: %s)' % '; '.join(leftovers)
        module.fail_json(msg=msg, steps=exporter.steps, **result)
    leftovers = exporter.cleanup()
    if leftovers:
        module.warn('the archive is written, but temporaries remain: %s' % '; '.join(leftovers))
    module.exit_json(steps=exporter.steps, **result)


if __name__ == '__main__':
    main()
