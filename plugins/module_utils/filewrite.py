# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How remediation modules write: all files or none, backed up first, each replaced atomically."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import time


def _tmp_path(path):
    return os.path.join(os.path.dirname(path), '.%s.postmortem.tmp' % os.path.basename(path))


def _stage(module, path, before, after):
    """The new text in a temporary file beside ``path``, with the owner, mode (and SELinux context)
    the file has now; a new file (a drop-in) gets 0644 in a directory created 0755."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = _tmp_path(path)
    with open(tmp, 'wb') as handle:
        handle.write(after.encode('utf-8'))
    if before is None or not os.path.exists(path):
        os.chmod(tmp, 0o644)
    else:
        current = os.stat(path)
        os.chmod(tmp, current.st_mode & 0o7777)
        if (current.st_uid, current.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(tmp, current.st_uid, current.st_gid)
        if module.selinux_enabled():
            module.set_context_if_different(tmp, module.selinux_context(path), False)
    return tmp


def _backup(path):
    """A copy beside the file, named as AnsibleModule.backup_local names its backups."""
    name = '%s.%s.%s~' % (path, os.getpid(), time.strftime('%Y-%m-%d@%H:%M:%S'))
    shutil.copy2(path, name)
    return name


def _put_back(module, path, before):
    """The text read before back in place (staged and renamed like the change), or a new file removed."""
    if before is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    os.rename(_stage(module, path, before, before), path)


def write_all(module, writes, backup):
    """writes: [(path, before or None, after_text)]. Returns the backup paths.

    All or nothing: every new text is written to a temporary file beside its file first and every
    existing file is backed up; only then are the files replaced (a rename each). When a step fails
    (a read-only filesystem, a full disk, a permission), the files already replaced are put back from
    the text read before, the temporary files are removed, and the module fails saying what it
    did and where the backups are.
    """
    staged, backups, replaced = [], [], []
    step = 'prepare'
    try:
        for path, before, after in writes:
            step = 'write the new text of %s beside it' % path
            staged.append(_stage(module, path, before, after))
        for path, before, _after in writes:
            if before is not None and backup and os.path.exists(path):
                step = 'back up %s' % path
                backups.append(_backup(path))
        for (path, before, _after), tmp in zip(writes, staged):
            step = 'replace %s' % path
            os.rename(tmp, path)
            replaced.append((path, before))
        return backups
    except (IOError, OSError) as exc:
        reason = '%s: %s' % (step, exc.strerror or exc)
    for tmp in staged:
        if os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass
    restored, not_restored = [], []
    for path, before in reversed(replaced):
        try:
            _put_back(module, path, before)
            restored.append(path)
        except (IOError, OSError) as exc:
            not_restored.append('%s (%s)' % (path, exc.strerror or exc))
    if not_restored:
        outcome = ('%s could NOT be put back; the backups are %s' % (', '.join(not_restored), ', '.join(backups) or 'none'))
    elif restored:
        outcome = '%s put back as it was; nothing is changed' % ', '.join(restored)
    else:
        outcome = 'nothing was changed'
    if backups and not not_restored:
        outcome += '; backups: %s' % ', '.join(backups)
    module.fail_json(msg='could not %s (%s)' % (reason, outcome), backups=backups, restored=restored,
                     not_restored=not_restored)
