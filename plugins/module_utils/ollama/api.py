# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ollama's HTTP API on the audited host, and what its ``ollama serve`` process was started with.

Shared by the ollama_* detections: one /api/version, /api/tags and /api/show per
model and run (ctx.shared), loopback only. Each request has one deadline (connect,
headers and body: loopback_http), the shorter of the setting ``timeout`` and what is
left of the detection's time budget (``detection_timeout``, the runner's budget that
its commands share), so a server that answers every model slowly ends the detection
within its budget; the models not asked by then are one ``unknown`` instance.

Every field a detection reads is checked against the type Ollama gives it (api/types.go
@ v0.33.0-rc2: ListResponse l.797-799, ListModelResponse l.822-832, ShowResponse
l.737-755, ModelDetails l.933-942) before anything reads it: a reply of another shape
is a ProbeFailure (``error``) naming the field, for that model only (a /api/tags entry
or /api/show answer) or for the server (/api/version, /api/tags themselves). ``null``
is an absent field, as Go's omitempty and nil slices give it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, worst_instance
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama.common import nothing_answers

# /api/tags lists every model in one reply, about 350 bytes each: room for max_models' largest value.
TAGS_MAX_BYTES = 48 * 1024 * 1024
# Unreadable /api/tags entries without a usable name, named one by one at most.
MAX_NAMED_PROBLEMS = 5

# The fields read, and their JSON kind (api/types.go @ v0.33.0-rc2; the element kind for lists).
TAG_FIELDS = (('remote_host', str), ('details', dict), ('details.parameter_size', str), ('details.family', str),
              ('details.families', (list, str)), ('details.format', str))
SHOW_FIELDS = (('modelfile', str), ('template', str), ('system', str), ('license', str), ('parameters', str),
               ('remote_host', str), ('messages', (list, dict)), ('capabilities', (list, str)), ('details', dict),
               ('details.format', str), ('details.family', str), ('details.families', (list, str)),
               ('details.parameter_size', str), ('model_info', dict), ('model_info.general.parameter_count', int))
_KIND_NAMES = {str: 'a string', dict: 'an object', list: 'a list', int: 'a whole number'}
_PLURALS = {str: 'strings', dict: 'objects'}


