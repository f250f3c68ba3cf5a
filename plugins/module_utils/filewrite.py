# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How remediation modules write: all files or none, backed up first, each replaced atomically.

Every fix module names its backups with :func:`backup_path`, on every filesystem they write to:
a Raspberry Pi's ``/boot/firmware`` is FAT, which refuses ``:`` in names (the names
``AnsibleModule.backup_local`` makes) and has no owners or permission bits to copy, so a
``chmod``/``chown`` there is refused (kernel vfat: EPERM) or not implemented at all (fusefat: ENOSYS).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import time
from stat import S_ISREG

BACKUP_SUFFIX = '.bak'
# What a filesystem without owners or permission bits answers to chown/chmod/utime.
_UNSUPPORTED = frozenset(e for e in (getattr(errno, 'ENOSYS', None), getattr(errno, 'ENOTSUP', None),
                                     getattr(errno, 'EOPNOTSUPP', None), errno.EPERM) if e is not None)
# Filesystems that keep neither owners nor permission bits (FAT, exFAT, NTFS through FUSE): what cannot
# be kept there is not an error. Anywhere else, a chown/chmod that fails is one.
OWNERLESS_FILESYSTEMS = frozenset(('vfat', 'msdos', 'fat', 'exfat', 'ntfs', 'ntfs3', 'fuseblk', 'fuse.fusefat',
                                   'fuse.exfat', 'fuse.ntfs-3g'))


def backup_path(path, now=None):
    """A name for a backup of ``path`` that every filesystem we write to accepts, sorts by time and
    is not taken: ``config.txt.20261201T131512Z.bak`` (``-2``, ``-3`` ... before ``.bak`` when that
    second is taken). UTC, so the order holds across time zone changes."""
    stamp = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))
    base = '%s.%s' % (path.rstrip('/'), stamp)
    candidate, number = base + BACKUP_SUFFIX, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = '%s-%d%s' % (base, number, BACKUP_SUFFIX)
    return candidate


def filesystem_type(path):
    """The type of the filesystem ``path`` is on, from /proc/self/mountinfo; None when unknown."""
    try:
        with open('/proc/self/mountinfo', 'rb') as handle:
            lines = handle.read(4 * 1024 * 1024).decode('utf-8', 'replace').splitlines()
    except (IOError, OSError):
        return None
    target = os.path.realpath(path)
    best, best_type = '', None
    for line in lines:
        fields = line.split(' ')
        if ' - ' not in line or len(fields) < 5:
            continue
        mount_point = fields[4].replace('\\040', ' ').replace('\\011', '\t').replace('\\012', '\n').replace('\\134', '\\')
        after = line.split(' - ', 1)[1].split(' ')
        inside = target == mount_point or target.startswith(mount_point.rstrip('/') + '/')
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, after[0]
    return best_type


def _keeps_owners(path):
    return filesystem_type(os.path.dirname(path) or '.') not in OWNERLESS_FILESYSTEMS


def _apply_metadata(module, target, source_stat, reference=None):
    """Give ``target`` the owner and mode (and SELinux context of ``reference``) ``source_stat``
    describes, where the filesystem keeps them. Only what differs is changed, so a filesystem that
    gives every file the same owner and mode is never asked; a refusal there is no error."""
    current = os.stat(target)
    steps = []
    if (current.st_mode & 0o7777) != (source_stat.st_mode & 0o7777):
        steps.append(lambda: os.chmod(target, source_stat.st_mode & 0o7777))
    if (current.st_uid, current.st_gid) != (source_stat.st_uid, source_stat.st_gid):
        steps.append(lambda: os.chown(target, source_stat.st_uid, source_stat.st_gid))
    for step in steps:
        try:
            step()
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED or _keeps_owners(target):
                raise
    if reference is not None and module.selinux_enabled():
        module.set_context_if_different(target, module.selinux_context(reference), False)


def _tmp_path(path):
    return os.path.join(os.path.dirname(path), '.%s.postmortem.tmp' % os.path.basename(path))


