# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One HTTP request, start to end, within one deadline: connect, headers and body together.

A socket timeout bounds each read, not the request: a server that sends one byte a
second never times out, and http.client reads a status line or a body with many reads.
Here every socket operation is given only the time left until the request's deadline,
so a trickling server ends at the timeout like a silent one.

Used by loopback_http (TCP to loopback, the probes and Ollama) and docker.api (the
Engine API's unix socket); both turn the exceptions below into their own one-line
errors. Plain http builds no SSL context (ansible.module_utils.urls.open_url built one per
call, ~35-55 ms each); https gets one unverifying context per process.

Exceptions a caller catches: ``socket.timeout`` (the deadline passed), ``OSError``
(connect refused, reset, permission), ``http.client.HTTPException`` (BadStatusLine,
IncompleteRead, LineTooLong, RemoteDisconnected, InvalidURL, too many headers).
http.client imports lazily: the audit's start-up loads no HTTP client.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import ssl
import time


class _DeadlineMixin(object):
    """Every connect, send and receive gets only the time left until ``deadline`` (time.monotonic()).

    http.client reads through ``makefile()``, which calls ``recv_into`` on this object, so
    every read it makes, status line and headers included, is bounded by the one deadline."""

    deadline = None

    def _arm(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout('timed out')
        self.settimeout(left)

    def connect(self, *args):
        self._arm()
        return super(_DeadlineMixin, self).connect(*args)

    def sendall(self, *args):
        self._arm()
        return super(_DeadlineMixin, self).sendall(*args)

    def send(self, *args):
        self._arm()
        return super(_DeadlineMixin, self).send(*args)

    def recv(self, *args):
        self._arm()
        return super(_DeadlineMixin, self).recv(*args)

    def recv_into(self, *args):
        self._arm()
        return super(_DeadlineMixin, self).recv_into(*args)


class DeadlineSocket(_DeadlineMixin, socket.socket):
    pass


class DeadlineTLSSocket(_DeadlineMixin, ssl.SSLSocket):
    def do_handshake(self, *args):
        self._arm()
        return super(DeadlineTLSSocket, self).do_handshake(*args)


_TLS_CONTEXT = []


def _tls_context():
    """One unverifying TLS context per process (loopback only; certificates were never checked here).
    No default CA store is loaded: that load is what made every open_url call cost ~35-55 ms."""
    if not _TLS_CONTEXT:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.sslsocket_class = DeadlineTLSSocket
        _TLS_CONTEXT.append(context)
    return _TLS_CONTEXT[0]


# A week: what the audit's own timeouts allow (audit_interface.MAX_SECONDS). Far more would make
# settimeout() and select() overflow ("timestamp out of range for platform time_t" at 10**10 s).
MAX_TIMEOUT = 7 * 24 * 3600


def deadline_after(timeout):
    """The deadline ``timeout`` seconds from now; ValueError (with a reason for a person) for a
    timeout that is not a finite number of seconds from 0 to MAX_TIMEOUT."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        shown = repr(timeout)
        raise ValueError('a timeout of %s is not a number of seconds above 0 and at most %d'
                         % (shown if len(shown) <= 40 else shown[:37] + '...', MAX_TIMEOUT))
    return time.monotonic() + timeout


def connect(family, address, deadline, tls=False):
    """A socket connected to ``address`` (a path for AF_UNIX, (host, port) otherwise) whose every
    operation ends by ``deadline``; ``tls``: wrapped in TLS (handshake within the same deadline)."""
    sock = DeadlineSocket(family, socket.SOCK_STREAM)
    sock.deadline = deadline
    try:
        sock.connect(address)
        if tls:
            wrapped = _tls_context().wrap_socket(sock, do_handshake_on_connect=False)
            wrapped.deadline = deadline
            sock = wrapped
            sock.do_handshake()
    except BaseException:
        sock.close()
        raise
    return sock


def exchange(sock, host, method, target, body=None, headers=None, max_bytes=4 * 1024 * 1024):
    """Send one request over the connected DeadlineSocket ``sock`` (closed afterwards) and read the
    reply; returns (status, reason, body). The body is read up to ``max_bytes`` + 1 bytes, so a
    caller can tell "more than max_bytes" from "exactly max_bytes"."""
    from ansible.module_utils.six.moves import http_client
    connection = http_client.HTTPConnection(host)
    # A connection whose socket is already open sends over it (http.client connects only when it
    # has none): the given socket, whatever its family, with its deadline.
    connection.sock = sock
    try:
        connection.request(method, target, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read(max_bytes + 1)
        if len(data) <= max_bytes and response.length:
            # read(amt) returns what came before the server closed; the rest of a Content-Length never came.
            raise http_client.IncompleteRead(data, response.length)
        return response.status, response.reason, data
    finally:
        connection.close()
