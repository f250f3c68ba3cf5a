"""The probes' HTTP helper against real servers on loopback: a real llama-server,
and small HTTP servers started here that answer garbage, errors, or too late."""
import http.server
import json
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

    def do_POST(self):  # noqa: N802 - http.server's naming
        self.do_GET()

    def log_message(self, *args):
        pass


class AlmostLlama(http.server.BaseHTTPRequestHandler):
    """Answers llama-server's paths with the right shapes and nonsense values."""
    scales = [{'id': 0, 'scale': 0.5, 'path': 'a.gguf'}]

    def reply(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        if self.path == '/props':
            self.reply({'total_slots': 1})
        else:
            self.reply(self.scales)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        if self.path == '/lora-adapters':
            AlmostLlama.scales = [dict(a, path='a.gguf') for a in body]
            self.reply({'success': True})
        else:
            self.reply({'content': 'same', 'id_slot': 'zero', 'timings': {'cache_n': 'lots'},
                        'completion_probabilities': [{'top_logprobs': [{'token': 5, 'logprob': 'NaN'}]}]})

    def log_message(self, *args):
        pass


def serve(handler):
    server = http.server.ThreadingHTTPServer(('127.0.0.1', free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def almost_llama():
    server = serve(AlmostLlama)
    yield 'http://127.0.0.1:%d' % server.server_address[1]
    server.shutdown()


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


def test_a_connection_check_before_any_http(garbage_server):
    """accepts_connections lets the Ollama detections say "nothing listens" without loading the HTTP
    client; whatever is not a plain refusal is left to the request to report."""
    assert loopback_http.accepts_connections(garbage_server, 2)
    assert not loopback_http.accepts_connections('http://127.0.0.1:%d' % free_port(), 2)
    assert not loopback_http.accepts_connections('http://localhost:%d' % free_port(), 2)
    assert loopback_http.accepts_connections('http://192.0.2.10:8080', 2)  # request_json refuses it, saying why


def test_llama_probes_on_something_that_is_not_llama_server(garbage_server):
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe, probes as llama_probes
    for probe in (lora_probe.lora_cache, llama_probes.spec_logprobs):
        result = probe(garbage_server + '/html')  # every path answers HTML or {"ok": true}
        assert result['verdict'] == 'unknown' and result['reason']
    down = lora_probe.lora_cache('http://127.0.0.1:%d' % free_port())
    assert down['verdict'] == 'unknown' and 'cannot be reached' in down['reason']


def test_lora_probe_on_a_server_that_answers_nonsense_values(almost_llama):
    """Right shapes, wrong values: no traceback, no verdict it cannot back, scales put back."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.llama import lora_probe
    result = lora_probe.lora_cache(almost_llama)
    assert result['verdict'] == 'unknown', result
    for path in lora_probe.PATHS:
        assert result['paths'][path]['verdict'] == 'unknown'
        assert 'does not change' in result['paths'][path]['reason']
    assert result['paths']['global_slot']['scales_restored'] is True
    assert AlmostLlama.scales == [{'id': 0, 'scale': 0.5, 'path': 'a.gguf'}]
    assert result['requests'] <= 4 + 3 * (24 + 4 * 1)
