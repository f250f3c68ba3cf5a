"""Hostile HTTP servers against every HTTP client of the collection: loopback_http (the probes,
the Ollama detections and fix) over loopback TCP, and docker.api (the Engine API) over a unix
socket. Each request has one deadline, connect, headers and body together: a server that
trickles a byte at a time ends at the timeout like a silent one. Every other misbehaviour is a
one-line ProbeFailure / DockerProblem, never a traceback.

The servers are real sockets on this machine (tests/hostile_servers.py); no real service
answers like this on purpose. Every case is timed: elapsed <= timeout + SLACK_S.
"""
import socket
import ssl
import subprocess
import sys
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import deadline_http, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api

from ..helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position

TIMEOUT_S = 1.0
SLACK_S = 1.5
FLOOD_S = 10  # reading the bounded part of a flood (4 or 16 MiB) on a loaded 2-core machine


def timed(call):
    started = time.monotonic()
    try:
        call()
    except (loopback_http.ProbeFailure, docker_api.DockerProblem) as exc:
        return exc, time.monotonic() - started
    pytest.fail('no error raised')


HANGS = [
    ('silent', hs.silent),
    ('trickles its headers, a byte every 0.2 s', hs.trickle_headers(0.2)),
    ('trickles its body, a byte every 0.2 s', hs.trickle_body(b'{"version": "0.12.0"}', 0.2)),
    ('sends "100 Continue" forever', hs.continue_forever()),
]


@pytest.mark.parametrize('case,behaviour', HANGS)
def test_loopback_http_ends_every_request_at_its_deadline(case, behaviour):
    with hs.MisbehavingServer(behaviour) as server:
        exc, elapsed = timed(lambda: loopback_http.request_json(server.url + '/api/version', timeout=TIMEOUT_S))
    assert elapsed <= TIMEOUT_S + SLACK_S, (case, elapsed)
    assert exc.finding_status == 'unknown', case
    assert str(exc) == '%s/api/version did not answer within 1.0 s' % server.url


@pytest.mark.parametrize('case,behaviour', HANGS)
def test_docker_api_ends_every_request_at_its_deadline(tmp_path, case, behaviour):
    path = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(behaviour, unix_path=path):
        exc, elapsed = timed(lambda: docker_api.DockerApi(path, 1).get('/version'))
    assert elapsed <= TIMEOUT_S + SLACK_S, (case, elapsed)
    assert exc.finding_status == 'unknown'
    assert str(exc) == 'Docker API GET /version did not answer within 1 s (setting api_timeout)'


