# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ollama's HTTP API on the audited host, and what its ``ollama serve`` process was started with.

Shared by the ollama_* detections: one /api/version, /api/tags and /api/show per
model and run (ctx.shared), loopback only, a timeout per request.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

COMMON_SETTINGS = {
    'url': {'type': 'str', 'default': 'http://127.0.0.1:11434',
            'description': "Ollama's address on the audited host (loopback only)."},
    'timeout': {'type': 'int', 'default': 10, 'min': 1, 'max': 300, 'description': 'Seconds one request may take.'},
    'max_models': {'type': 'int', 'default': 500, 'min': 1, 'max': 100000,
                   'description': 'Models read at most; the rest are counted and named as skipped.'},
}


def call(settings, path, body=None, timeout=None):
    url = settings['url'].rstrip('/') + path
    _status, data = loopback_http.request_json(url, method='POST' if body is not None else 'GET', body=body,
                                               timeout=timeout or settings['timeout'])
    return data


class Ollama(object):
    """One Ollama server's version, model list and /api/show answers, read once per run."""

    def __init__(self, settings):
        self.settings = settings
        self.version_text = (call(settings, '/api/version') or {}).get('version')
        self.version, self.version_problem = ollama_version.parse(self.version_text)
        tags = call(settings, '/api/tags') or {}
        models = tags.get('models') if isinstance(tags, dict) else None
        # name -> its /api/tags entry: Config.ModelType as details.parameter_size and remote_host
        # (server/model_list_cache.go @ v0.33.0-rc2 l.322-339; routes.go ListHandler before v0.30.3).
        self.tags = {}
        for entry in models if isinstance(models, list) else []:
            if not isinstance(entry, dict):
                continue
            name = entry.get('name') or entry.get('model')
            if isinstance(name, str) and name and name not in self.tags:
                self.tags[name] = entry
        names = list(self.tags)
        self.total = len(names)
        self.models = names[:settings['max_models']]
        self.skipped = names[settings['max_models']:]
        self._shown = {}

    def tag(self, name):
        return self.tags.get(name) or {}

    def remote_host(self, name):
        """The host a cloud model is proxied to, from /api/tags; None for a local model. Its /api/show
        would itself be proxied to that host (server/routes.go @ v0.33.0-rc2 l.1328-1346), so it is not asked."""
        value = self.tag(name).get('remote_host')
        return value if isinstance(value, str) and value else None

    def show(self, name):
        """/api/show of ``name``; None when it was removed meanwhile. Raises ProbeFailure otherwise."""
        if name not in self._shown:
            try:
                data = call(self.settings, '/api/show', {'model': name})
            except loopback_http.ProbeFailure as exc:
                if exc.status != 404:
                    raise
                data = None
            if data is not None and not isinstance(data, dict):
                raise loopback_http.ProbeFailure('/api/show of %s did not answer an object' % name)
            self._shown[name] = data
        return self._shown[name]

    def evidence(self):
        found = {'url': self.settings['url'], 'ollama_version': self.version_text, 'models': self.total}
        if self.skipped:
            found['skipped_models'] = {'count': len(self.skipped), 'first': self.skipped[:10]}
        newest = ollama_version.boundary_key(ollama_version.NEWEST_READ)
        if self.version is not None and (self.version.key, self.version.commits) > (newest, 0):
            found['rules_read_to'] = ('ollama/ollama %s (2026-08-21); this version is newer, and changes after that '
                                      'tag are not known' % ollama_version.NEWEST_READ)
        return found


def connect(ctx, detection, settings):
    """(server, None), or (None, the finding) when nothing answers (not_applicable) or the version
    does not parse (unknown): the same first answer for every ollama_* detection."""
    server = server_for(ctx, settings)
    if server is None:
        return None, make_finding(detection, 'not_applicable', 'No Ollama answers at %s.' % settings['url'],
                                  evidence={'url': settings['url']})
    if server.version is None:
        return None, make_finding(detection, 'unknown', 'Ollama at %s: %s.' % (settings['url'], server.version_problem),
                                  evidence=server.evidence())
    return server, None


def server_for(ctx, settings):
    """The run's Ollama for these settings, or None when nothing answers there."""
    def connect():
        if not loopback_http.accepts_connections(settings['url'], settings['timeout']):
            return None
        try:
            return Ollama(settings)
        except loopback_http.ProbeFailure as exc:
            if exc.unreachable:
                return None
            raise
    return ctx.shared(('ollama', settings['url']), connect)


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
