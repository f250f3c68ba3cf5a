# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Docker Engine API over its unix socket, with the standard library only.

Targets have no Docker SDK. One deadline covers each request (connect, headers and
body together: deadline_http), replies are bounded in size and parsed with
bounded_json, and every failure is a DockerProblem with one line for a person: no
socket, no permission, no answer in time, HTTP that is not HTTP, an HTTP error, a
reply that is not JSON or too large or too deep.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import socket

from ansible.module_utils.six.moves.urllib.parse import quote, urlencode

from ansible_collections.homelab.postmortem.plugins.module_utils import json_fields
from ansible_collections.homelab.postmortem.plugins.module_utils.docker.address import (  # noqa: F401 pylint: disable=unused-import
    DEFAULT_SOCKET, DockerProblem, socket_path)

MAX_REPLY_BYTES = 16 * 1024 * 1024


# Kept under these names: the docker package and its tests call them from here.
describe = json_fields.describe


def typed(data, key, kind, where, required=False, label=None):
    """``data[key]`` checked as json_fields.typed checks it; a field of the wrong kind is a
    DockerProblem naming the reply and the field ("Docker API GET /containers/x/json: field
    State.Pid is a string, not an integer"): every field read from the Engine API is checked
    where it is read."""
    try:
        return json_fields.typed(data, key, kind, required=required, label=label)
    except json_fields.FieldError as exc:
        raise DockerProblem('Docker API %s: %s' % (where, exc))


def _one_line(text, limit=200):
    return ' '.join(str(text).split())[:limit]


class DockerApi(object):
    def __init__(self, path, timeout=10):
        self.path = path
        self.timeout = timeout

    def get(self, path, params=None):
        """The decoded JSON answer to GET ``path``, within ``timeout`` seconds for the whole request."""
        # Imported on first use: http.client is a noticeable share of the audit's start-up on a Pi,
        # and only hosts with a Docker socket talk to it.
        from ansible.module_utils.six.moves import http_client
        from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, deadline_http
        url = path + ('?' + urlencode(params) if params else '')
        what = 'Docker API GET %s' % path
        try:
            deadline = deadline_http.deadline_after(self.timeout)
        except ValueError as exc:
            raise DockerProblem('%s was not sent: %s' % (what, exc))
        try:
            sock = deadline_http.connect(socket.AF_UNIX, self.path, deadline)
            status, _reason, body = deadline_http.exchange(sock, 'localhost', 'GET', url, None,
                                                           {'Accept': 'application/json'}, MAX_REPLY_BYTES)
        except socket.timeout:
            raise DockerProblem('%s did not answer within %s s (setting api_timeout)' % (what, self.timeout),
                                finding_status='unknown')
        except (IOError, OSError) as exc:
            raise self._socket_problem(exc)
        except http_client.HTTPException as exc:
            raise DockerProblem('%s: the daemon did not answer HTTP: %s: %s'
                                % (what, type(exc).__name__, _one_line(exc) or 'no reply'))
        except ValueError as exc:  # a socket path with a NUL byte, a path too long for a unix socket
            raise DockerProblem('the Docker socket %s cannot be used: %s' % (self.path, _one_line(exc)))
        if len(body) > MAX_REPLY_BYTES:
            raise DockerProblem('%s answered more than %d MiB' % (what, MAX_REPLY_BYTES // (1024 * 1024)))
        data = None
        if body.strip():
            try:
                data = bounded_json.loads(body, what, max_bytes=MAX_REPLY_BYTES)
            except bounded_json.JsonInputError as exc:
                if exc.kind == 'syntax':
                    raise DockerProblem('%s did not answer JSON (HTTP %d): %r'
                                        % (what, status, body[:120].decode('utf-8', 'replace')))
                raise DockerProblem('%s answered JSON that cannot be used: %s' % (what, exc.detail))
        if status >= 400:
            message = data.get('message') if isinstance(data, dict) else None
            message = message if isinstance(message, str) else body[:200].decode('utf-8', 'replace')
            raise DockerProblem('%s failed with HTTP %d: %s' % (what, status, _one_line(message)), status=status)
        return data

    def get_object(self, path, params=None):
        """get(), for replies that must be a JSON object."""
        return self._expect(self.get(path, params), dict, 'an object', path)

    def get_list(self, path, params=None):
        """get(), for replies that must be a JSON list (an empty answer counts as an empty list)."""
        data = self.get(path, params)
        return [] if data is None else self._expect(data, list, 'a list', path)

    @staticmethod
    def _expect(data, kind, words, path):
        if not isinstance(data, kind):
            raise DockerProblem('Docker API GET %s answered %s, not %s' % (path, describe(data), words))
        return data

    def _socket_problem(self, exc):
        code = getattr(exc, 'errno', None)
        detail = _one_line(getattr(exc, 'strerror', None) or exc)
        if code in (errno.ENOENT, errno.ECONNREFUSED):
            return DockerProblem('no Docker daemon answers at %s (%s)' % (self.path, detail))
        if code in (errno.EACCES, errno.EPERM):
            return DockerProblem('permission denied on %s: run the audit as root (become: true)' % self.path,
                                 finding_status='unknown')
        return DockerProblem('the Docker socket %s failed: %s' % (self.path, detail))

    def object_path(self, kind, ident):
        return '/%s/%s' % (kind, quote(str(ident), safe=''))
