"""A stand-in for an Ollama server, for tests: no Ollama binary can be installed or run here.

Its answers are built from upstream's code (ollama/ollama, read at v0.33.0-rc2 = fb3076099 unless
another tag is named), not from the detections it tests. Each model is described by what Ollama
stores (config blob, layers, GGUF keys), and the stand-in derives what the API shows from that:

- /api/tags (server/model_list_cache.go l.322-339, ListModelResponse in api/types.go l.822-832):
  ``name``/``model`` as DisplayShortest() with the tag, ``details.parameter_size`` = Config.ModelType
  as stored (a safetensors import stores none: x/create/client/create.go l.388-402), ``remote_host``
  and ``remote_model`` for cloud models, ``capabilities``.
- /api/show (ShowHandler l.1300-1394, GetModelInfo l.1396-1620): ``modelfile`` is "# Modelfile
  generated ..." plus Model.String() (images.go l.586-675: FROM, TEMPLATE always, SYSTEM, RENDERER,
  PARSER, PARAMETER, LICENSE, MESSAGE; values quoted as parser.quote does, parser/parser.go l.644-654;
  a safetensors model's FROM is its short name, l.1521-1527); ``template`` is the Go TEMPLATE, the
  default ``{{ .Prompt }}`` without a layer (template/template.go l.94, images.go l.688), or, from
  v0.30.0-rc23, the GGUF chat template when the model has one and takes the native path
  (selectedModelTemplate l.1623-1630); ``details`` as stored, except that a safetensors model's
  ``parameter_size`` and ``family`` are recomputed from its config.json (l.1429-1437);
  ``model_info`` with ``general.parameter_count`` (fs/ggml/gguf.go l.251; x/server/show.go l.72) and
  without ``tokenizer.chat_template`` (l.1580); ``capabilities``; ``remote_host``/``remote_model``
  for cloud models; the JSON fields ``renderer``/``parser`` never filled, so never sent (omitempty).
- The chat path is chatModeForModel of the version served (routes.go l.2357-2385 and its
  v0.30.0-rc0..rc21 and rc22 forms), with OLLAMA_GO_TEMPLATE read as envconfig does (l.177-190,
  l.375-377) from ``go_template_env`` (None: unset). ``prefer_chat_template`` on a model is the
  outcome of shouldPreferChatTemplate for its two templates (images.go l.295-307, not recomputed).
- /api/chat with a format: the native path re-sorts the schema's keys (llm/llama_server.go
  l.2308-2337), and so does every model on v0.5.0-rc1..v0.5.2-rc3 (llm/server.go @ v0.5.0
  l.749-760); on the rendered path from v0.12.4-rc7 a thinking model answers ``direct_seeds`` at once,
  without thinking, with bare text the schema never constrained (routes.go l.2764-2766, l.2826),
  as the write-ups measured. A model without the completion capability is refused chat (l.2633-2637).

Simplified on purpose: capabilities are ``completion`` (or ``embedding`` alone for an embedding
model) plus ``thinking`` when ``thinking`` is set, on /api/tags and /api/show alike; PARAMETER
values and the ``parameters`` text are written plainly ("num_ctx 8192"). Misbehaviours on request:
slow, HTTP 500, non-JSON, a model deleted between /api/tags and /api/show, an /api/create that fails for
one model (``fail_create``: name -> (status, error)), and one that loses a model's system prompt
(``lossy_create``: names) as a broken proxy or a buggy build could.
"""
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_TEMPLATE = '{{ .Prompt }}'
HARMONY_FAMILIES = ('gptoss', 'gpt-oss')


def gemma4(parameter_size, renderer='gemma4', family='gemma4', **extra):
    """A Gemma 4 GGUF as `ollama create`/pull stores it: RENDERER and PARSER gemma4 (server/create.go)."""
    model = {'renderer': renderer, 'parser': 'gemma4' if renderer else None, 'parameter_size': parameter_size,
             'family': family, 'thinking': True}
    model.update(extra)
    return model


