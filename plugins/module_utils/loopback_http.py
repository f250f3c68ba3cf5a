# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP to services on the audited host itself, for opt-in probes.

Probes only talk to the host they run on: a URL whose host is not a loopback
address is refused before anything is sent. Every call has a timeout and a
size limit, and every failure (refused, timeout, HTTP error, a reply that is
not JSON) is a ProbeFailure with one line for the finding's summary.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlsplit
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

LOOPBACK_NAMES = ('localhost', 'ip6-localhost', 'ip6-loopback')
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


def accepts_connections(url, timeout):
    """Whether anything accepts a TCP connection at the URL's host and port (nothing is sent).

    Lets a detection say "nothing listens here" without loading the HTTP client; a refused or
    unroutable connection is False. Anything else (a timeout, a non-loopback URL that
    request_json will refuse) is True, so that the request itself reports it."""
    parts = urlsplit(url)
    if not is_loopback(parts.hostname):
        return True
    try:
        port = parts.port or (443 if parts.scheme == 'https' else 80)
        connection = socket.create_connection((parts.hostname, port), timeout=timeout)
    except socket.timeout:
        return True
    except (OSError, ValueError):
        return False
    connection.close()
    return True


def request_json(url, method='GET', body=None, timeout=10.0, headers=None):
    """Send one request to a loopback URL; return (status, decoded JSON)."""
    host = urlsplit(url).hostname
    if not is_loopback(host):
        raise ProbeFailure('refusing to probe %s: probes only talk to loopback addresses on the audited host' % url)
    data = None
    send_headers = {'Accept': 'application/json'}
    send_headers.update(headers or {})
    if body is not None:
        data = json.dumps(body).encode('utf-8')
        send_headers['Content-Type'] = 'application/json'
    # Imported here: ansible.module_utils.urls (with http.client, ssl and email) is the largest import of
    # the audit, and only opt-in probes and hosts that run Ollama send a request.
    from ansible.module_utils.urls import open_url
    try:
        response = open_url(url, data=data, method=method, headers=send_headers, timeout=timeout,
                            validate_certs=False, follow_redirects='none', use_proxy=False)
        status = response.getcode()
        raw = response.read(MAX_REPLY_BYTES + 1)
    except HTTPError as exc:
        detail = ''
        try:
            detail = exc.read(512).decode('utf-8', 'replace').strip()
        except Exception:  # pylint: disable=broad-except
            pass
        raise ProbeFailure('%s answered HTTP %s%s' % (url, exc.code, (': ' + detail) if detail else ''), exc.code)
    except socket.timeout:
        raise ProbeFailure('%s did not answer within %.1f s' % (url, timeout), finding_status='unknown')
    except URLError as exc:
        reason = getattr(exc, 'reason', exc)
        if isinstance(reason, socket.timeout):
            raise ProbeFailure('%s did not answer within %.1f s' % (url, timeout), finding_status='unknown')
        raise ProbeFailure('%s cannot be reached: %s' % (url, reason), unreachable=True)
    except (OSError, ValueError) as exc:
        raise ProbeFailure('%s failed: %s' % (url, exc))
    if len(raw) > MAX_REPLY_BYTES:
        raise ProbeFailure('%s answered more than %d bytes' % (url, MAX_REPLY_BYTES), status)
    try:
        return status, json.loads(raw.decode('utf-8'))
    except ValueError:
        snippet = raw[:80].decode('utf-8', 'replace').replace('\n', ' ')
        raise ProbeFailure('%s did not answer JSON (starts with %r)' % (url, snippet), status)
