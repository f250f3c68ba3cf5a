# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files as one llama-server sees them (FileView), and as a fix would leave them (OverlayView)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio


class FileView(object):
    """Reads files the way one server sees them: through /proc/PID/root for a live process (its
    mount namespace; links resolved inside it), under the audit's root otherwise. Relative paths
    are relative to the server's working directory."""

    def __init__(self, ctx, root=None, cwd=None):
        self.ctx = ctx
        self.root = root
        self.cwd = cwd
        self._texts = {}

    def absolute(self, path):
        if not path.startswith('/'):
            if not self.cwd:
                raise hostio.ReadProblem(path, 'is relative and the working directory is unknown', 'unreadable')
            path = os.path.join(self.cwd, path)
        return os.path.normpath(path)

    def host_path(self, path):
        path = self.absolute(path)
        if self.root:
            return hostio.resolve_under(self.root, path)
        return self.ctx.path(path)

    def read_text(self, path):
        """The file's text, or None when it does not exist; ReadProblem when it cannot be used.
        Read once per view (a router's children share their router's)."""
        if path not in self._texts:
            try:
                self._texts[path] = (self._read_text(path), None)
            except hostio.ReadProblem as problem:
                self._texts[path] = (None, problem)
        text, problem = self._texts[path]
        if problem:
            raise problem
        return text

    def _read_text(self, path):
        try:
            data = hostio.read_bytes(self.host_path(path))
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing':
                return None
            raise hostio.ReadProblem(path, problem.reason, problem.kind)
        if b'\x00' in data:
            raise hostio.ReadProblem(path, 'contains NUL bytes; it is not a text file', 'binary')
        try:
            return data.decode('utf-8')
        except UnicodeDecodeError as exc:
            raise hostio.ReadProblem(path, 'is not UTF-8 text (byte %d)' % exc.start, 'binary')

    def mtime(self, path):
        try:
            return os.stat(self.host_path(path)).st_mtime
        except (OSError, hostio.ReadProblem):
            return None

    def home_of(self, uid):
        """(getpwuid(uid)->pw_dir or None, why not, whether that answer is certain) from the server's
        /etc/passwd. A user missing from it is certain (llama.cpp then skips the file); an unknown uid
        or an unreadable passwd is not."""
        if uid is None:
            return None, 'the process\'s user id could not be read', False
        try:
            text = self.read_text('/etc/passwd')
        except hostio.ReadProblem as problem:
            return None, '/etc/passwd %s' % problem.reason, False
        for line in (text or '').splitlines():
            fields = line.split(':')
            if len(fields) >= 6 and fields[2] == str(uid):
                if fields[5]:
                    return fields[5], None, True
                return None, 'user %d has an empty home in /etc/passwd' % uid, True
        return None, 'user %d is not in /etc/passwd (getpwuid may also ask NSS, not read here)' % uid, True


class OverlayView(FileView):
    """A FileView where some files read as planned texts: to resolve a configuration as it would be."""

    def __init__(self, base, texts):
        super(OverlayView, self).__init__(base.ctx, base.root, base.cwd)
        self.base = base
        self.planned = dict((base.absolute(path), text) for path, text in texts.items())

    def _read_text(self, path):
        absolute = self.absolute(path)
        if absolute in self.planned:
            return self.planned[absolute]
        return self.base.read_text(path)

    def mtime(self, path):
        return None if self.absolute(path) in self.planned else self.base.mtime(path)

    def home_of(self, uid):
        return self.base.home_of(uid)