def safetensors_gemma4(parameter_count, renderer='gemma4'):
    """A Gemma 4 imported from safetensors: RENDERER/PARSER gemma4, ModelFormat safetensors and no
    ModelType (x/create/client/create.go l.388-402, l.677-678)."""
    return {'renderer': renderer, 'parser': 'gemma4', 'parameter_size': '', 'parameter_count': parameter_count,
            'family': '', 'architecture': 'gemma4', 'format': 'safetensors', 'thinking': True}


def plain(parameter_size='1.0B', family='gemma3', thinking=False, direct_seeds=(), template=None, chat_template=None,
          **extra):
    """A GGUF model without renderer or parser. ``template``: its Go TEMPLATE layer (None: none);
    ``chat_template``: the GGUF's tokenizer.chat_template (None: none)."""
    model = {'renderer': None, 'parser': None, 'parameter_size': parameter_size, 'family': family,
             'thinking': thinking, 'direct_seeds': tuple(direct_seeds), 'template': template,
             'chat_template': chat_template}
    model.update(extra)
    return model


def cloud(remote_model, family='gptoss', remote_host='https://ollama.com:443', thinking=True):
    """A cloud model: config with RemoteHost/RemoteModel, no weights here."""
    return {'remote_host': remote_host, 'remote_model': remote_model, 'family': family, 'parameter_size': '',
            'thinking': thinking}


def _version_key(text):
    match = re.match(r'^v?(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?', text or '')
    if not match:
        return None
    release = tuple(int(match.group(i)) for i in (1, 2, 3))
    return release + ((0, int(match.group(4))) if match.group(4) else (1, 0))


def _quote(text):
    """parser.quote (parser/parser.go l.644-654)."""
    if '\n' in text or text.startswith(' ') or text.endswith(' '):
        return ('"""%s"""' if '"' in text else '"%s"') % text
    return text


def _human_number(count):
    """format.HumanNumber (format/format.go)."""
    for limit, unit, decimals in ((1e9, 'B', 1), (1e6, 'M', 2)):
        if count >= limit:
            number = count / limit
            return ('%.0f%s' % (number, unit)) if number == int(number) else ('%.*f%s' % (decimals, number, unit))
    if count >= 1e3:
        return '%.0fK' % (count / 1e3)
    return str(count)


def _count_of(parameter_size):
    match = re.match(r'^([0-9.]+)([BMK])$', parameter_size or '')
    if not match:
        return None
    return int(float(match.group(1)) * {'B': 1e9, 'M': 1e6, 'K': 1e3}[match.group(2)])


