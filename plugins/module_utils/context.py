# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a detection may see of a host, in one object.

Detections never call os.uname(), os.geteuid(), open('/proc/...') or
subprocess themselves: they ask the context. The module builds it for the live
host (or for an image through ``root``); tests build it over fixture trees and
fake command runners.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import DEFAULT_DETECTION_TIMEOUT, CommandRunner

DEFAULT_MAX_INSTANCES = 200


def _which(name):
    for directory in os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin').split(os.pathsep) + ['/usr/sbin', '/sbin']:
        candidate = os.path.join(directory, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class AuditContext(object):
    """Host view for detections.

    root: where files are read from ('/' for the live host, a mount point for an image).
    live: whether processes, sysfs and the running kernel belong to the host
          being audited. False for an image: there is nothing running in it.
    runner: the CommandRunner every command goes through (timeouts, output bound);
          ``run_command`` replaces its ``run`` (tests pass fakes).
    euid: the effective user id (default: the process's, read when asked).
    detection_timeout: seconds each detection's commands may take together.
    max_instances: instances one finding keeps (the most serious); the rest are counted.
    """

    def __init__(self, root='/', live=None, proc_root=None, sys_root=None, kernel_release=None,
                 probes=(), settings=None, run_command=None, which=None, runner=None, euid=None,
                 detection_timeout=DEFAULT_DETECTION_TIMEOUT, max_instances=DEFAULT_MAX_INSTANCES):
        self.root = root or '/'
        self.live = (self.root == '/') if live is None else live
        self.proc_root = proc_root or '/proc'
        self.sys_root = sys_root or '/sys'
        if kernel_release is None and self.live:
            kernel_release = os.uname()[2]
        self.kernel_release = kernel_release
        self.probes = frozenset(probes or ())
        self.settings = settings or {}
        self.runner = runner or CommandRunner()
        self.run_command = run_command or self.runner.run
        self.which = which or _which
        self._euid = euid
        self.detection_timeout = detection_timeout
        self.max_instances = max_instances
        self._process_cache = {}
        self._shared = {}

    @property
    def euid(self):
        return os.geteuid() if self._euid is None else self._euid

    @property
    def is_root(self):
        return self.euid == 0

    @property
    def user_name(self):
        try:
            return pwd.getpwuid(self.euid).pw_name
        except KeyError:
            return 'uid %d' % self.euid

    def path(self, absolute):
        """A path of the audited system, under ``root``; in an image, symbolic links resolve inside
        the image and an escape is a ReadProblem (see hostio.resolve_under)."""
        if self.root == '/':
            return absolute
        return hostio.resolve_under(self.root, absolute)

    def sys_path(self, relative):
        return os.path.join(self.sys_root, relative.lstrip('/'))

    def processes(self, key, wanted):
        """Processes matching ``wanted(argv0_basename)``, read once per key per run."""
        if not self.live:
            return [], []
        if key not in self._process_cache:
            self._process_cache[key] = hostio.list_processes(self.proc_root, wanted)
        return self._process_cache[key]

    def shared(self, key, factory):
        """One object per key per run, so detections that ask the same tool share its answers."""
        if key not in self._shared:
            self._shared[key] = factory()
        return self._shared[key]

    def settings_for(self, detection):
        """The detection's settings: the run's validated values over the spec's defaults."""
        merged = dict((key, spec.get('default')) for key, spec in detection.SETTINGS.items())
        merged.update(self.settings.get(detection.ID) or {})
        return merged
