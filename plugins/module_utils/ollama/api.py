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
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4

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
        self.version = gemma4.version_tuple(self.version_text)
        tags = call(settings, '/api/tags') or {}
        names = [m.get('name') or m.get('model') for m in (tags.get('models') or []) if isinstance(m, dict)]
        names = [n for n in names if isinstance(n, str) and n]
        self.total = len(names)
        self.models = names[:settings['max_models']]
        self.skipped = names[settings['max_models']:]
        self._shown = {}

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
        return found


def connect(ctx, detection, settings):
    """(server, None), or (None, the finding) when nothing answers (not_applicable) or the version
    does not parse (unknown): the same first answer for every ollama_* detection."""
    server = server_for(ctx, settings)
    if server is None:
        return None, make_finding(detection, 'not_applicable', 'No Ollama answers at %s.' % settings['url'],
                                  evidence={'url': settings['url']})
    if server.version is None:
        return None, make_finding(detection, 'unknown', 'Ollama at %s reports version %r, which does not parse; its '
                                  'rules cannot be chosen.' % (settings['url'], server.version_text),
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


def serve_setting(ctx, name):
    """(value or None, where it came from) of an environment variable of the running ``ollama serve``:
    its process environment, else its systemd unit's Environment= (drop-ins included)."""
    processes, _problems = ctx.processes('ollama', lambda argv0: argv0 == 'ollama')
    servers = [p for p in processes if p.argv[1:2] == ['serve']]
    if not servers:
        return None, 'no ollama serve process found'
    process = servers[0]
    environ = process.environ()
    if environ is not None:
        if name in environ:
            return environ[name], 'environment of ollama serve pid %d' % process.pid
        return None, 'not set in the environment of ollama serve pid %d' % process.pid
    unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
    systemctl = ctx.which('systemctl')
    if unit and systemctl:
        try:
            props = hostio.systemd_show(ctx.run_command, systemctl, unit, ['Environment'], scope=scope)
        except hostio.ReadProblem as problem:
            return None, 'unknown: %s' % problem.reason
        for item in (props.get('Environment') or '').split():
            key, _sep, value = item.partition('=')
            if key == name:
                return value.strip('"'), 'Environment= of %s' % unit
        return None, 'not set in %s' % unit
    return None, 'unknown: the environment of ollama serve pid %d cannot be read (%s)' % (
        process.pid, process.environ_problem)