class OllamaStandIn:
    def __init__(self, version='0.35.1', models=None, port=0, go_template_env=None):
        self.version = version
        self.models = dict(models or {})
        self.go_template_env = go_template_env   # OLLAMA_GO_TEMPLATE of this "server", None: unset
        self.mode = None          # None, 'slow', 'error', 'garbage'
        self.deleted = set()      # listed in /api/tags, gone for /api/show
        self.requests = []
        self.shown = []           # every /api/show model, in order
        self.creates = []         # every /api/create body, in order
        self.token = None         # a bearer token /api/create requires, when set
        self.fail_create = {}     # model -> (status, error): /api/create of it answers that, changing nothing
        self.lossy_create = set()  # models whose /api/create drops the system prompt
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
                    self._send(*stand_in.chat(body))
                    return
                if self.path == '/api/show':
                    name = body.get('model') or body.get('name')
                    stand_in.shown.append(name)
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

    # --- what the version served does -------------------------------------------------------------

    def _at_least(self, first):
        key = _version_key(self.version)
        return key is not None and key >= _version_key(first)

    def _go_template(self, default):
        """envconfig.GoTemplate(default): Var() then strconv.ParseBool; an unparsable value is true."""
        text = (self.go_template_env or '').strip().strip('"\'')
        if not text:
            return default
        if text in ('1', 't', 'T', 'TRUE', 'true', 'True'):
            return True
        if text in ('0', 'f', 'F', 'FALSE', 'false', 'False'):
            return False
        return True

    def _go_template_env_set(self):
        return self._go_template(True) == self._go_template(False)   # images.go l.309-311

    def _harmony(self, model):
        template = model.get('template') or DEFAULT_TEMPLATE
        return model.get('family') in HARMONY_FAMILIES and '<|start|>' in template and '<|end|>' in template

    def _prefer_chat_template(self, model):
        """Model.PreferChatTemplate (images.go l.793-795; from v0.30.0-rc22)."""
        return (self._at_least('0.30.0-rc22') and not self._go_template_env_set() and model.get('template') is not None
                and bool(model.get('chat_template')) and not model.get('renderer') and not model.get('parser')
                and not self._harmony(model) and bool(model.get('prefer_chat_template')))

    def native(self, model):
        """chatModeForModel(m) == chatExecutionModeNative for the version served."""
        if not self._at_least('0.30.0-rc0'):
            return False
        if model.get('format') == 'safetensors' or model.get('renderer') or model.get('parser') or self._harmony(model):
            return False
        has_go_template = model.get('template') is not None
        if not self._at_least('0.30.0-rc22'):   # shouldUseLegacyTemplate (routes.go @ v0.30.0-rc15 l.2343-2345)
            return not (has_go_template and self._go_template(True))
        if not has_go_template:                  # shouldUseGoTemplate (l.2376-2385)
            return True
        if self._go_template_env_set():
            return not self._go_template(True)
        return self._prefer_chat_template(model) or not self._go_template(True)

    def capabilities(self, model):
        caps = ['embedding'] if model.get('embedding') else ['completion']
        if model.get('thinking'):
            caps.append('thinking')
        return caps

    # --- the API ----------------------------------------------------------------------------------

    def tag(self, name):
        model = self.models[name]
        entry = {'name': name, 'model': name, 'modified_at': '2026-08-21T10:00:00Z', 'size': 1000,
                 'digest': 'sha256:%s' % model.get('blob', '0123'),
                 'details': {'parent_model': '', 'format': model.get('format', 'gguf') if not model.get('remote_host') else '',
                             'family': model.get('family', ''), 'families': [model['family']] if model.get('family') else None,
                             'parameter_size': model.get('parameter_size', ''), 'quantization_level': 'Q4_K_M'},
                 'capabilities': self.capabilities(model)}
        if model.get('remote_host'):
            entry.update(remote_host=model['remote_host'], remote_model=model.get('remote_model', ''))
        return entry

    def _modelfile(self, name, model):
        template = model.get('template')
        lines = []
        if model.get('remote_host'):
            lines.append('FROM %s' % name)
        elif model.get('format') == 'safetensors':
            lines.append('FROM %s' % name)
        else:
            lines.append('FROM /root/.ollama/models/blobs/sha256-%s' % model.get('blob', '0123'))
        lines.append('TEMPLATE %s' % _quote(template if template is not None else DEFAULT_TEMPLATE))
        if model.get('system'):
            lines.append('SYSTEM %s' % _quote(model['system']))
        if model.get('renderer'):
            lines.append('RENDERER %s' % _quote(model['renderer']))
        if model.get('parser'):
            lines.append('PARSER %s' % _quote(model['parser']))
        for key, value in sorted((model.get('parameters') or {}).items()):
            lines.append('PARAMETER %s %s' % (key, value))
        if model.get('license'):
            lines.append('LICENSE %s' % _quote(model['license']))
        header = '# Modelfile generated by "ollama show"\n'
        if model.get('format') == 'safetensors':
            return header + '\n'.join(lines) + '\n'
        return header + ('# To build a new Modelfile based on this, replace FROM with:\n# FROM %s\n\n' % name
                         + '\n'.join(lines) + '\n')

    def show(self, name):
        model = self.models[name]
        template = model.get('template')
        go_template = template if template is not None else DEFAULT_TEMPLATE
        count = model.get('parameter_count') or _count_of(model.get('parameter_size')) or 0
        details = {'parent_model': '', 'format': model.get('format', 'gguf'), 'family': model.get('family', ''),
                   'families': [model['family']] if model.get('family') else None,
                   'parameter_size': model.get('parameter_size', ''), 'quantization_level': 'Q4_K_M'}
        answer = {'modelfile': self._modelfile(name, model), 'details': details,
                  'capabilities': self.capabilities(model), 'modified_at': '2026-08-21T10:00:00Z'}
        if model.get('remote_host'):
            details['format'] = ''
            answer.update(remote_host=model['remote_host'], remote_model=model.get('remote_model', ''),
                          template=go_template, model_info={'general.architecture': model.get('family', '')})
            return answer
        if model.get('format') == 'safetensors':
            # routes.go l.1429-1437: family and parameter_size from config.json and the tensors.
            details['family'] = model.get('architecture', '')
            details['parameter_size'] = _human_number(count)
            answer.update(template=go_template, model_info={'general.architecture': model.get('architecture', ''),
                                                            'general.parameter_count': count})
        else:
            shown = go_template
            if self._at_least('0.30.0-rc23') and model.get('chat_template') and self.native(model):
                shown = model['chat_template']
            answer.update(template=shown, model_info={'general.architecture': model.get('family', ''),
                                                      'general.parameter_count': count,
                                                      'general.file_type': 15})
        for key in ('system', 'license'):
            if model.get(key):
                answer[key] = model[key]
        if model.get('parameters'):
            answer['parameters'] = '\n'.join('%s %s' % kv for kv in sorted(model['parameters'].items()))
        if model.get('messages'):
            answer['messages'] = model['messages']
        return answer

    def create(self, body, authorization=None):
        """/api/create from an existing model: FROM keeps its config, the given keys override it."""
        if self.token and authorization != 'Bearer %s' % self.token:
            return 401, {'error': 'unauthorized'}
        if body.get('model') in self.fail_create:
            return self.fail_create[body['model']]
        base = self.models.get(body.get('from'))
        if base is None:
            return 404, {'error': "model '%s' not found" % body.get('from')}
        created = dict(base)
        # create.go @ v0.33.0-rc2 l.66-67 and l.169-173: an empty renderer or parser keeps the base model's.
        for key in ('renderer', 'parser'):
            if body.get(key):
                created[key] = body[key]
        for key in ('system', 'template', 'license', 'messages'):
            if body.get(key) is not None:
                created[key] = body[key]
        if body.get('parameters') is not None:
            created['parameters'] = dict(body['parameters'])
        if body.get('model') in self.lossy_create:
            created.pop('system', None)
        created['blob'] = '%04x' % (len(self.creates) + 1)
        self.creates.append(body)
        self.models[body['model']] = created
        return 200, {'status': 'success'}

    def chat(self, body):
        """(status, body) of one non-streamed /api/chat reply (think, format, seed honoured as measured)."""
        model = self.models[body['model']]
        if 'completion' not in self.capabilities(model):
            return 400, {'error': '"%s" does not support chat' % body['model']}
        schema = body.get('format') or {}
        keys = list((schema.get('properties') or {}).keys()) if isinstance(schema, dict) else []
        native = self.native(model)
        if native or (self._at_least('0.5.0-rc1') and not self._at_least('0.5.2')):
            keys = sorted(keys)
        two_pass = self._at_least('0.12.4-rc7') and not native
        seed = (body.get('options') or {}).get('seed')
        message = {'role': 'assistant'}
        thinks = body.get('think') and model.get('thinking')
        if thinks and two_pass and seed in model.get('direct_seeds', ()):
            message['content'] = 'Paris is the capital of France.'  # answered at once: never constrained
        else:
            if thinks:
                message['thinking'] = 'The user wants a short answer.'
            message['content'] = json.dumps(dict((k, 'Paris' if k == 'answer' else 'blue') for k in keys))
        return 200, {'model': body['model'], 'message': message, 'done': True}

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --- answers as data, for servers that misbehave on purpose ----------------------------------------