MALFORMED = [
    ('a status line that is no HTTP', hs.raw(b'garbage\r\n\r\n'), 'BadStatusLine: garbage'),
    ('a body cut short', hs.raw(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"a"'), 'IncompleteRead'),
    ('a status line of 70 kB', hs.raw(b'HTTP/1.1 200 ' + b'x' * 70000 + b'\r\n\r\n'), 'LineTooLong'),
    ('150 headers', hs.raw(b'HTTP/1.1 200 OK\r\n' + b'X-A: b\r\n' * 150 + b'\r\n'), 'got more than 100 headers'),
    ('an invalid chunk size', hs.raw(b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'), 'IncompleteRead'),
]


@pytest.mark.parametrize('case,behaviour,fragment', MALFORMED)
def test_loopback_http_names_http_that_is_not_http(case, behaviour, fragment):
    with hs.MisbehavingServer(behaviour) as server:
        exc, elapsed = timed(lambda: loopback_http.request_json(server.url + '/x', timeout=TIMEOUT_S))
    assert elapsed <= TIMEOUT_S + SLACK_S
    assert str(exc).startswith('%s/x did not answer HTTP: ' % server.url), str(exc)
    assert fragment in str(exc) and '\n' not in str(exc) and len(str(exc)) < 300, str(exc)
    assert exc.finding_status == 'error'


@pytest.mark.parametrize('case,behaviour,fragment', MALFORMED)
def test_docker_api_names_http_that_is_not_http(tmp_path, case, behaviour, fragment):
    path = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(behaviour, unix_path=path):
        exc, elapsed = timed(lambda: docker_api.DockerApi(path, 1).get('/version'))
    assert elapsed <= TIMEOUT_S + SLACK_S
    assert str(exc).startswith('Docker API GET /version: the daemon did not answer HTTP: '), str(exc)
    assert fragment in str(exc) and '\n' not in str(exc) and len(str(exc)) < 300, str(exc)


def test_a_server_that_closes_at_once(tmp_path):
    with hs.MisbehavingServer(hs.close_at_once) as server:
        exc, _elapsed = timed(lambda: loopback_http.request_json(server.url + '/x', timeout=TIMEOUT_S))
    assert str(exc) == ('%s/x did not answer HTTP: RemoteDisconnected: Remote end closed connection without response'
                        % server.url)
    path = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(hs.close_at_once, unix_path=path):
        exc, _elapsed = timed(lambda: docker_api.DockerApi(path, 1).get('/version'))
    assert str(exc) == 'the Docker socket %s failed: Remote end closed connection without response' % path


@pytest.mark.parametrize('behaviour,limit', [
    (hs.flood(), 'more than 4194304 bytes'),                 # a Content-Length of 10 GiB, streamed
    (hs.flood(chunked=True), 'more than 4194304 bytes'),     # chunked, without end
])
def test_loopback_http_reads_a_flood_only_up_to_its_bound(behaviour, limit):
    with hs.MisbehavingServer(behaviour) as server:
        exc, elapsed = timed(lambda: loopback_http.request_json(server.url + '/x', timeout=FLOOD_S))
    assert elapsed <= FLOOD_S + SLACK_S
    assert str(exc) == '%s/x answered %s' % (server.url, limit)


def test_docker_api_reads_a_flood_only_up_to_its_bound(tmp_path):
    path = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(hs.flood(), unix_path=path):
        exc, elapsed = timed(lambda: docker_api.DockerApi(path, FLOOD_S).get('/version'))
    assert elapsed <= FLOOD_S + SLACK_S
    assert str(exc) == 'Docker API GET /version answered more than 16 MiB'


BAD_JSON = [
    ('100,000 levels deep', hs.nested_json(100000), 'answered JSON that cannot be used: nested deeper than 64 levels (100000)'),
    ('65 levels deep', hs.nested_json(65, b'{"a":', b'}')[:-65] + b'1' + b'}' * 65,
     'answered JSON that cannot be used: nested deeper than 64 levels (65)'),
    ('a number of 5,000 digits', b'{"Version": ' + b'9' * 5000 + b'}',
     'answered JSON that cannot be used: JSON with a number of 5000 digits (at most 40)'),
    ('HTML', b'<html>proxy error</html>', 'did not answer JSON: not JSON (Expecting value'),
]


@pytest.mark.parametrize('case,body,fragment', BAD_JSON)
def test_replies_are_parsed_within_bounds(tmp_path, case, body, fragment):
    with hs.MisbehavingServer(hs.answer(body)) as server:
        exc, elapsed = timed(lambda: loopback_http.request_json(server.url + '/api/show', timeout=TIMEOUT_S))
    assert elapsed <= TIMEOUT_S + SLACK_S
    assert str(exc).startswith('%s/api/show %s' % (server.url, fragment)), (case, str(exc))
    path = str(tmp_path / 'docker.sock')
    with hs.MisbehavingServer(hs.answer(body), unix_path=path):
        exc, elapsed = timed(lambda: docker_api.DockerApi(path, 1).get('/info'))
    assert elapsed <= TIMEOUT_S + SLACK_S
    expected = fragment.replace('did not answer JSON: not JSON (Expecting value', 'did not answer JSON (HTTP 200)')
    assert str(exc).startswith('Docker API GET /info ' + expected), (case, str(exc))


def test_a_json_value_just_within_the_bound_is_read():
    body = b'{"a":' * 63 + b'[1]' + b'}' * 63
    with hs.MisbehavingServer(hs.answer(body)) as server:
        _status, value = loopback_http.request_json(server.url + '/x', timeout=TIMEOUT_S)
    for _level in range(63):
        value = value['a']
    assert value == [1]


def test_an_http_error_is_one_line():
    body = b'line one\r\nline two\n' + b'x' * 5000
    with hs.MisbehavingServer(hs.answer(body, status=500)) as server:
        exc, _elapsed = timed(lambda: loopback_http.request_json(server.url + '/x', timeout=TIMEOUT_S))
    assert exc.status == 500
    assert str(exc).startswith('%s/x answered HTTP 500: line one line two xxx' % server.url)
    assert '\n' not in str(exc) and len(str(exc)) < 300


@pytest.mark.parametrize('url,reason', [
    ('http://[::1', 'is not a valid URL: Invalid IPv6 URL'),
    ('http://localhost:99999/', 'is not a valid URL: Port out of range 0-65535'),
    ('http://localhost:abc/', 'is not a valid URL: Port could not be cast to integer value'),
    ('file://localhost/etc/passwd', 'is not an http or https URL'),
    ('http://192.0.2.10/', 'probes only talk to loopback addresses'),
    ('http://127.0.0.1.example.com/', 'probes only talk to loopback addresses'),
])
def test_urls_that_cannot_be_used_are_refused_before_anything_is_sent(url, reason):
    with pytest.raises(loopback_http.ProbeFailure) as exc:
        loopback_http.request_json(url, timeout=TIMEOUT_S)
    assert reason in str(exc.value), str(exc.value)
    # The connection check leaves the refusal to the request, which says why.
    assert loopback_http.accepts_connections(url, TIMEOUT_S) is True


def test_nothing_listening_is_unreachable_on_every_loopback_name():
    port = hs.MisbehavingServer(hs.silent)
    free = port.listener.getsockname()[1]
    port.close()
    for host in ('127.0.0.1', 'localhost', '[::1]'):
        exc, elapsed = timed(lambda: loopback_http.request_json('http://%s:%d/' % (host, free), timeout=TIMEOUT_S))
        assert exc.unreachable and 'cannot be reached' in str(exc), str(exc)
        assert elapsed <= TIMEOUT_S + SLACK_S
        assert loopback_http.accepts_connections('http://%s:%d/' % (host, free), TIMEOUT_S) is False


def test_localhost_is_connected_to_as_a_loopback_address_never_through_name_resolution(monkeypatch):
    """A resolver (or /etc/hosts) that sent "localhost" elsewhere must not take a probe off the host."""
    def no_lookup(*args, **kwargs):
        raise AssertionError('getaddrinfo called with %r' % (args,))
    monkeypatch.setattr(socket, 'getaddrinfo', no_lookup)
    with hs.MisbehavingServer(hs.answer_json({'version': '0.12.0'})) as server:
        port = server.listener.getsockname()[1]
        assert loopback_http.request_json('http://localhost:%d/api/version' % port, timeout=TIMEOUT_S) == (
            200, {'version': '0.12.0'})


def test_plain_http_builds_no_ssl_context(monkeypatch):
    """open_url built an SSL context (loading the CA store) per call, ~35-55 ms each; plain
    loopback HTTP needs none."""
    def refuse(*args, **kwargs):
        raise AssertionError('an SSL context was built for plain http')
    monkeypatch.setattr(ssl, 'create_default_context', refuse)
    monkeypatch.setattr(deadline_http, '_tls_context', refuse)
    with hs.MisbehavingServer(hs.answer_json({'ok': True})) as server:
        for _call in range(20):
            assert loopback_http.request_json(server.url + '/x', timeout=TIMEOUT_S) == (200, {'ok': True})


@pytest.fixture(scope='module')
def certificate(tmp_path_factory):
    folder = tmp_path_factory.mktemp('tls')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
                    '-keyout', str(folder / 'key.pem'), '-out', str(folder / 'cert.pem')], check=True, capture_output=True)
    return str(folder / 'cert.pem'), str(folder / 'key.pem')


def tls(certificate, behaviour):
    """The behaviour behind a TLS handshake (a real certificate made with openssl, not verified by the client)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)

    def wrapped(connection, stop):
        connection.settimeout(5)
        behaviour(context.wrap_socket(connection, server_side=True), stop)
    return wrapped


def test_https_to_loopback_works_within_one_deadline(certificate):
    with hs.MisbehavingServer(tls(certificate, hs.answer_json({'version': '0.12.0'}))) as server:
        url = server.url.replace('http:', 'https:')
        assert loopback_http.request_json(url + '/api/version', timeout=TIMEOUT_S) == (200, {'version': '0.12.0'})
    with hs.MisbehavingServer(tls(certificate, hs.trickle_body(b'{"version": "0.12.0"}', 0.2))) as server:
        url = server.url.replace('http:', 'https:')
        exc, elapsed = timed(lambda: loopback_http.request_json(url + '/api/version', timeout=TIMEOUT_S))
    assert elapsed <= TIMEOUT_S + SLACK_S and 'did not answer within 1.0 s' in str(exc)
    # A server that never completes the handshake: the handshake is inside the same deadline.
    with hs.MisbehavingServer(hs.silent) as server:
        exc, elapsed = timed(lambda: loopback_http.request_json(server.url.replace('http:', 'https:') + '/', timeout=TIMEOUT_S))
    assert elapsed <= TIMEOUT_S + SLACK_S and 'did not answer within 1.0 s' in str(exc)


@pytest.mark.parametrize('socket_path,fragment', [
    ('/tmp/docker\x00.sock', 'no Docker daemon answers at /tmp/docker\x00.sock (No such file or directory)'),
    ('/tmp/' + 'd' * 200 + '.sock', 'failed: AF_UNIX path too long'),
])
def test_docker_socket_paths_that_cannot_be_used(socket_path, fragment):
    exc, _elapsed = timed(lambda: docker_api.DockerApi(socket_path, 1).get('/version'))
    assert fragment in str(exc), str(exc)


@pytest.mark.parametrize('timeout', [10 ** 10, float('inf'), float('nan'), 0, -1, '10', True])
def test_a_timeout_no_socket_can_take_is_a_reason_not_an_overflow(tmp_path, timeout):
    """settimeout(10**10) raises OverflowError ("timestamp out of range for platform time_t"); callers
    with a module parameter of their own (the Ollama fix's timeout) are protected here too."""
    with hs.MisbehavingServer(hs.answer_json({'ok': True})) as server:
        exc, _elapsed = timed(lambda: loopback_http.request_json(server.url + '/x', timeout=timeout))
    assert 'is not a number of seconds above 0 and at most 604800' in str(exc), str(exc)
    exc, _elapsed = timed(lambda: docker_api.DockerApi(str(tmp_path / 'docker.sock'), timeout).get('/version'))
    assert str(exc).startswith('Docker API GET /version was not sent: a timeout of ')
