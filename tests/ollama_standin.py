"""A stand-in for an Ollama server, for tests: no Ollama binary can be installed here.

It answers /api/version, /api/tags and /api/show the way Ollama does (names as
DisplayShortest() with their tag; the stored RENDERER only in the modelfile
text; details.parameter_size as "11.9B"), from a model table the test gives it,
for a version the test chooses. /api/chat answers with a format the way the
write-ups measured: a model on the native path (``native``) returns the schema's
keys sorted; a thinking model answers some seeds (``direct_seeds``) at once,
without thinking, with bare text that the schema never constrained.
Misbehaviours on request: slow, HTTP 500, non-JSON, a model deleted between
/api/tags and /api/show.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def gemma4(parameter_size, renderer='gemma4', family='gemma4'):
    return {'renderer': renderer, 'parser': 'gemma4' if renderer else None, 'parameter_size': parameter_size,
            'family': family, 'thinking': True}


def plain(parameter_size='1.0B', family='gemma3', native=False, thinking=False, direct_seeds=()):
    """A model without renderer or parser; ``native``: it takes the native chat path."""
    return {'renderer': None, 'parser': None, 'parameter_size': parameter_size, 'family': family,
            'native': native, 'thinking': thinking, 'direct_seeds': tuple(direct_seeds)}


class OllamaStandIn:
    def __init__(self, version='0.35.1', models=None, port=0):
        self.version = version
        self.models = dict(models or {})
        self.mode = None          # None, 'slow', 'error', 'garbage'
        self.deleted = set()      # listed in /api/tags, gone for /api/show
        self.requests = []
        self.creates = []         # every /api/create body, in order
        self.token = None         # a bearer token /api/create requires, when set
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body, raw=False):
                data = body if raw else json.dumps(body).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _common(self):
                stand_in.requests.append(self.path)
                if stand_in.mode == 'slow':
                    time.sleep(5)
                if stand_in.mode == 'error':
                    self._send(500, {'error': 'something went wrong'})
                    return True
                if stand_in.mode == 'garbage':
                    self._send(200, b'<html>bad gateway</html>', raw=True)
                    return True
                return False

            def do_GET(self):
                if self._common():
                    return
                if self.path == '/api/version':
                    self._send(200, {'version': stand_in.version})
                elif self.path == '/api/tags':
                    self._send(200, {'models': [stand_in.tag(name) for name in stand_in.models]})
                else:
                    self._send(404, {'error': 'not found'})

            def do_POST(self):
                if self._common():
                    return
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'{}')
                if self.path == '/api/copy':
                    if body.get('source') not in stand_in.models:
                        self._send(404, {'error': 'model not found'})
                    else:
                        stand_in.models[body['destination']] = dict(stand_in.models[body['source']])
                        self._send(200, {})
                    return
                if self.path == '/api/create':
                    status, answer = stand_in.create(body, self.headers.get('Authorization'))
                    self._send(status, answer)
                    return
                if self.path == '/api/chat':
                    self._send(200, stand_in.chat(body))
                    return
                if self.path == '/api/show':
                    name = body.get('model') or body.get('name')
                    if name not in stand_in.models or name in stand_in.deleted:
                        self._send(404, {'error': "model '%s' not found" % name})
                    else:
                        self._send(200, stand_in.show(name))
                else:
                    self._send(404, {'error': 'not found'})

        self.server = ThreadingHTTPServer(('127.0.0.1', port), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def tag(self, name):
        model = self.models[name]
        return {'name': name, 'model': name, 'details': {'family': model['family'], 'parameter_size': model['parameter_size']}}

    def show(self, name):
        model = self.models[name]
        lines = ['# Modelfile generated by "ollama show"', 'FROM /root/.ollama/models/blobs/sha256-%s' % model.get('blob', '0123')]
        if model.get('template'):
            lines.append('TEMPLATE """%s"""' % model['template'])
        if model.get('system'):
            lines.append('SYSTEM """%s"""' % model['system'])
        for key, value in sorted((model.get('parameters') or {}).items()):
            lines.append('PARAMETER %s %s' % (key, value))
        if model.get('renderer'):
            lines.append('RENDERER %s' % model['renderer'])
        if model.get('parser'):
            lines.append('PARSER %s' % model['parser'])
        if model.get('license'):
            lines.append('LICENSE """%s"""' % model['license'])
        return {'modelfile': '\n'.join(lines) + '\n',
                'system': model.get('system', ''), 'license': model.get('license', ''),
                'parameters': '\n'.join('%s %s' % kv for kv in sorted((model.get('parameters') or {}).items())),
                'messages': model.get('messages') or [],
                # Never filled by Ollama (checked v0.12.0 to fb3076099): the resolved renderer is not shown.
                'renderer': '', 'parser': '',
                'details': {'family': model['family'], 'families': [model['family']],
                            'parameter_size': model['parameter_size'], 'format': 'gguf'},
                'template': model.get('template') or ('' if model.get('native') else '{{ .Prompt }}'),
                'capabilities': ['completion'] + (['thinking'] if model.get('thinking') else [])}

    def create(self, body, authorization=None):
        """/api/create from an existing model: FROM keeps its config, the given keys override it."""
        if self.token and authorization != 'Bearer %s' % self.token:
            return 401, {'error': 'unauthorized'}
        base = self.models.get(body.get('from'))
        if base is None:
            return 404, {'error': "model '%s' not found" % body.get('from')}
        created = dict(base)
        for key in ('renderer', 'parser', 'system', 'template', 'license', 'messages'):
            if body.get(key) is not None:
                created[key] = body[key]
        if body.get('parameters') is not None:
            created['parameters'] = dict(body['parameters'])
        created['blob'] = '%04x' % (len(self.creates) + 1)
        self.creates.append(body)
        self.models[body['model']] = created
        return 200, {'status': 'success'}

    def chat(self, body):
        """One non-streamed /api/chat reply (think, format, seed honoured as measured)."""
        model = self.models[body['model']]
        schema = body.get('format') or {}
        keys = list((schema.get('properties') or {}).keys())
        if model.get('native'):
            keys = sorted(keys)  # llamaServerChatResponseFormat() via map[string]any
        seed = (body.get('options') or {}).get('seed')
        message = {'role': 'assistant'}
        if body.get('think') and model.get('thinking') and seed not in model.get('direct_seeds', ()):
            message['thinking'] = 'The user wants a short answer.'
            message['content'] = json.dumps(dict((k, 'Paris' if k == 'answer' else 'blue') for k in keys))
        elif body.get('think') and model.get('thinking'):
            message['content'] = 'Paris is the capital of France.'  # answered at once: never constrained
        else:
            message['content'] = '{' + ', '.join('"%s": "%s"' % (k, 'x') for k in keys) + '}'
        return {'model': body['model'], 'message': message, 'done': True}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def main(argv):
    """PORT STATE.json: run a stand-in until killed, with the models in STATE.json
    ({"version": ..., "models": {...}, "token": ...}); used by the Molecule scenario."""
    with open(argv[1]) as handle:
        state = json.load(handle)
    port = int(argv[0])
    server = OllamaStandIn(state.get('version', '0.35.1'), state.get('models'), port=port)
    server.token = state.get('token')
    server.thread.join()


if __name__ == '__main__':
    import sys
    main(sys.argv[1:])