def recorded_answers(models, version='0.33.0-rc2'):
    """What a stand-in with ``models`` answers, as plain data a scripted server can serve and a test can
    spoil: {'version': ..., 'tags': ..., 'show': {model: ...}, 'chat': {model: ...}}."""
    standin = OllamaStandIn(version, models)
    try:
        schema = {'properties': {'zeta_colour': {}, 'alpha_animal': {}}}
        return {'version': {'version': version},
                'tags': {'models': [standin.tag(name) for name in standin.models]},
                'show': dict((name, standin.show(name)) for name in standin.models),
                'chat': dict((name, standin.chat({'model': name, 'format': schema, 'think': True,
                                                  'options': {'seed': 1}})[1]) for name in standin.models)}
    finally:
        standin.close()


class ScriptedOllama:
    """A loopback server answering ``answers`` (as recorded_answers() gives them, by path and, for
    /api/show and /api/chat, by model): an answer is JSON data, raw bytes, or a hostile behaviour of
    tests/hostile_servers.py (silent, trickling...). ``answers`` may be replaced between runs;
    ``asked`` lists (path, model) of every request."""

    def __init__(self, answers):
        import hostile_servers
        self.hs = hostile_servers
        self.answers = answers
        self.asked = []
        self.server = hostile_servers.MisbehavingServer(self._behaviour)
        self.url = self.server.url

    def _behaviour(self, connection, stop):
        connection.settimeout(5)
        seen = b''
        while b'\r\n' not in seen:
            seen = connection.recv(65536, 2)  # MSG_PEEK: the request line, left for the behaviour to read
            if not seen:
                return None
        path = seen.split(b' ')[1].decode('latin-1')
        request = None
        if path in ('/api/show', '/api/chat'):
            request = self.hs.read_request(connection)
            model = json.loads(request.partition(b'\r\n\r\n')[2] or b'{}').get('model')
            self.asked.append((path, model))
            answer = self.answers[path[5:]].get(model, (404, {'error': "model '%s' not found" % model}))
        else:
            self.asked.append((path, None))
            answer = self.answers.get(path[5:], (404, {'error': 'not found'}))
        if isinstance(answer, tuple):
            answer = self.hs.answer(json.dumps(answer[1]).encode(), status=answer[0])
        elif not callable(answer):
            answer = self.hs.answer(answer if isinstance(answer, bytes) else json.dumps(answer).encode())
        # A request read already (to find its model) is replayed to the behaviour, which reads it again.
        return answer(_Replayed(connection, request) if request is not None else connection, stop)

    def close(self):
        self.server.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Replayed:
    def __init__(self, connection, request):
        self.connection, self.request = connection, request

    def recv(self, size, *flags):
        data, self.request = self.request[:size], self.request[size:]
        return data

    def settimeout(self, value):
        self.connection.settimeout(value)

    def sendall(self, data):
        self.connection.sendall(data)


def main(argv):
    """PORT STATE.json: run a stand-in until killed, with the models in STATE.json
    ({"version": ..., "models": {...}, "token": ..., "go_template_env": ...}); used by the Molecule scenario."""
    with open(argv[1]) as handle:
        state = json.load(handle)
    port = int(argv[0])
    server = OllamaStandIn(state.get('version', '0.35.1'), state.get('models'), port=port,
                           go_template_env=state.get('go_template_env'))
    server.token = state.get('token')
    server.thread.join()


if __name__ == '__main__':
    import sys
    main(sys.argv[1:])
