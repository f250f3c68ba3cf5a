# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How remediation modules write: all files or none, backed up first, each replaced so that a power
cut at any moment leaves it old or new. Every fix module writes through here.

The order (docs/crash-safety.md gives the reasons, with the kernel's source, and the power-cut test
that checks every crash state of it):

1. the new text in a staging file, fsynced; its directory fsynced;
2. the backup copied, fsynced, its directory fsynced: durable before the original is touched;
3. the old file held open (on FAT the kernel frees a replaced file's clusters at its last close:
   fs/fat/inode.c fat_evict_inode), renamed over (never unlinked first: vfat_rename reuses the
   existing name's directory entry, fs/fat/namei_vfat.c), the staging directory fsynced, then the
   file itself (on FAT that writes the entry that points at the new clusters), then let go.

On FAT (a Raspberry Pi's /boot/firmware) the staging file lives in a subdirectory: the one crash
state FAT's rename cannot avoid (the new entry written, the staging entry not yet removed, both
pointing at the same clusters) is then repaired by fsck.fat in favour of the file, and a staging
file with the file's own text is never deleted here (that would free the file's clusters).

A whole directory is replaced by treewrite.py, in the same steps.

Every fix module names its backups with :func:`backup_path`, on every filesystem they write to:
FAT refuses ``:`` in names (the names ``AnsibleModule.backup_local`` makes) and has no owners or
permission bits to copy, so a ``chmod``/``chown`` there is refused (kernel vfat: EPERM) or not
implemented at all (fusefat: ENOSYS).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import time
from stat import S_ISREG

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

BACKUP_SUFFIX = '.bak'
# What a filesystem without owners or permission bits answers to chown/chmod/utime.
UNSUPPORTED = frozenset(e for e in (getattr(errno, 'ENOSYS', None), getattr(errno, 'ENOTSUP', None),
                                    getattr(errno, 'EOPNOTSUPP', None), errno.EPERM) if e is not None)
# Filesystems that keep neither owners nor permission bits (FAT, exFAT, NTFS through FUSE): what cannot
# be kept there is not an error. Anywhere else, a chown/chmod that fails is one.
OWNERLESS_FILESYSTEMS = frozenset(('vfat', 'msdos', 'fat', 'exfat', 'ntfs', 'ntfs3', 'fuseblk', 'fuse.fusefat',
                                   'fuse.exfat', 'fuse.ntfs-3g'))
# FAT: staging files go in STAGING_DIR beside the file (see the module's docstring).
FAT_FILESYSTEMS = frozenset(('vfat', 'msdos', 'fat', 'fuse.fusefat'))
STAGING_DIR = '.postmortem-staging'
# What a filesystem that cannot sync a directory answers to fsync on one.
_NO_DIRECTORY_SYNC = frozenset(e for e in (errno.EINVAL, getattr(errno, 'ENOTSUP', None),
                                           getattr(errno, 'EOPNOTSUPP', None)) if e is not None)

# The power-cut test (tests/unit/powercut) sets TRACE to a list: every file-system step of a write is
# appended to it, in order, as (operation, path[, path or data]). None (the default) records nothing.
TRACE = None


def note(*step):
    """Record one file-system step for the power-cut test (TRACE), here and in treewrite."""
    if TRACE is not None:
        TRACE.append(step)


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
    return hostio.mount_entry(path)[1]


def _keeps_owners(path):
    return filesystem_type(os.path.dirname(path) or '.') not in OWNERLESS_FILESYSTEMS


def _is_fat(directory):
    return filesystem_type(directory or '.') in FAT_FILESYSTEMS


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
            if exc.errno not in UNSUPPORTED or _keeps_owners(target):
                raise
    if reference is not None and module.selinux_enabled():
        module.set_context_if_different(target, module.selinux_context(reference), False)


# --- the steps every write is made of ---------------------------------------------------------------


