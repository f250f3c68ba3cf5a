"""HTTP servers that misbehave on purpose, on loopback TCP or on a unix socket.

For the hostile-input tests of every HTTP client in the collection (loopback_http for the
probes and Ollama, docker.api for the Engine API): no real service answers like this on
purpose, so these stand in for one that is broken, hostile or overloaded. Each behaviour is a
function ``(connection, stop)`` run in its own thread per accepted connection; ``stop`` is set
when the server closes, so a trickle or a flood ends with the test.

    with MisbehavingServer(trickle_body(b'{"version": "1"}')) as server:
        loopback_http.request_json(server.url + '/api/version', timeout=1)      # TCP
    with MisbehavingServer(answer_json({'Version': 'abc'}), unix_path=str(tmp_path / 'd.sock')) as server:
        DockerApi(server.unix_path, 1).get('/version')                        # unix socket
"""
import json
import socket
import threading
import time


class MisbehavingServer:
    def __init__(self, behaviour, unix_path=None):
        self.behaviour = behaviour
        self.unix_path = unix_path
        self.stop = threading.Event()
        self.connections = 0
        if unix_path:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(unix_path)
        else:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(('127.0.0.1', 0))
        self.listener.listen(16)
        self.listener.settimeout(0.2)
        self.url = None if unix_path else 'http://127.0.0.1:%d' % self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                connection = self.listener.accept()[0]
            except socket.timeout:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection):
        try:
            self.behaviour(connection, self.stop)
        except OSError:
            pass  # the client gave up: what a misbehaving server expects
        finally:
            connection.close()

    def close(self):
        self.stop.set()
        self.listener.close()
        self.thread.join(2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_request(connection, limit=1024 * 1024):
    """The request's bytes up to the end of its headers, and its body when it has a Content-Length."""
    connection.settimeout(5)
    data = b''
    while b'\r\n\r\n' not in data and len(data) < limit:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _sep, body = data.partition(b'\r\n\r\n')
    for line in head.split(b'\r\n')[1:]:
        name, _colon, value = line.partition(b':')
        if name.strip().lower() == b'content-length':
            while len(body) < int(value.strip()):
                chunk = connection.recv(65536)
                if not chunk:
                    break
                body += chunk
    return head + b'\r\n\r\n' + body


def _idle(stop, seconds=60):
    stop.wait(seconds)


def answer(body, status=200, content_type='application/json', extra_headers=b''):
    """A well-formed HTTP/1.1 reply with ``body`` (bytes)."""
    def behaviour(connection, stop):
        read_request(connection)
        connection.sendall(b'HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n'
                           % (status, content_type.encode(), len(body), extra_headers) + body)
    return behaviour


def answer_json(value, status=200):
    return answer(json.dumps(value).encode(), status)


def routes(table, default=(404, {'message': 'page not found'})):
    """Answers by path (query dropped): {path: (status, JSON value or bytes) or a behaviour}."""
    def behaviour(connection, stop):
        connection.settimeout(5)
        seen = b''
        for _attempt in range(50):  # the request line, peeked at: the chosen behaviour reads the request itself
            seen = connection.recv(65536, socket.MSG_PEEK)
            if b'\r\n' in seen or not seen:
                break
            time.sleep(0.01)
        parts = seen.split(b' ', 2)
        path = parts[1].decode('latin-1').split('?')[0] if len(parts) > 2 else '/'
        reply = table.get(path, default)
        if callable(reply):
            return reply(connection, stop)
        status, value = reply
        return answer(value if isinstance(value, bytes) else json.dumps(value).encode(), status)(connection, stop)
    return behaviour


def silent(connection, stop):
    """Reads the request and never answers."""
    read_request(connection)
    _idle(stop)


def trickle_headers(interval=0.2):
    """A status line and headers that never end, one byte every ``interval`` seconds."""
    def behaviour(connection, stop):
        read_request(connection)
        reply = b'HTTP/1.1 200 OK\r\n' + b'X-Slow: ' + b'a' * 100000
        for byte in reply:
            if stop.wait(interval):
                return
            connection.sendall(bytes([byte]))
    return behaviour


def trickle_body(body, interval=0.2, declared=None):
    """Headers at once, then the body one byte every ``interval`` seconds (the Content-Length says
    ``declared`` bytes, by default the body's length, so the client keeps waiting)."""
    def behaviour(connection, stop):
        read_request(connection)
        connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n'
                           % (declared or len(body) + 1000))
        for byte in body + b' ' * 100000:
            if stop.wait(interval):
                return
            connection.sendall(bytes([byte]))
    return behaviour


def continue_forever(interval=0.05):
    """"100 Continue" interim replies, one after another, never a final one."""
    def behaviour(connection, stop):
        read_request(connection)
        while not stop.wait(interval):
            connection.sendall(b'HTTP/1.1 100 Continue\r\n\r\n')
    return behaviour


def raw(data, then_close=True):
    """Whatever bytes ``data`` is, as the whole reply (a bad status line, a cut body...)."""
    def behaviour(connection, stop):
        read_request(connection)
        connection.sendall(data)
        if not then_close:
            _idle(stop)
    return behaviour


def close_at_once(connection, stop):
    """Accepts and closes without a word."""
    read_request(connection)


def flood(content_length=10 * 1024 ** 3, chunked=False):
    """A reply that claims (or, chunked, streams) far more than any client should read."""
    def behaviour(connection, stop):
        read_request(connection)
        if chunked:
            connection.sendall(b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n')
            block = b'%x\r\n%s\r\n' % (65536, b'[' * 65536)
        else:
            connection.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n' % content_length)
            block = b'0' * 65536
        deadline = time.monotonic() + 30
        while not stop.is_set() and time.monotonic() < deadline:
            connection.sendall(block)
    return behaviour


def nested_json(depth, opener=b'[', closer=b']'):
    return opener * depth + closer * depth