def describe(value):
    """A JSON value's kind in words, for messages that name a field of the wrong type."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'a boolean (%s)' % ('true' if value else 'false')
    if isinstance(value, (int, float)):
        text = repr(value)
        return 'a number (%s)' % (text if len(text) <= 40 else text[:37] + '...')
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'a list'
    return 'an object'


def _at(data, dotted):
    """The value at ``dotted`` (model_info's keys hold dots themselves: 'general.parameter_count')."""
    head, _dot, rest = dotted.partition('.')
    if head == 'model_info' and rest:
        info = data.get('model_info')
        return info.get(rest) if isinstance(info, dict) else None
    value = data.get(head)
    if rest and isinstance(value, dict):
        return _at(value, rest)
    return None if rest else value


def _is(value, kind):
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def field_problem(data, fields):
    """None, or 'field X is <kind>, not <kind>' for the first field of ``fields`` of the wrong kind."""
    for dotted, kind in fields:
        value = _at(data, dotted)
        if value is None:
            continue
        container, element = kind if isinstance(kind, tuple) else (kind, None)
        if not _is(value, container):
            return 'field %s is %s, not %s' % (dotted, describe(value), _KIND_NAMES[container])
        if element is not None:
            wrong = [item for item in value if not _is(item, element)]
            if wrong:
                return 'field %s holds %s, not only %s' % (dotted, describe(wrong[0]), _PLURALS[element])
    return None


def call(settings, path, body=None, timeout=None, runner=None, max_bytes=loopback_http.MAX_REPLY_BYTES):
    """The JSON reply of one request; ``runner``: the detection's CommandRunner, whose time budget
    shortens the timeout (a ProbeFailure ``unknown`` when it is used up)."""
    url = settings['url'].rstrip('/') + path
    seconds = timeout or settings['timeout']
    why = None
    if runner is not None:
        left, limit = runner.limit(seconds)
        if left <= 0:
            raise _budget_failure('%s was not asked: %s is used up' % (url, limit))
        if left < seconds:
            seconds, why = left, limit
    try:
        _status, data = loopback_http.request_json(url, method='POST' if body is not None else 'GET', body=body,
                                                   timeout=seconds, headers=None, max_bytes=max_bytes)
    except loopback_http.ProbeFailure as exc:
        if why and exc.finding_status == 'unknown':
            raise _budget_failure('%s did not answer within %.1f s, what was left of %s' % (url, seconds, why))
        raise
    return data


def _budget_failure(reason):
    """A request the running detection's budget cut: ``unknown``, and never kept for the next detection,
    which has a budget of its own."""
    failure = loopback_http.ProbeFailure(reason, finding_status='unknown')
    failure.budget = True
    return failure


class Ollama(object):
    """One Ollama server's version, model list and /api/show answers, read once per run.

    ``unreadable``: [(model name or None, reason)] of /api/tags entries of the wrong shape (not judged)."""

    def __init__(self, settings, runner=None):
        self.settings = settings
        self.runner = runner
        url = settings['url'].rstrip('/')
        answer = self.call('/api/version')
        if not isinstance(answer, dict):
            raise loopback_http.ProbeFailure('%s/api/version answered %s, not an object' % (url, describe(answer)))
        self.version_text = answer.get('version')
        self.version, self.version_problem = ollama_version.parse(self.version_text)
        tags = self.call('/api/tags', max_bytes=TAGS_MAX_BYTES)
        if not isinstance(tags, dict) or 'models' not in tags:
            raise loopback_http.ProbeFailure('%s/api/tags answered %s without a models field, not the list of models'
                                             % (url, describe(tags)))
        models = tags['models'] if tags['models'] is not None else []   # a Go nil slice: no models
        if not isinstance(models, list):
            raise loopback_http.ProbeFailure('%s/api/tags field models is %s, not a list' % (url, describe(models)))
        # name -> its /api/tags entry: Config.ModelType as details.parameter_size and remote_host
        # (server/model_list_cache.go @ v0.33.0-rc2 l.322-339; routes.go ListHandler before v0.30.3).
        self.tags = {}
        self.unreadable = []
        for index, entry in enumerate(models):
            name, problem = _tag_entry(entry)
            if problem:
                self.unreadable.append((name, '/api/tags entry %d%s: %s' % (index, ' (%s)' % name if name else '', problem)))
            elif name not in self.tags:
                self.tags[name] = entry
        names = list(self.tags)
        self.total = len(names)
        self.models = names[:settings['max_models']]
        self.skipped = names[settings['max_models']:]
        self._shown = {}

    def call(self, path, body=None, timeout=None, max_bytes=loopback_http.MAX_REPLY_BYTES):
        return call(self.settings, path, body, timeout, self.runner, max_bytes)

    def budget_left(self):
        """(seconds left of the running detection's budget, its description); seconds > 0 without a budget."""
        if self.runner is None:
            return 1, None
        return self.runner.limit()

    def tag(self, name):
        return self.tags.get(name) or {}

    def remote_host(self, name):
        """The host a cloud model is proxied to, from /api/tags; None for a local model. Its /api/show
        would itself be proxied to that host (server/routes.go @ v0.33.0-rc2 l.1328-1346), so it is not asked."""
        value = self.tag(name).get('remote_host')
        return value if isinstance(value, str) and value else None

    def show(self, name):
        """/api/show of ``name``; None when it was removed meanwhile (HTTP 404). Raises ProbeFailure otherwise,
        also for an answer that is no object or has a field of the wrong type. Every answer and failure is kept:
        the detections of one run say the same, and a model that did not answer in time is asked once."""
        if name not in self._shown:
            try:
                data = self.call('/api/show', {'model': name})
                problem = None
                if not isinstance(data, dict):
                    problem = '/api/show of %s answered %s, not an object' % (name, describe(data))
                else:
                    wrong = field_problem(data, SHOW_FIELDS)
                    problem = '/api/show of %s: %s' % (name, wrong) if wrong else None
                self._shown[name] = loopback_http.ProbeFailure(problem) if problem else data
            except loopback_http.ProbeFailure as exc:
                if getattr(exc, 'budget', False):
                    raise
                self._shown[name] = None if exc.status == 404 else exc
        if isinstance(self._shown[name], loopback_http.ProbeFailure):
            raise self._shown[name]
        return self._shown[name]

    def problem_instances(self):
        """One ``error`` instance per /api/tags entry that names a model but has a field of the wrong type,
        and one for all entries without a usable name."""
        named = [instance('model %s' % name, 'error', '%s.' % reason, {'model': name})
                 for name, reason in self.unreadable if name]
        unnamed = [reason for name, reason in self.unreadable if not name]
        if unnamed:
            named.append(instance('/api/tags entries', 'error', '%d /api/tags entr%s cannot be read: %s%s.' % (
                len(unnamed), 'y' if len(unnamed) == 1 else 'ies', '; '.join(unnamed[:MAX_NAMED_PROBLEMS]),
                '; ...' if len(unnamed) > MAX_NAMED_PROBLEMS else ''), {'count': len(unnamed)}))
        return named

    def evidence(self):
        found = {'url': self.settings['url'], 'ollama_version': self.version_text, 'models': self.total}
        if self.skipped:
            found['skipped_models'] = {'count': len(self.skipped), 'first': self.skipped[:10]}
        if self.unreadable:
            found['unreadable_tags_entries'] = len(self.unreadable)
        newest = ollama_version.boundary_key(ollama_version.NEWEST_READ)
        if self.version is not None and (self.version.key, self.version.commits) > (newest, 0):
            found['rules_read_to'] = ('ollama/ollama %s (2026-08-21); this version is newer, and changes after that '
                                      'tag are not known' % ollama_version.NEWEST_READ)
        return found


def _tag_entry(entry):
    """(name, None) of a readable /api/tags entry, else (name or None, what is wrong)."""
    if not isinstance(entry, dict):
        return None, 'it is %s, not an object' % describe(entry)
    name = entry.get('name') if entry.get('name') is not None else entry.get('model')
    if not isinstance(name, str) or not name:
        return None, 'its name is %s, not a model name' % ('empty' if name == '' else describe(name))
    return name, field_problem(entry, TAG_FIELDS)


def chat_message(url, reply):
    """(content, thinking) of a non-streamed /api/chat reply (api/types.go @ v0.33.0-rc2 Message l.197-207:
    ``content`` always there, ``thinking`` omitempty, both strings); a ProbeFailure ``unknown`` for a reply
    that is no chat message, which measures nothing."""
    message = reply.get('message') if isinstance(reply, dict) else None
    content = message.get('content') if isinstance(message, dict) else None
    thinking = message.get('thinking') if isinstance(message, dict) else None
    if not isinstance(content, str) or not isinstance(thinking, (str, type(None))):
        shown = 'message is %s' % describe(message) if not isinstance(message, dict) else (
            'message.content is %s' % describe(content) if not isinstance(content, str)
            else 'message.thinking is %s' % describe(thinking))
        raise loopback_http.ProbeFailure('%s answered no chat message (%s)' % (url, shown) if isinstance(reply, dict)
                                         else '%s answered %s, not a chat reply' % (url, describe(reply)),
                                         finding_status='unknown')
    return content, thinking or ''


def local_models(server, evidence, runs_there):
    """The models of /api/tags that run on this server. Cloud models are proxied to their remote host
    (``remote_host``), so what ``runs_there`` runs there, not here: they are counted in
    ``evidence['cloud_models']`` and not judged."""
    cloud = [m for m in server.models if server.remote_host(m)]
    if cloud:
        evidence['cloud_models'] = {'count': len(cloud), 'first': cloud[:10],
                                    'why': 'proxied to their remote host: %s runs there' % runs_there}
    return [m for m in server.models if not server.remote_host(m)]


def judge_models(server, models, judge):
    """The instances ``judge(model)`` gives for ``models`` (None: not relevant), then the /api/tags entries that
    cannot be read. A ProbeFailure is that model's instance; once the detection's time budget is used up, the
    models not asked are one ``unknown`` instance instead of one failure each."""
    instances = []
    for index, model in enumerate(models):
        left, why = server.budget_left()
        if left <= 0:
            rest = models[index:]
            instances.append(instance('models not read', 'unknown', '%d model(s) were not read: %s is used up '
                                      '(first: %s).' % (len(rest), why, ', '.join(rest[:5])),
                                      {'count': len(rest), 'first': rest[:10]}))
            break
        try:
            found = judge(model)
        except loopback_http.ProbeFailure as exc:
            found = instance('model %s' % model, exc.finding_status, 'model %s: %s' % (model, exc), {'model': model})
        if found is not None:
            instances.append(found)
    return instances + server.problem_instances()


class ProbeBudget(object):
    """Which models one detection run may probe: none unless its probe is enabled (postmortem_probes), at most
    the setting probe_max_models of them, and only those named in probe_models when it names any."""

    def __init__(self, ctx, settings, probe):
        self._enabled = probe in ctx.probes
        self._left = settings['probe_max_models']
        self._wanted = settings['probe_models']

    def take(self, model):
        """True, with one probe fewer left, when ``model`` is to be probed."""
        if not self._enabled or self._left <= 0 or (self._wanted and model not in self._wanted):
            return False
        self._left -= 1
        return True


def worst_summary(instances, otherwise):
    """The summary of the most serious error/unknown instance, when no instance is worse than those; else
    ``otherwise`` (the detection's own summary of what it found)."""
    worst = worst_instance(instances)
    if worst is not None and worst['status'] in ('error', 'unknown'):
        return worst['summary']
    return otherwise


def connect(ctx, detection, settings):
    """(server, None), or (None, the finding) when nothing answers (not_applicable) or the version
    does not parse (unknown): the same first answer for every ollama_* detection."""
    server = server_for(ctx, settings)
    if server is None:
        return None, nothing_answers(detection, settings)
    if server.version is None:
        return None, make_finding(detection, 'unknown', 'Ollama at %s: %s.' % (settings['url'], server.version_problem),
                                  evidence=server.evidence())
    return server, None


def server_for(ctx, settings):
    """The run's Ollama for these settings, or None when nothing answers there. A server that could not be
    read is asked once per run: the other ollama_* detections get the same ProbeFailure at once."""
    def connect():
        if not loopback_http.accepts_connections(settings['url'], settings['timeout']):
            return None
        try:
            return Ollama(settings, ctx.runner)
        except loopback_http.ProbeFailure as exc:
            if exc.unreachable:
                return None
            return exc
    key = ('ollama', settings['url'], settings['timeout'], settings['max_models'])
    server = ctx.shared(key, connect)
    if isinstance(server, loopback_http.ProbeFailure):
        raise server
    return server


def serve_environment(ctx, name):
    """(state, value, source) of environment variable ``name`` of the running ``ollama serve``.

    state is 'set' (value is its text), 'unset', or 'unknown' (source says why). Read from the process
    environment; when that cannot be read (another user's process without root), from its systemd unit's
    Environment= (drop-ins included) where that sets it and no EnvironmentFile= can override it. A unit
    that does not set it proves nothing: the service manager's own environment reaches the process too."""
    processes, _problems = ctx.processes('ollama', lambda argv0: argv0 == 'ollama')
    servers = [p for p in processes if p.argv[1:2] == ['serve']]
    if not servers:
        return 'unknown', None, 'no ollama serve process found on this host'
    answers = [_process_setting(ctx, process, name) for process in servers]
    known = set((state, value) for state, value, _source in answers if state != 'unknown')
    if len(known) == 1 and all(state != 'unknown' for state, _value, _source in answers):
        state, value = known.pop()
        return state, value, '; '.join(source for _state, _value, source in answers)
    if len(answers) == 1:
        return answers[0]
    pids = ', '.join(str(p.pid) for p in servers)
    sources = '; '.join(source for _state, _value, source in answers)
    return 'unknown', None, ('%d ollama serve processes (pids %s) do not all answer the same (%s); which one serves '
                             'the url cannot be told' % (len(servers), pids, sources))


def _process_setting(ctx, process, name):
    environ = process.environ()
    if environ is not None:
        if name in environ:
            return 'set', environ[name], 'environment of ollama serve pid %d' % process.pid
        return 'unset', None, 'not in the environment of ollama serve pid %d' % process.pid
    unreadable = 'the environment of ollama serve pid %d cannot be read (%s; run the audit as root)' % (
        process.pid, process.environ_problem)
    unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
    systemctl = ctx.which('systemctl')
    if not (unit and systemctl):
        return 'unknown', None, unreadable
    import shlex
    try:
        props = hostio.systemd_show(ctx.run_command, systemctl, unit, ['Environment', 'EnvironmentFiles'], scope=scope)
    except hostio.ReadProblem as problem:
        return 'unknown', None, '%s, and systemctl show failed: %s' % (unreadable, problem.reason)
    if (props.get('EnvironmentFiles') or '').strip():
        # Assignments from EnvironmentFile= are applied after Environment= and win.
        return 'unknown', None, '%s, and %s reads EnvironmentFile= %s' % (unreadable, unit, props['EnvironmentFiles'].strip())
    try:
        items = shlex.split(props.get('Environment') or '')
    except ValueError:
        items = (props.get('Environment') or '').split()
    value = None
    for item in items:
        key, sep, text = item.partition('=')
        if key == name and sep:
            value = text   # systemd applies assignments in order: the last one wins
    if value is not None:
        return 'set', value, 'Environment= of %s' % unit
    return 'unknown', None, ("%s, and Environment= of %s does not set it (the service manager's own environment "
                             'still could)' % (unreadable, unit))
