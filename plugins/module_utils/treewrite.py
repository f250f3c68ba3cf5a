# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a fix replaces a whole directory (the vLLM fold replaces an adapter directory): the new one
made durable beside it, the old one backed up as hard links, then the two swapped in one step, so
the directory is never missing. Each step is recorded for the power-cut test as filewrite's are.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import platform
import shutil
import tempfile
from stat import S_ISDIR, S_ISLNK, S_ISREG

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite

# renameat2(2) flags and syscall numbers, for a Python without os.renameat2 and a libc without the wrapper.
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_RENAMEAT2_SYSCALL = {'x86_64': 316, 'aarch64': 276, 'armv7l': 382, 'armv6l': 382, 'i686': 353, 'i386': 353}


def exchange(first, second):
    """Swap the two names atomically (renameat2 with RENAME_EXCHANGE, Linux 3.15+: ext4, xfs, btrfs,
    tmpfs, overlayfs; vfat from 6.0). An OSError (EINVAL, ENOSYS) where the kernel or filesystem cannot."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    args = (_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE)
    call = getattr(libc, 'renameat2', None)
    if call is not None:
        call.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
        result = call(*args)
    elif platform.machine() in _RENAMEAT2_SYSCALL:
        libc.syscall.restype = ctypes.c_long
        result = libc.syscall(ctypes.c_long(_RENAMEAT2_SYSCALL[platform.machine()]), ctypes.c_int(args[0]),
                              ctypes.c_char_p(args[1]), ctypes.c_int(args[2]), ctypes.c_char_p(args[3]),
                              ctypes.c_uint(args[4]))
    else:
        raise OSError(errno.ENOSYS, 'renameat2 is not available on %s' % platform.machine())
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number), first)
    filewrite.note('exchange', first, second)


def sync_tree(top):
    """fsync every file and directory under ``top`` (deepest first), then ``top``'s parent."""
    if filewrite.TRACE is not None:
        for directory, _dirs, files in os.walk(top):
            filewrite.note('mkdir', directory)
            for name in sorted(files):
                filewrite.note_written(os.path.join(directory, name))
    for directory, _dirs, files in os.walk(top, topdown=False):
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                filewrite.fsync_file(path)
        filewrite.fsync_directory(directory)
    filewrite.fsync_directory(os.path.dirname(os.path.abspath(top)))


def link_tree(source, dest):
    """A new directory ``dest`` holding ``source``'s files as hard links (copies where the filesystem
    has no links), durable when this returns. The files are never written in place afterwards (a fix
    replaces the directory), so the links keep the old contents."""
    info = os.stat(source)
    os.mkdir(dest, 0o700)
    filewrite.note('mkdir', dest)
    # The directory as it was, not as the umask and the module's user would make it (a put back restores it).
    os.chmod(dest, info.st_mode & 0o7777)
    if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(dest, info.st_uid, info.st_gid)
        except OSError:
            pass  # not root: the copy is ours, as any copy we make is
    try:
        for name in sorted(os.listdir(source)):
            src, dst = os.path.join(source, name), os.path.join(dest, name)
            info = os.lstat(src)
            if S_ISDIR(info.st_mode):
                link_tree(src, dst)
            elif S_ISLNK(info.st_mode):
                os.symlink(os.readlink(src), dst)
                filewrite.note('symlink', dst)
            else:
                # Never opened: a named pipe or a device is linked, not read.
                try:
                    os.link(src, dst)
                    filewrite.note('link', src, dst)
                except OSError as exc:
                    if not S_ISREG(info.st_mode) or (exc.errno not in (errno.EXDEV, errno.EMLINK)
                                                     and exc.errno not in filewrite.UNSUPPORTED):
                        raise
                    filewrite.copy_file(src, dst)
        filewrite.fsync_directory(dest)
        filewrite.fsync_directory(os.path.dirname(os.path.abspath(dest)))
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


class ReplaceFailed(Exception):
    """replace_directory stopped; the message says what is left where."""


def replace_directory(work, dest):
    """``work`` (a complete new directory beside ``dest``) in ``dest``'s place; returns the backup of the
    old ``dest`` (backup_path, hard links) or None when there was none.

    ``dest`` is never missing: the backup is made durable first, then the two directories swap names
    in one step (exchange), then the old one is removed from its temporary name. Renaming ``dest``
    aside and then ``work`` in would leave no ``dest`` between the two. ReplaceFailed says what is
    left: ``work`` is removed unless the swap happened."""
    parent = os.path.dirname(os.path.abspath(dest))
    try:
        sync_tree(work)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise ReplaceFailed('could not make the new %s durable: %s; it was removed, %s is unchanged'
                            % (work, exc.strerror or exc, dest))
    if not os.path.lexists(dest):
        try:
            filewrite.rename(work, dest)
            filewrite.fsync_directory(parent)
        except OSError as exc:
            shutil.rmtree(work, ignore_errors=True)
            raise ReplaceFailed('could not move the new directory to %s: %s; it was removed, nothing was changed'
                                % (dest, exc.strerror or exc))
        return None
    backup = filewrite.backup_path(dest)
    try:
        link_tree(dest, backup)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise ReplaceFailed('could not back up %s to %s: %s; the new copy was removed, %s is unchanged'
                            % (dest, backup, exc.strerror or exc, dest))
    try:
        exchange(work, dest)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(backup, ignore_errors=True)
        raise ReplaceFailed('could not swap the new directory into %s (renameat2 RENAME_EXCHANGE): %s; the new '
                            'copy was removed, %s is unchanged' % (dest, exc.strerror or exc, dest))
    _sync_after_swap(parent)
    # ``work`` now holds the old directory's names; its files live on in the backup.
    shutil.rmtree(work, ignore_errors=True)
    filewrite.note('rmtree', work)
    filewrite.fsync_directory(parent)
    return backup


def _sync_after_swap(parent):
    """The swapped names made durable. Past the swap, a failure here changes nothing that was done (``dest`` is
    the directory it was swapped to, the other one still has its files), so it is not a failure of the step:
    cleaning up as if it were would delete the directory just swapped out."""
    try:
        filewrite.fsync_directory(parent)
    except OSError:
        pass


def restore_directory(backup, dest):
    """Put ``backup`` (replace_directory's hard links of the old ``dest``) back in ``dest``'s place and keep
    it: a hard-link copy of the backup swaps names with ``dest`` in one step, then what was in ``dest`` is
    removed. ``dest`` is never missing, and the backup a result names stays where it said. An OSError
    leaves ``dest`` as it was (the copy is removed)."""
    parent = os.path.dirname(os.path.abspath(dest))
    holder = tempfile.mkdtemp(prefix='.%s.restore-' % os.path.basename(dest), dir=parent)
    try:
        copy = os.path.join(holder, 'copy')
        link_tree(backup, copy)
        exchange(copy, dest)
        _sync_after_swap(parent)
    finally:
        # After the swap ``copy`` holds the directory that was put back out of the way.
        shutil.rmtree(holder, ignore_errors=True)
        filewrite.note('rmtree', holder)
        filewrite.fsync_directory(parent)