def fsync_directory(directory):
    """Make the names created, renamed and removed in ``directory`` durable. A filesystem that cannot
    sync a directory (EINVAL) offers nothing more to do."""
    fd = os.open(directory or '.', os.O_RDONLY | getattr(os, 'O_DIRECTORY', 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIRECTORY_SYNC:
            raise
    finally:
        os.close(fd)
    note('fsync_dir', directory or '.')


def fsync_file(path):
    """fsync ``path`` by name (a file written by another process, or the file after a rename: on FAT
    this writes the directory entry that points at its clusters, fs/fat/inode.c __fat_write_inode)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0) | getattr(os, 'O_NOFOLLOW', 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    note('fsync', path)


def make_directories(directory, mode=0o755):
    """Create ``directory`` and the missing ones above it, each made durable in its parent."""
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for path in reversed(missing):
        os.mkdir(path, mode)
        note('mkdir', path)
        fsync_directory(os.path.dirname(path))


def _unlink(path):
    os.unlink(path)
    note('unlink', path)


def rename(source, dest):
    os.rename(source, dest)
    note('rename', source, dest)


def _write_descriptor(fd, path, data):
    """``data`` into the new file open on ``fd``, fsynced; closes ``fd``."""
    with os.fdopen(fd, 'wb') as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    note('write', path, data)
    note('fsync', path)


def write_new(path, data, mode=0o600):
    """``data`` (bytes or text) in a file created new at ``path`` (never over or through something
    already there), fsynced, its name made durable. A partial file is removed."""
    if not isinstance(data, bytes):
        data = data.encode('utf-8')
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_CLOEXEC', 0)
    fd = os.open(path, flags, mode)
    note('create', path)
    try:
        _write_descriptor(fd, path, data)
        fsync_directory(os.path.dirname(path))
    except BaseException:
        _remove([path])
        raise
    return path


def staging_path(path):
    """Where the new text of ``path`` is written first: beside it, or on FAT in STAGING_DIR beside it."""
    directory, name = os.path.split(path)
    if _is_fat(directory):
        directory = os.path.join(directory, STAGING_DIR)
    return os.path.join(directory, '.%s.postmortem.tmp' % name)


def note_written(path):
    """For the trace: a file another program (or the caller) wrote, as the create and write it was."""
    if TRACE is not None:
        note('create', path)
        note('write', path, _read_or_none(path))


def _read_or_none(path):
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _clear_leftover(tmp, path):
    """Remove a staging file a run cut short left behind, unless it may share its clusters with ``path``.

    On FAT a power cut between the rename and the fsync after it can leave the staging name pointing
    at the clusters ``path`` now uses (the entry is rewritten, the staging entry not yet removed).
    Deleting it would free the file's clusters; fsck.fat keeps the file and truncates the staging file
    (dosfstools check.c: a directory's files are checked before its subdirectories', and the second
    owner of a shared cluster is truncated)."""
    if not os.path.lexists(tmp):
        return
    if _is_fat(os.path.dirname(path)):
        old = _read_or_none(tmp)
        if old is not None and old == _read_or_none(path):
            raise IOError(errno.EEXIST, '%s is left from a run a power cut interrupted and may share its clusters with %s; '
                                        'run fsck.fat (fsck.vfat -a) on that partition first, then run again' % (tmp, path))
    _unlink(tmp)


def _stage(module, path, before, after, staged):
    """The new text in a staging file (recorded in ``staged`` before it exists, so a failure half way
    still removes it), fsynced, with the owner, mode and SELinux context the file has now; a new file
    (a drop-in) gets 0644 in a directory created 0755."""
    make_directories(os.path.dirname(path))
    tmp = staging_path(path)
    make_directories(os.path.dirname(tmp))
    _clear_leftover(tmp, path)
    staged.append(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, 'O_NOFOLLOW', 0), 0o644)
    note('create', tmp)
    _write_descriptor(fd, tmp, after.encode('utf-8'))
    if before is not None and os.path.exists(path):
        _apply_metadata(module, tmp, os.stat(path), reference=path)
    return tmp


def _replace(tmp, path):
    """``tmp`` (written and fsynced) in ``path``'s place, durably. The old file is held open until the
    new one is durable: on FAT its clusters are freed at its last close, and a crash must never find
    ``path`` pointing at freed clusters. A rename over the old file, never an unlink first: the name
    is never missing."""
    hold = None
    if os.path.exists(path):
        try:
            hold = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
            note('hold', path)
        except OSError:
            hold = None
    try:
        rename(tmp, path)
        fsync_directory(os.path.dirname(tmp))
        if os.path.dirname(tmp) != os.path.dirname(path):
            fsync_directory(os.path.dirname(path))
        fsync_file(path)
    finally:
        if hold is not None:
            os.close(hold)
            note('release', path)


def _remove_staging_dirs(paths):
    """The FAT staging directories of ``paths``, removed when empty (and the removal made durable)."""
    for directory in sorted(set(os.path.dirname(p) for p in paths)):
        if os.path.basename(directory) != STAGING_DIR:
            continue
        try:
            os.rmdir(directory)
        except OSError:
            continue
        note('rmdir', directory)
        fsync_directory(os.path.dirname(directory))


def copy_file(source, dest):
    """Copy ``source`` to a new file ``dest`` (never over an existing one): contents, fsynced, then
    mode, owner and times where the filesystem keeps them. A partial copy is removed on failure.
    shutil.copy2 is not used: its copystat fails on fusefat, after the data was written.
    ``source`` must be a regular file: a FIFO or a device in a config file's place would block the
    copy or never end, so anything else is an OSError (EINVAL) that names the file.
    The new name is durable only once its directory is fsynced (backup_file does that)."""
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
    note('create', dest)
    copied = [] if TRACE is not None else None
    try:
        with os.fdopen(fd, 'wb') as out:
            with os.fdopen(src_fd, 'rb') as src:
                while True:
                    chunk = src.read(1024 * 1024)
                    if not chunk:
                        break
                    out.write(chunk)
                    if copied is not None:
                        copied.append(chunk)
            out.flush()
            os.fsync(out.fileno())
        note('write', dest, b''.join(copied or []))
        note('fsync', dest)
        _apply_metadata(_NoSelinux, dest, stat)
        try:
            os.utime(dest, (stat.st_atime, stat.st_mtime))
        except OSError as exc:
            if exc.errno not in UNSUPPORTED:
                raise
    except BaseException:
        _remove([dest])
        raise
    return dest


class _NoSelinux(object):
    @staticmethod
    def selinux_enabled():
        return False


def backup_file(path):
    """A copy of ``path`` beside it, named by :func:`backup_path`, durable (data and name) when this
    returns; returns its path."""
    backup = copy_file(path, backup_path(path))
    try:
        fsync_directory(os.path.dirname(backup))
    except BaseException:
        _remove([backup])
        raise
    return backup


def install_file(tmp, dest, backup=True):
    """Move ``tmp`` (a complete file another program wrote beside ``dest``) into ``dest``'s place the
    way write_all replaces a file: ``tmp`` fsynced, ``dest`` backed up durably first, renamed over,
    made durable. Returns the backup path or None; an OSError leaves ``dest`` as it was unless the
    rename itself went through (then ``dest`` is the new file)."""
    note_written(tmp)
    fsync_file(tmp)
    fsync_directory(os.path.dirname(tmp))
    saved = backup_file(dest) if backup and os.path.exists(dest) else None
    _replace(tmp, dest)
    return saved


def remove_files(paths):
    """Remove ``paths`` (those that exist), each removal made durable; returns the ones removed. Each file
    is held open until its name's removal is durable: on FAT its clusters are freed at the last close,
    and a crash must not find the name pointing at freed clusters."""
    removed, holds = [], []
    try:
        for path in paths:
            if not os.path.lexists(path):
                continue
            try:
                holds.append((os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0)), path))
                note('hold', path)
            except OSError:
                pass
            _unlink(path)
            removed.append(path)
        for directory in sorted(set(os.path.dirname(p) for p in removed)):
            fsync_directory(directory)
    finally:
        for fd, path in holds:
            os.close(fd)
            note('release', path)
    return removed


def _put_back(module, path, before):
    """The text read before back in place (staged and renamed like the change), or a new file removed."""
    if before is None:
        if os.path.lexists(path):
            _unlink(path)
            fsync_directory(os.path.dirname(path))
        return
    staged = []
    try:
        _replace(_stage(module, path, before, before, staged), path)
    finally:
        _remove(staged)


def _remove(paths):
    for tmp in paths:
        if os.path.lexists(tmp):
            try:
                _unlink(tmp)
            except OSError:
                pass


def write_all(module, writes, backup, fail=None):
    """writes: [(path, before or None, after_text)]. Returns the backup paths. ``fail(msg, backups,
    restored, not_restored)``: called instead of the module's fail_json (fix_protocol raises, so that
    its result and a roll back in progress go on).

    All or nothing: every new text is staged and fsynced and every existing file is backed up
    durably first; only then are the files replaced, one at a time, each made durable before the
    next (see the module's docstring for the order and why). When a step fails (a read-only
    filesystem, a full disk, a permission), the files already replaced are put back from the text
    read before, the staging files and any partial backup are removed, and the module fails saying
    what it did and where the backups are.
    """
    staged, backups, replaced = [], [], []
    step = 'prepare'
    try:
        for path, before, after in writes:
            step = 'write the new text of %s beside it' % path
            _stage(module, path, before, after, staged)
        for directory in sorted(set(os.path.dirname(tmp) for tmp in staged)):
            step = 'make the staged files in %s durable' % directory
            fsync_directory(directory)
        for path, before, _after in writes:
            if before is not None and backup and os.path.exists(path):
                step = 'back up %s' % path
                backups.append(backup_file(path))
        for (path, before, _after), tmp in zip(writes, staged):
            step = 'replace %s' % path
            replaced.append((path, before))
            _replace(tmp, path)
        _remove_staging_dirs(staged)
        return backups
    except (IOError, OSError) as exc:
        reason = '%s: %s' % (step, exc.strerror or exc)
    if replaced and os.path.lexists(staged[len(replaced) - 1]):
        replaced.pop()  # its rename never happened
    _remove(staged)
    _remove_staging_dirs(staged)
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
    (fail or module.fail_json)(msg='could not %s (%s)' % (reason, outcome), backups=backups, restored=restored,
                               not_restored=not_restored)
