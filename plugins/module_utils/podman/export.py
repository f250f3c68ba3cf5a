# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the owners of known files out of a tar stream, bounded in bytes and time.

Used twice: the ``export_owners`` probe streams ``podman export`` straight into
the reader (nothing is written to disk), and podman_safe_export (safe_export.py)
checks the archive it wrote before it reports success.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import tarfile
import threading

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner, decode, kill_group

# Files that belong to root in every ordinary Linux image: a single one that is
# not 0/0 proves the archive's owners are shifted.
ROOT_OWNED = ('etc/passwd', 'etc/group', 'usr/bin/su', 'bin/su')
STOP_AFTER = 'usr/bin/su'


class StreamProblem(HostInputError):
    pass


class _BoundedReader(object):
    def __init__(self, raw, limit):
        self._raw = raw
        self._limit = limit
        self.count = 0

    def read(self, size=-1):
        data = self._raw.read(size)
        self.count += len(data)
        if self.count > self._limit:
            raise StreamProblem('read more than %d bytes without finding every file' % self._limit)
        return data


def normalize(name):
    """A member's path as the wanted paths are written: no leading ./ or /, no trailing /."""
    while name.startswith('./'):
        name = name[2:]
    return name.lstrip('/').rstrip('/')


def owners_in_tar(fileobj, wanted=ROOT_OWNED, limit=None, stop_after=STOP_AFTER, files_only=None):
    """{path: {'uid', 'gid', 'mode'}} for the wanted paths found in the stream.

    A path in ``files_only`` (default: every wanted path) counts only as a regular file; any
    other wanted path counts whatever it is (a directory a person names, say). Stops as soon
    as every wanted path is seen, or once the stream is past ``stop_after`` (podman writes
    members in lexical order; None reads on to the end).
    """
    source = _BoundedReader(fileobj, limit) if limit else fileobj
    found = {}
    wanted = set(wanted)
    files_only = wanted if files_only is None else set(files_only)
    try:
        with tarfile.open(fileobj=source, mode='r|') as archive:
            for member in archive:
                name = normalize(member.name)
                if name in wanted and (member.isfile() or name not in files_only):
                    found[name] = {'uid': member.uid, 'gid': member.gid, 'mode': '%04o' % member.mode}
                if wanted.issubset(found) or (stop_after and name > stop_after and found):
                    break
    except tarfile.TarError as exc:
        raise StreamProblem('not a readable tar stream: %s' % exc)
    return found


def shifted(found):
    """The wanted files whose owner is not 0/0."""
    return dict((path, owner) for path, owner in found.items() if (owner['uid'], owner['gid']) != (0, 0))


def owners_of_command(cmd, timeout, limit, wanted=ROOT_OWNED, runner=None):
    """Run ``cmd`` (which writes a tar to stdout) and read owners from its output.

    The command's whole process group is killed once the reader has what it
    needs, on timeout, or past ``limit`` bytes: ``runuser ... sh -c 'podman
    export | cat'`` leaves nothing behind. Returns (found, bytes_read).
    """
    runner = runner or CommandRunner(timeout=timeout)
    try:
        proc = runner.spawn(cmd)
    except HostInputError as exc:
        raise StreamProblem(str(exc))
    expired = []

    def expire():
        expired.append(True)
        kill_group(proc)

    timer = threading.Timer(timeout, expire)
    timer.start()
    reader = _BoundedReader(proc.stdout, limit)
    found, problem = {}, None
    try:
        found = owners_in_tar(reader, wanted)
    except StreamProblem as exc:
        problem = exc
    finally:
        timer.cancel()
        kill_group(proc)
        proc.stdout.close()
        err = decode(proc.stderr.read(4096))
        proc.stderr.close()
        proc.wait()
    if expired:
        raise StreamProblem('no complete answer within %d s' % timeout)
    if problem is not None:
        if reader.count == 0:
            raise StreamProblem('the command exited with rc %s and no tar output: %s' % (proc.returncode, _reason(err)))
        raise problem
    return found, reader.count


def _reason(err):
    return podman.first_line(err) or 'no message'
