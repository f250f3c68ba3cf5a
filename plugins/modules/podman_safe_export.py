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
  - The archive is written to a temporary file next to O(dest), its owners are checked, and only
    then is it renamed onto O(dest). Files that are root's in every image (C(etc/passwd),
    C(etc/group), C(usr/bin/su), C(bin/su)) must be 0/0, and every path in O(expect_owners) must
    have the owner given. When the check fails, or nothing could be checked, the module fails and
    O(dest) is not touched.
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
      - Replace O(dest) when it exists. Without it an existing O(dest) is left alone and the task
        reports no change.
    type: bool
    default: false
  backup:
    description: With O(force), keep a timestamped copy of the archive being replaced.
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
notes:
  - In check mode the module reports whether the archive would be written, and the steps.
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.no_diff
  - homelab.postmortem.host
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
  returned: when O(force) replaced an archive and O(backup) is true
  type: str
diff:
  description:
    - Always empty, in check mode too. The archive is binary, so no diff is shown; RV(steps) lists the podman
      commands that run (or would), and RV(size), RV(sha256) and RV(owners) describe the archive written.
  returned: always
  type: list
  elements: dict
backups:
  description:
    - With O(force) and O(backup), the archive O(dest) held before, copied beside it before the new one was renamed
      over it and named C(<dest>.<UTC time>.bak), the same path as RV(backup_file).
    - Empty when O(dest) was new, with O(backup=false), in check mode and when O(dest) exists and O(force) is off.
  returned: always
  type: list
  elements: str
  sample: [/srv/backup/db.tar.20261201T131512Z.bak]
verified:
  description:
    - Whether O(dest), read back after the rename, has the checksum RV(sha256) taken of it once it was in place.
      The owners were checked before, in the temporary file (RV(owners)); an archive that fails that check is never
      renamed onto O(dest). False in check mode and when O(dest) exists and O(force) is off.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When O(dest) did not read back with that checksum, whether O(dest) was put back. The replaced archive is copied
      back from its backup or, when O(dest) was new, the archive written is removed. With O(force) and O(backup=false)
      the archive written is removed too, but the one it replaced cannot be put back, so it is false and RV(msg) says so.
    - False on every other failure. A failed podman command or owner check never touches O(dest); the temporary
      container, image and file are removed either way.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - C(exported <container> to <dest> through a commit); in check mode C(would export <container> through a commit);
      when O(dest) exists and O(force) is off, that O(dest) exists and O(force=true) exports again.
    - On a failure, the podman command or the owner check that failed, and any temporary that could not be removed.
    - "When O(dest) is on a read-only mount, check mode adds C(; it cannot be written now: mounted read-only:
      <mount> (<dest>)), and a run fails with that text and C(; nothing was changed) before anything is committed."
  returned: always
  type: str
  sample: exported db to /srv/backup/db.tar through a commit
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, fix_protocol
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import safe_export
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner


class SafeExportFix(fix_protocol.Fix):
    """Plan: whether to export and the podman steps; apply: the export, its owners verified before it
    replaces I(dest) (podman/safe_export.py); verify: I(dest) reads back with the archive's checksum;
    roll back: the replaced archive back from its backup, or a new one removed."""

    def __init__(self, job, container, force):
        self.job = job
        self.container = container
        self.force = force

    def plan(self):
        unchanged = self.job.unchanged_reason(self.force)
        if unchanged:
            return fix_protocol.Plan(result=dict(dest=self.job.dest, steps=[]), msg=unchanged)
        return fix_protocol.Plan(changed=True, result=dict(dest=self.job.dest, steps=self.job.planned_steps()),
                                 msg='would export %s through a commit' % self.container,
                                 warnings=self.job.warnings, replaces=os.path.lexists(self.job.dest),
                                 targets=[self.job.dest])

    def found(self):
        return {'dest': self.job.dest, 'steps': self.job.steps}

    def apply(self, plan, write):
        plan.result['steps'] = self.job.steps
        try:
            self.job.run()
        finally:
            plan.result.update(self.job.result)
        plan.msg = 'exported %s to %s through a commit' % (self.container, self.job.dest)
        return [self.job.result['backup_file']] if self.job.result.get('backup_file') else []

    def verify(self, plan):
        if safe_export.sha256(self.job.dest) != self.job.result['sha256']:
            return ['%s does not read back with the checksum of the archive written' % self.job.dest]
        return []

    def roll_back(self, plan, write):
        backup, dest = self.job.result.get('backup_file'), self.job.dest
        try:
            if backup:
                staged = filewrite.staging_path(dest)
                filewrite.copy_file(backup, staged)
                filewrite.install_file(staged, dest, False)
            else:
                os.unlink(dest)
        except (IOError, OSError) as exc:
            return ['%s (%s)' % (dest, exc.strerror or exc)]
        if not backup and plan.details.get('replaces'):
            # The archive written is removed as it does not read back, but nothing can bring back the one it replaced.
            return ['%s (the archive it replaced had no backup, backup is off; the one written was removed)' % dest]
        return []


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
    ctx = AuditContext(runner=CommandRunner(timeout=params['timeout']), which=module.get_bin_path)
    try:
        job = safe_export.SafeExport(ctx, params['container'], params['dest'],
                                     safe_export.expected_owners(params['expect_owners']), pause=params['pause'],
                                     mode=params['mode'], backup=params['backup'])
    except HostInputError as exc:
        module.fail_json(msg=str(exc), dest=params['dest'], steps=[])
    fix_protocol.run(module, SafeExportFix(job, params['container'], params['force']))


if __name__ == '__main__':
    main()
