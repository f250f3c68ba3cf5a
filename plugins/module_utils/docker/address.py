# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the Docker daemon's socket is, and the error every Docker failure is.

Apart from docker.api so that the audit can say "no Docker daemon socket" on every host
without loading (compiling, from the payload) the Engine API client and the dockerd helpers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

DEFAULT_SOCKET = '/var/run/docker.sock'


class DockerProblem(HostInputError):
    """``status``: the HTTP status when the daemon answered one (404: the object is gone)."""

    def __init__(self, message, finding_status=None, status=None):
        super(DockerProblem, self).__init__(message, finding_status)
        self.status = status


def socket_path(host):
    """The socket path of a DOCKER_HOST-style value (unix:///run/docker.sock or a bare path)."""
    host = (host or DEFAULT_SOCKET).strip()
    if host.startswith('unix://'):
        return host[len('unix://'):]
    if host.startswith('/'):
        return host
    raise DockerProblem('%r is not a unix socket; only the local daemon is audited' % host)
