"""The probes' HTTP helper against real servers on loopback: a real llama-server,
and small HTTP servers started here that answer garbage, errors, or too late."""
import http.server
import threading
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http
from helpers import free_port


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        if self.path == '/slow':
            time.sleep(3)
        if self.path == '/missing':
            self.send_error(404, 'no such thing')
            return
        body = b'<html>not json</html>' if self.path == '/html' else b'{"ok": true}'
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def garbage_server():
    server = http.server.ThreadingHTTPServer(('127.0.0.1', free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()


def test_real_llama_server_answers_json(llama_server):
    server = llama_server()
    status, body = loopback_http.request_json('http://127.0.0.1:%d/props' % server.port, timeout=10)
    assert status == 200 and 'default_generation_settings' in body


@pytest.mark.parametrize('path,reason', [
    ('/html', 'did not answer JSON'),
    ('/missing', 'answered HTTP 404'),
    ('/slow', 'did not answer within 1.0 s'),
])
def test_bad_answers_become_one_line_reasons(garbage_server, path, reason):
    with pytest.raises(loopback_http.ProbeFailure) as exc:
        loopback_http.request_json(garbage_server + path, timeout=1.0)
    assert reason in exc.value.reason


def test_nothing_listening_and_non_loopback_urls():
    with pytest.raises(loopback_http.ProbeFailure, match='cannot be reached'):
        loopback_http.request_json('http://127.0.0.1:%d/' % free_port(), timeout=2)
    # Refused before anything is sent: probes never leave the audited host.
    with pytest.raises(loopback_http.ProbeFailure, match='only talk to loopback'):
        loopback_http.request_json('http://192.0.2.10:8080/health', timeout=1)
    assert loopback_http.is_loopback('127.0.0.1') and loopback_http.is_loopback('[::1]')
    assert loopback_http.is_loopback('localhost') and not loopback_http.is_loopback('127.0.0.1.example.com')


def test_llama_probes_on_something_that_is_not_llama_server(garbage_server):
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import probes as llama_probes
    for probe in (llama_probes.lora_cache, llama_probes.spec_logprobs):
        result = probe(garbage_server + '/html')  # every path answers HTML or {"ok": true}
        assert result['verdict'] == 'unknown' and result['reason']
    down = llama_probes.lora_cache('http://127.0.0.1:%d' % free_port())
    assert down['verdict'] == 'unknown' and 'cannot be reached' in down['reason']