def _stage(module, path, before, after, staged):
    """The new text in a temporary file beside ``path`` (recorded in ``staged`` before it exists,
    so a failure half way still removes it), with the owner, mode and SELinux context the file has
    now; a new file (a drop-in) gets 0644 in a directory created 0755."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    tmp = _tmp_path(path)
    staged.append(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, 'O_NOFOLLOW', 0), 0o644)
    with os.fdopen(fd, 'wb') as handle:
        handle.write(after.encode('utf-8'))
        handle.flush()
        os.fsync(handle.fileno())
    if before is not None and os.path.exists(path):
        _apply_metadata(module, tmp, os.stat(path), reference=path)
    return tmp


def copy_file(source, dest):
    """Copy ``source`` to a new file ``dest`` (never over an existing one): contents, then mode,
    owner and times where the filesystem keeps them. A partial copy is removed on failure.
    shutil.copy2 is not used: its copystat fails on fusefat, after the data was written.
    ``source`` must be a regular file: a FIFO or a device in a config file's place would block the
    copy or never end, so anything else is an OSError (EINVAL) that names the file."""
    # O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
    src_fd = os.open(source, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    try:
        stat = os.fstat(src_fd)
        if not S_ISREG(stat.st_mode):
            raise IOError(errno.EINVAL, '%s is not a regular file; nothing was copied' % source)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o600)
    except BaseException:
        os.close(src_fd)
        raise
    try:
        with os.fdopen(fd, 'wb') as out:
            with os.fdopen(src_fd, 'rb') as src:
                while True:
                    chunk = src.read(1024 * 1024)
                    if not chunk:
                        break
                    out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        _apply_metadata(_NoSelinux, dest, stat)
        try:
            os.utime(dest, (stat.st_atime, stat.st_mtime))
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                raise
    except BaseException:
        try:
            os.unlink(dest)
        except OSError:
            pass
        raise
    return dest


class _NoSelinux(object):
    @staticmethod
    def selinux_enabled():
        return False


def backup_file(path):
    """A copy of ``path`` beside it, named by :func:`backup_path`; returns its path."""
    return copy_file(path, backup_path(path))


def _put_back(module, path, before):
    """The text read before back in place (staged and renamed like the change), or a new file removed."""
    if before is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    staged = []
    try:
        os.rename(_stage(module, path, before, before, staged), path)
    finally:
        _remove(staged)


def _remove(paths):
    for tmp in paths:
        if os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_all(module, writes, backup):
    """writes: [(path, before or None, after_text)]. Returns the backup paths.

    All or nothing: every new text is written to a temporary file beside its file first and every
    existing file is backed up; only then are the files replaced (a rename each). When a step fails
    (a read-only filesystem, a full disk, a permission), the files already replaced are put back from
    the text read before, the temporary files and any partial backup are removed, and the module
    fails saying what it did and where the backups are.
    """
    staged, backups, replaced = [], [], []
    step = 'prepare'
    try:
        for path, before, after in writes:
            step = 'write the new text of %s beside it' % path
            _stage(module, path, before, after, staged)
        for path, before, _after in writes:
            if before is not None and backup and os.path.exists(path):
                step = 'back up %s' % path
                backups.append(backup_file(path))
        for (path, before, _after), tmp in zip(writes, staged):
            step = 'replace %s' % path
            os.rename(tmp, path)
            replaced.append((path, before))
        return backups
    except (IOError, OSError) as exc:
        reason = '%s: %s' % (step, exc.strerror or exc)
    _remove(staged)
    restored, not_restored = [], []
    for path, before in reversed(replaced):
        try:
            _put_back(module, path, before)
            restored.append(path)
        except (IOError, OSError) as exc:
            not_restored.append('%s (%s)' % (path, exc.strerror or exc))
    if not replaced:
        # Nothing was replaced: the backups made so far are copies of files that did not change.
        _remove(backups)
        backups = []
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
