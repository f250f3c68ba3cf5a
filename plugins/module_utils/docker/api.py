# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker Engine API over its unix socket, with the standard library only.

Targets have no Docker SDK. Every request has a timeout and a size bound, and
every failure is a DockerProblem with one line for a person: no socket, no
permission, no answer in time, an HTTP error, a reply that is not JSON.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import socket

from ansible.module_utils.six.moves.urllib.parse import quote, urlencode

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

DEFAULT_SOCKET = '/var/run/docker.sock'
MAX_REPLY_BYTES = 16 * 1024 * 1024


class DockerProblem(HostInputError):
    pass


def _connected_unix_socket(path, timeout):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except Exception:
        sock.close()
        raise
    return sock


def socket_path(host):
    """The socket path of a DOCKER_HOST-style value (unix:///run/docker.sock or a bare path)."""
    host = (host or DEFAULT_SOCKET).strip()
    if host.startswith('unix://'):
        return host[len('unix://'):]
    if host.startswith('/'):
        return host
    raise DockerProblem('%r is not a unix socket; only the local daemon is audited' % host)


class DockerApi(object):
    def __init__(self, path, timeout=10):
        self.path = path
        self.timeout = timeout

    def get(self, path, params=None):
        """The decoded JSON answer to GET ``path``."""
        # Imported on first use: http.client is a noticeable share of the audit's start-up on a Pi,
        # and only hosts with a Docker socket talk to it.
        from ansible.module_utils.six.moves import http_client
        url = path + ('?' + urlencode(params) if params else '')
        what = 'Docker API GET %s' % path
        connection = http_client.HTTPConnection('localhost', timeout=self.timeout)
        try:
            # A connection whose socket is already open sends over it (http.client connects only
            # when it has none): the daemon's unix socket instead of TCP.
            connection.sock = _connected_unix_socket(self.path, self.timeout)
            connection.request('GET', url, headers={'Accept': 'application/json'})
            response = connection.getresponse()
            body = response.read(MAX_REPLY_BYTES + 1)
        except socket.timeout:
            raise DockerProblem('%s did not answer within %s s (setting api_timeout)' % (what, self.timeout),
                                finding_status='unknown')
        except (IOError, OSError) as exc:
            raise self._socket_problem(exc)
        except http_client.HTTPException as exc:
            raise DockerProblem('%s: the daemon did not answer HTTP: %s' % (what, exc))
        finally:
            connection.close()
        if len(body) > MAX_REPLY_BYTES:
            raise DockerProblem('%s answered more than %d MiB' % (what, MAX_REPLY_BYTES // (1024 * 1024)))
        text = body.decode('utf-8', 'replace')
        try:
            data = json.loads(text) if text.strip() else None
        except ValueError:
            raise DockerProblem('%s did not answer JSON (HTTP %d): %r' % (what, response.status, text[:120]))
        if response.status >= 400:
            message = data.get('message') if isinstance(data, dict) else text[:200]
            raise DockerProblem('%s failed with HTTP %d: %s' % (what, response.status, message))
        return data

    def _socket_problem(self, exc):
        code = getattr(exc, 'errno', None)
        if code in (errno.ENOENT, errno.ECONNREFUSED):
            return DockerProblem('no Docker daemon answers at %s (%s)' % (self.path, exc.strerror or exc))
        if code in (errno.EACCES, errno.EPERM):
            return DockerProblem('permission denied on %s: run the audit as root (become: true)' % self.path,
                                 finding_status='unknown')
        return DockerProblem('the Docker socket %s failed: %s' % (self.path, exc.strerror or exc))

    def object_path(self, kind, ident):
        return '/%s/%s' % (kind, quote(str(ident), safe=''))
