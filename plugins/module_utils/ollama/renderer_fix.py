# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pin the renderer of Ollama models (the ollama_gemma4_renderer_fix module): plan, back up, apply,
verify, roll back.

A model is re-created through /api/create from itself with ``renderer`` and ``parser`` set,
passing its system prompt, template, parameters, license and messages as they are (create.go
@ v0.33.0-rc2 l.66-67 sets config.Renderer/Parser from the request; l.169-173 inherit the base
model's when a request leaves them empty, so a re-create can set a renderer but never remove one).
/api/show is read back and compared with what it was.

The order makes every failure say exactly what changed:

1. plan: /api/show of every model; nothing is changed.
2. back up every model that will change (its Modelfile and /api/show answer, files created new in
   ``backup_dir``). A backup that cannot be written stops the run before any model is touched,
   and the backups of this run are removed: nothing was changed.
3. re-create the models one at a time, each verified. Models are independent: one that was
   re-created and verified stays pinned when a later one fails. A model that was re-created but
   lost a field (or got another renderer) is re-created again with its old renderer, parser and
   fields, and verified again.

``FixFailed`` says which model failed and why, which models were already re-created (with their
backups), what was put back or could not be, and which were not attempted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, fix_protocol, hostio, loopback_http
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

KEPT = ('system', 'template', 'parameters', 'license', 'messages')
# gemma4-small and gemma4-large exist from the first tag with PR 15612 (renderer.RULE_STEPS).
PINNABLE_FROM = '0.21.0-rc0'
PARSER = 'gemma4'


class FixFailed(fix_protocol.FixFailed):
    """The run stopped; the message says what was changed. ``models``: the entries of the models looked at."""

    def __init__(self, message, models=None):
        super(FixFailed, self).__init__(message, models=models or [])
        self.models = models or []


class Client(object):
    """The Ollama API the fix uses: loopback only, one deadline per request, answers checked for the
    types Ollama gives them (ollama.api.SHOW_FIELDS). Tests pass an object with the same methods."""

    def __init__(self, url, timeout, token=None):
        self.url = url.rstrip('/')
        self.timeout = timeout
        self.token = token

    def _call(self, path, body=None, headers=None):
        return loopback_http.request_json(self.url + path, method='POST' if body is not None else 'GET', body=body,
                                          timeout=self.timeout, headers=headers)[1]

    def version(self):
        answer = self._call('/api/version')
        if not isinstance(answer, dict):
            raise loopback_http.ProbeFailure('%s/api/version answered %s, not an object'
                                             % (self.url, ollama_api.describe(answer)))
        return answer.get('version')

    def show(self, name):
        answer = self._call('/api/show', {'model': name})
        if not isinstance(answer, dict):
            raise loopback_http.ProbeFailure('/api/show of %s answered %s, not an object'
                                             % (name, ollama_api.describe(answer)))
        problem = ollama_api.field_problem(answer, ollama_api.SHOW_FIELDS)
        if problem:
            raise loopback_http.ProbeFailure('/api/show of %s: %s' % (name, problem))
        return answer

    def create(self, body):
        # The token goes to /api/create only: the one call a proxy in front of Ollama guards.
        headers = {'Authorization': 'Bearer %s' % self.token} if self.token else None
        self._call('/api/create', body, headers)


def check_version(text):
    """None when Ollama ``text`` knows gemma4-small/-large, else why nothing can be pinned."""
    version, problem = ollama_version.parse(text)
    if version is None:
        return 'Ollama cannot pin a renderer here: %s' % problem
    has = version.has(PINNABLE_FROM)
    if has is None:
        return ('Ollama %s cannot be told to have gemma4-small/-large (a build %d commit(s) after %s; they exist from '
                '0.21.0 on)' % (text, version.commits, version.tag))
    if not has:
        return ('Ollama %s cannot pin a renderer: gemma4-small/-large exist from 0.21.0 on; upgrade Ollama first'
                % text)
    return None


def pinned_modelfile(modelfile, renderer):
    """The Modelfile text with RENDERER set and PARSER gemma4 present (other lines untouched)."""
    out, seen = [], set()
    for line in str(modelfile or '').splitlines():
        word = line.strip().split(None, 1)[0].upper() if line.strip() else ''
        seen.add(word)
        out.append('RENDERER %s' % renderer if word == 'RENDERER' else line)
    if 'RENDERER' not in seen:
        out.append('RENDERER %s' % renderer)
    if 'PARSER' not in seen:
        out.append('PARSER %s' % PARSER)
    return '\n'.join(out) + '\n'


def parameters_dict(text):
    """/api/show's parameters text ("num_ctx 8192", 'stop "<turn|>"') as /api/create wants them."""
    found = {}
    for line in str(text or '').splitlines():
        words = line.strip().split(None, 1)
        if len(words) != 2:
            continue
        key, raw = words[0], words[1].strip()
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                continue
        if key in found:
            found[key] = (found[key] if isinstance(found[key], list) else [found[key]]) + [value]
        else:
            found[key] = [value] if key == 'stop' else value
    return found


class ModelPlan(object):
    """One model: its /api/show answer now, and what pinning changes."""

    def __init__(self, name, show, renderer):
        self.name = name
        self.show = show
        directives = gemma4.stored_directives(show.get('modelfile'))
        self.before = directives.get('RENDERER')
        self.before_parser = directives.get('PARSER')
        self.renderer = renderer
        self.changed = self.before != renderer
        self.after_text = pinned_modelfile(show.get('modelfile'), renderer)
        self.backup = None

    def entry(self):
        found = {'model': self.name, 'before_renderer': self.before,
                 'after_renderer': self.renderer if self.changed else self.before, 'changed': self.changed}
        if self.backup:
            found['backup'] = self.backup
        return found

    def diff(self):
        return {'before_header': self.name, 'after_header': self.name, 'before': self.show.get('modelfile') or '',
                'after': self.after_text}


def plan(client, names, renderer):
    """[ModelPlan] for ``names``, read from /api/show; nothing is changed."""
    return [ModelPlan(name, client.show(name), renderer) for name in names]


# --- backups -------------------------------------------------------------------------------------


def _reason(exc):
    return exc.strerror or str(exc) if isinstance(exc, (IOError, OSError)) else str(exc)


def prepare_backup_dir(directory):
    """``directory`` made ready for backups (created 0700 when missing); FixFailed says why it cannot be."""
    try:
        info = os.stat(directory)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise FixFailed('backup_dir %s cannot be used: %s; nothing was changed' % (directory, _reason(exc)))
        try:
            os.makedirs(directory, 0o700)
        except OSError as exc:
            raise FixFailed('backup_dir %s cannot be created: %s; nothing was changed' % (directory, _reason(exc)))
        return
    if not stat.S_ISDIR(info.st_mode):
        raise FixFailed('backup_dir %s is %s, not a directory; nothing was changed'
                        % (directory, 'a regular file' if stat.S_ISREG(info.st_mode) else hostio.file_kind(info.st_mode)))


def _backup_stem(directory, name):
    """<directory>/<model name, safe for any filesystem>.<UTC stamp>, with -2, -3 ... when taken (filewrite.backup_path).
    The name part is cut to 100 characters: a file name may have 255 at most, and the stamp and suffix follow."""
    safe = re.sub(r'[^A-Za-z0-9._-]', '_', name)[:100]
    stem = filewrite.backup_path(os.path.join(directory, safe))[:-len(filewrite.BACKUP_SUFFIX)]
    candidate, number = stem, 1
    while os.path.lexists(candidate + '.Modelfile') or os.path.lexists(candidate + '.show.json'):
        number += 1
        candidate = '%s-%d' % (stem, number)
    return candidate


def write_backups(plans, directory):
    """Each changing model's Modelfile and /api/show answer in ``directory``; ModelPlan.backup is the Modelfile.
    FixFailed (nothing was changed, the backups of this run removed) when one cannot be written."""
    prepare_backup_dir(directory)
    written = []
    for model in plans:
        if not model.changed:
            continue
        stem = _backup_stem(directory, model.name)
        try:
            for suffix, text in (('.Modelfile', model.show.get('modelfile') or ''),
                                 ('.show.json', json.dumps(model.show, indent=1, sort_keys=True) + '\n')):
                # 0600, fsynced, its name durable before any model is re-created: a Modelfile may hold a
                # system prompt.
                filewrite.write_new(stem + suffix, text, 0o600)
                written.append(stem + suffix)
        except (IOError, OSError, ValueError) as exc:
            for path in written:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            for other in plans:
                other.backup = None
            raise FixFailed('could not back up model %s to %s: %s; no model was changed (the backups of this run '
                            'were removed)' % (model.name, directory, _reason(exc)))
        model.backup = stem + '.Modelfile'


# --- apply, verify, roll back ----------------------------------------------------------------------


def create_body(name, show, renderer, parser):
    """The /api/create request that re-creates ``name`` from itself with ``renderer``/``parser`` and the
    fields of ``show`` (its /api/show answer) as they are."""
    body = {'model': name, 'from': name, 'renderer': renderer, 'parser': parser, 'stream': False}
    for key in ('system', 'template', 'license'):
        if show.get(key):
            body[key] = show[key]
    if show.get('messages'):
        body['messages'] = show['messages']
    if show.get('parameters'):
        body['parameters'] = parameters_dict(show['parameters'])
    return body


def differences(before, after, renderer):
    """What ``after`` (/api/show) lacks to be ``before`` with RENDERER ``renderer``: [] when none."""
    found = []
    stored = gemma4.stored_renderer(after.get('modelfile'))
    if stored != renderer:
        found.append('its stored renderer is %s' % (stored or 'none'))
    lost = [key for key in KEPT if (before.get(key) or None) != (after.get(key) or None)]
    if lost:
        found.append('its %s changed' % ', '.join(lost))
    return found


def _roll_back(client, model):
    """Re-create ``model`` with its old renderer, parser and fields; '' when it is back as it was, else why not."""
    if not model.before:
        return ("/api/create cannot remove a renderer (create.go keeps the model's own when none is given); restore "
                "it with ollama create %s -f %s" % (model.name, model.backup or 'its Modelfile'))
    try:
        client.create(create_body(model.name, model.show, model.before, model.before_parser or ''))
        now = client.show(model.name)
    except loopback_http.ProbeFailure as exc:
        return str(exc)
    left = differences(model.show, now, model.before)
    parser = gemma4.stored_directives(now.get('modelfile')).get('PARSER')
    if parser != model.before_parser:
        left.append('its parser is %s, was %s (/api/create cannot remove one)'
                    % (parser or 'none', model.before_parser or 'none'))
    return '; '.join(left)


def _state(client, model):
    """After a failed /api/create: ('as_before' | 'pinned' | 'damaged' | 'unknown', what /api/show says)."""
    try:
        now = client.show(model.name)
    except loopback_http.ProbeFailure as exc:
        return 'unknown', 'whether it changed cannot be told: %s' % exc
    if not differences(model.show, now, model.renderer):
        return 'pinned', ''
    if not differences(model.show, now, model.before):
        return 'as_before', 'it is unchanged'
    return 'damaged', ''


def apply(client, plans):
    """Re-create every changing model in ``plans`` (backed up already) and verify it. Returns the entries;
    FixFailed names the model that failed and says what was already changed."""
    done = []
    for index, model in enumerate(plans):
        if not model.changed:
            continue
        failure = None
        try:
            client.create(create_body(model.name, model.show, model.renderer, PARSER))
        except loopback_http.ProbeFailure as exc:
            state, detail = _state(client, model)
            if state != 'pinned':   # an error answered after the work was done (a timeout) is no failure
                failure = ('/api/create failed: %s' % exc, state, detail)
        else:
            try:
                left = differences(model.show, client.show(model.name), model.renderer)
            except loopback_http.ProbeFailure as exc:
                left = None
                failure = ('it was re-created, but reading it back failed: %s' % exc, 'unknown',
                           'whether it is pinned and unchanged otherwise cannot be told')
            if left:
                failure = ('it was re-created, but %s' % '; '.join(left), 'damaged', '')
        if failure:
            raise FixFailed(_failure(client, model, failure, done, plans[index + 1:]), [m.entry() for m in plans])
        done.append(model)
    return [m.entry() for m in plans]


def verify(client, plans):
    """[what is not as planned]: each changed model read back has the renderer and its fields as they were."""
    problems = []
    for model in plans:
        if not model.changed:
            continue
        try:
            left = differences(model.show, client.show(model.name), model.renderer)
        except loopback_http.ProbeFailure as exc:
            left = ['it cannot be read back: %s' % exc]
        problems.extend('%s: %s' % (model.name, why) for why in left)
    return problems


def roll_back(client, plans):
    """Every changed model re-created as it was; [what could not be put back]."""
    left = []
    for model in plans:
        if model.changed:
            why_not = _roll_back(client, model)
            if why_not:
                left.append('%s: %s' % (model.name, why_not))
    return left


def _failure(client, model, failure, done, rest):
    problem, state, detail = failure
    parts = ['could not pin model %s: %s' % (model.name, problem)]
    if state == 'damaged':
        why_not = _roll_back(client, model)
        if not why_not:
            parts.append('%s was re-created again as it was (RENDERER %s)' % (model.name, model.before))
        else:
            parts.append('%s could NOT be put back as it was: %s' % (model.name, why_not))
    elif detail:
        parts.append('%s: %s' % (model.name, detail))
    if model.backup:
        parts.append('its backup is %s' % model.backup)
    if done:
        parts.append('already re-created with RENDERER %s and verified, and left so: %s' % (
            model.renderer, ', '.join('%s (backup %s)' % (m.name, m.backup) if m.backup else m.name for m in done)))
    else:
        parts.append('no other model was changed')
    waiting = [m.name for m in rest if m.changed]
    if waiting:
        parts.append('not attempted: %s' % ', '.join(waiting))
    return '; '.join(parts)
