# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP to services on the audited host itself, for opt-in probes and local APIs.

Probes only talk to the host they run on: a URL whose host is not a loopback
address is refused before anything is sent, and loopback names (localhost,
ip6-localhost) are connected to as 127.0.0.1 / ::1 directly, never through
name resolution that could lead elsewhere. One deadline covers each request,
connect, headers and body together (deadline_http), replies are bounded in
size and parsed with bounded_json, and every failure (refused, timeout, an
invalid URL, HTTP that is not HTTP, an HTTP error, a reply that is not JSON or
too large or too deep) is a ProbeFailure with one line for the finding's summary.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket

from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

LOOPBACK_NAMES = ('localhost', 'ip6-localhost', 'ip6-loopback')
# Where each loopback name leads, in the order tried (a service may listen on one family only).
_LOOPBACK_ADDRESSES = {
    'localhost': ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')),
    'ip6-localhost': ((socket.AF_INET6, '::1'),),
    'ip6-loopback': ((socket.AF_INET6, '::1'),),
}
MAX_REPLY_BYTES = 4 * 1024 * 1024


class ProbeFailure(HostInputError):
    """``status``: the HTTP status when there was one. ``unreachable``: nothing answered at all.
    A service that does not answer in time makes the finding ``unknown``."""

    def __init__(self, reason, status=None, finding_status=None, unreachable=False):
        super(ProbeFailure, self).__init__(reason, finding_status)
        self.reason = reason
        self.status = status
        self.unreachable = unreachable


def is_loopback(host):
    host = (host or '').strip('[]').lower()
    if host in LOOPBACK_NAMES:
        return True
    if host.startswith('127.'):
        return all(part.isdigit() and 0 <= int(part) <= 255 for part in host.split('.')) and host.count('.') == 3
    return host == '::1'


def _one_line(text, limit=200):
    return ' '.join(str(text).split())[:limit]


def _target(url):
    """(scheme, [(family, address)], Host header, request target) of a loopback http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ProbeFailure('%s is not a valid URL: %s' % (url, exc))
    host = (parts.hostname or '').lower()
    if not is_loopback(host):
        raise ProbeFailure('refusing to probe %s: probes only talk to loopback addresses on the audited host' % url)
    if parts.scheme not in ('http', 'https'):
        raise ProbeFailure('%s is not an http or https URL' % url)
    port = port or (443 if parts.scheme == 'https' else 80)
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    addresses = [(f, (a, port)) for f, a in _LOOPBACK_ADDRESSES.get(host, ((family, host),))]
    host_header = ('[%s]' % host if ':' in host else host) + ':%d' % port
    return parts.scheme, addresses, host_header, (parts.path or '/') + ('?' + parts.query if parts.query else '')


def accepts_connections(url, timeout):
    """Whether anything accepts a TCP connection at the URL's host and port (nothing is sent).

    Lets a detection say "nothing listens here" without loading the HTTP client; a refused or
    unroutable connection is False. Anything else (a timeout, a URL that request_json will
    refuse) is True, so that the request itself reports it."""
    try:
        _scheme, addresses, _host, _path = _target(url)
    except ProbeFailure:
        return True
    for family, address in addresses:
        try:
            connection = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue
        try:
            connection.settimeout(timeout)
            connection.connect(address)
            return True
        except socket.timeout:
            return True
        except (OSError, ValueError, OverflowError):
            continue
        finally:
            connection.close()
    return False


def _connect(url, scheme, addresses, deadline, timeout):
    from ansible_collections.homelab.postmortem.plugins.module_utils import deadline_http
    problem = None
    for family, address in addresses:
        try:
            return deadline_http.connect(family, address, deadline, tls=scheme == 'https')
        except socket.timeout:
            raise ProbeFailure('%s did not answer within %.1f s' % (url, timeout), finding_status='unknown')
        except (OSError, ValueError, OverflowError) as exc:
            problem = exc
    raise ProbeFailure('%s cannot be reached: %s' % (url, _one_line(problem)), unreachable=True)


def _exchange(url, method, body, timeout, headers, max_bytes):
    """(status, reply bytes: at most ``max_bytes`` + 1, so that a caller can tell "more")."""
    from ansible_collections.homelab.postmortem.plugins.module_utils import deadline_http
    scheme, addresses, host_header, target = _target(url)
    data = None
    send_headers = {'Accept': 'application/json'}
    send_headers.update(headers or {})
    if body is not None:
        data = json.dumps(body).encode('utf-8')
        send_headers['Content-Type'] = 'application/json'
    try:
        deadline = deadline_http.deadline_after(timeout)
    except ValueError as exc:
        raise ProbeFailure('%s was not asked: %s' % (url, exc))
    sock = _connect(url, scheme, addresses, deadline, timeout)
    # Imported once something accepted the connection: http.client, and what it imports, is the largest
    # import a request needs, and only opt-in probes, hosts that run Ollama and declared checks send one.
    from ansible.module_utils.six.moves import http_client
    try:
        status, _reason, raw = deadline_http.exchange(sock, host_header, method, target, data, send_headers,
                                                      max_bytes)
    except socket.timeout:
        raise ProbeFailure('%s did not answer within %.1f s' % (url, timeout), finding_status='unknown')
    except http_client.HTTPException as exc:
        raise ProbeFailure('%s did not answer HTTP: %s: %s' % (url, type(exc).__name__, _one_line(exc) or 'no reply'))
    except (OSError, ValueError) as exc:
        raise ProbeFailure('%s failed: %s' % (url, _one_line(exc)))
    return status, raw


def request(url, method='GET', body=None, timeout=10.0, headers=None, max_bytes=MAX_REPLY_BYTES):
    """Send one request to a loopback URL; return (status, the reply's bytes), whatever the status.
    ``timeout`` bounds the whole request: connecting, the reply's headers and its body together;
    ``max_bytes`` the reply (more is a ProbeFailure)."""
    status, raw = _exchange(url, method, body, timeout, headers, max_bytes)
    if len(raw) > max_bytes:
        raise ProbeFailure('%s answered more than %d bytes' % (url, max_bytes), status)
    return status, raw


def request_json(url, method='GET', body=None, timeout=10.0, headers=None, max_bytes=MAX_REPLY_BYTES):
    """Send one request to a loopback URL; return (status, decoded JSON). ``timeout`` bounds the
    whole request: connecting, the reply's headers and its body together; ``max_bytes`` the reply."""
    from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json
    status, raw = _exchange(url, method, body, timeout, headers, max_bytes)
    if not 200 <= status < 300:
        detail = _one_line(raw[:512].decode('utf-8', 'replace'))
        raise ProbeFailure('%s answered HTTP %s%s' % (url, status, (': ' + detail) if detail else ''), status)
    if len(raw) > max_bytes:
        raise ProbeFailure('%s answered more than %d bytes' % (url, max_bytes), status)
    try:
        return status, bounded_json.loads(raw, url, max_bytes=max_bytes)
    except bounded_json.JsonInputError as exc:
        if exc.kind == 'syntax':
            raise ProbeFailure('%s did not answer JSON: %s' % (url, exc.detail), status)
        raise ProbeFailure('%s answered JSON that cannot be used: %s' % (url, exc.detail), status)
