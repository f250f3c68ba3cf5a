#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: ollama_gemma4_renderer_fix
short_description: Pin RENDERER gemma4-large on Ollama models that resolve to the small Gemma 4 template
version_added: 0.1.0
description:
  - For each named model, or by default every model the C(ollama_gemma4_renderer) detection reports
    C(affected), re-creates the model through C(/api/create) from itself with C(renderer) set to
    C(gemma4-large) and C(parser) C(gemma4), passing its system prompt, template, parameters, license and
    messages as they are, then reads C(/api/show) back and fails if any of them changed.
  - Models whose stored renderer already is the wanted one are left alone, so a second run changes nothing.
  - Refuses on Ollama before 0.21.0, where C(gemma4-large) does not exist (requests would fail with
    C(unknown renderer)).
  - Check mode (with diff) shows each model's Modelfile before and after and changes nothing.
  - Talks only to a loopback address of the host it runs on.
options:
  url:
    description: Ollama's address on the host.
    type: str
    default: http://127.0.0.1:11434
  token:
    description: A bearer token for C(/api/create), when a proxy in front of Ollama needs one. Never logged.
    type: str
  models:
    description: Models to pin (short names, as in C(/api/tags)). Empty means every model the detection reports C(affected).
    type: list
    elements: str
    default: []
  renderer:
    description: The renderer to pin.
    type: str
    default: gemma4-large
    choices: [gemma4-large, gemma4-small]
  timeout:
    description: Seconds one request may take (C(/api/create) copies no weights; it writes a new manifest).
    type: int
    default: 120
  backup:
    description:
      - Write each model's Modelfile and C(/api/show) answer to I(backup_dir) before it is re-created, so the
        old configuration can be restored with C(ollama create NAME -f FILE). (A copy inside Ollama would be
        one more Gemma 4 model resolving to the small template.)
    type: bool
    default: true
  backup_dir:
    description: Where the backups go; created with mode 0700.
    type: path
    default: /var/lib/homelab-postmortem/ollama-modelfiles
attributes:
  check_mode:
    support: full
    description: Reports which models would be re-created, with the Modelfile diff, and changes nothing.
  diff_mode:
    support: full
    description: Returns each changed model's Modelfile before and after.
  platform:
    platforms: posix
    support: full
    description: Target OS/families that can be operated against.
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.ollama_gemma4_renderer_facts
'''

EXAMPLES = r'''
- name: Pin every Gemma 4 model that resolves to the small template
  homelab.postmortem.ollama_gemma4_renderer_fix:
  check_mode: true
  diff: true

- name: Pin one model, through a proxy that wants a token
  homelab.postmortem.ollama_gemma4_renderer_fix:
    models: [mygemma:latest]
    token: "{{ vault_ollama_token }}"
'''

RETURN = r'''
models:
  description: One entry per model looked at.
  returned: always
  type: list
  elements: dict
  contains:
    model:
      description: The model's short name.
      type: str
    changed:
      description: Whether it was (or in check mode would be) re-created.
      type: bool
    before_renderer:
      description: The stored renderer before.
      type: str
    after_renderer:
      description: The stored renderer after.
      type: str
    backup:
      description: The Modelfile written before the model was re-created, when I(backup) is on.
      type: str
  sample: [{model: mygemma:latest, changed: true, before_renderer: gemma4, after_renderer: gemma4-large}]
diff:
  description: Each changed model's Modelfile before and after (with C(--diff)).
  returned: when diff mode is on and a model changes
  type: list
  elements: dict
ollama_version:
  description: The version Ollama reported.
  returned: always
  type: str
'''

import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import loopback_http, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_gemma4_renderer
from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.filewrite import write_all
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer as gemma4

KEPT = ('system', 'template', 'parameters', 'license', 'messages')


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
        out.append('PARSER gemma4')
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


class Pinner(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.settings = {'url': self.params['url'], 'timeout': self.params['timeout']}

    def call(self, path, body=None):
        headers = {'Authorization': 'Bearer %s' % self.params['token']} if self.params['token'] and path == '/api/create' else None
        url = self.params['url'].rstrip('/') + path
        return loopback_http.request_json(url, method='POST' if body is not None else 'GET', body=body,
                                          timeout=self.params['timeout'], headers=headers)[1]

    def targets(self):
        if self.params['models']:
            return list(self.params['models'])
        ctx = AuditContext(settings=registry.validate_settings({'ollama_gemma4_renderer': {'url': self.params['url']}}))
        finding = registry.run_one(ctx, ollama_gemma4_renderer)
        if finding['status'] in ('error', 'unknown'):
            self.module.fail_json(msg='the detection could not read Ollama: %s' % finding['summary'])
        return [i['evidence']['model'] for i in finding['evidence'].get('instances', []) if i['status'] == 'affected']

    def backup(self, name, show):
        directory = self.params['backup_dir']
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        # The same time stamp as every fix module's backups (filewrite.backup_path): sortable, UTC.
        stem = filewrite.backup_path(os.path.join(directory, re.sub(r'[^A-Za-z0-9._-]', '_', name)))[:-len(filewrite.BACKUP_SUFFIX)]
        write_all(self.module, [(stem + '.Modelfile', None, show.get('modelfile') or ''),
                                (stem + '.show.json', None, json.dumps(show, indent=1, sort_keys=True) + '\n')], False)
        return stem + '.Modelfile'

    def pin(self, name, renderer):
        show = self.call('/api/show', {'model': name})
        before = gemma4.stored_renderer(show.get('modelfile'))
        entry = {'model': name, 'before_renderer': before, 'after_renderer': before, 'changed': False}
        if before == renderer:
            return entry, None
        after_text = pinned_modelfile(show.get('modelfile'), renderer)
        diff = {'before_header': name, 'after_header': name, 'before': show.get('modelfile') or '', 'after': after_text}
        entry.update(changed=True, after_renderer=renderer)
        if self.module.check_mode:
            return entry, diff
        if self.params['backup']:
            entry['backup'] = self.backup(name, show)
        body = {'model': name, 'from': name, 'renderer': renderer, 'parser': 'gemma4', 'stream': False}
        for key in ('system', 'template', 'license'):
            if show.get(key):
                body[key] = show[key]
        if show.get('messages'):
            body['messages'] = show['messages']
        if show.get('parameters'):
            body['parameters'] = parameters_dict(show['parameters'])
        self.call('/api/create', body)
        again = self.call('/api/show', {'model': name})
        stored = gemma4.stored_renderer(again.get('modelfile'))
        lost = [key for key in KEPT if (show.get(key) or None) != (again.get(key) or None)]
        if stored != renderer or lost:
            raise loopback_http.ProbeFailure('%s was re-created but %s' % (
                name, 'its stored renderer is %s' % stored if stored != renderer else 'its %s changed' % ', '.join(lost)))
        return entry, diff


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type='str', default='http://127.0.0.1:11434'),
            token=dict(type='str', no_log=True),
            models=dict(type='list', elements='str', default=[]),
            renderer=dict(type='str', default='gemma4-large', choices=['gemma4-large', 'gemma4-small']),
            timeout=dict(type='int', default=120),
            backup=dict(type='bool', default=True),
            backup_dir=dict(type='path', default='/var/lib/homelab-postmortem/ollama-modelfiles'),
        ),
        supports_check_mode=True,
    )
    pinner = Pinner(module)
    results, diffs = [], []
    try:
        version_text = (pinner.call('/api/version') or {}).get('version')
        version = gemma4.version_tuple(version_text)
        if version is None or version < (0, 21, 0):
            module.fail_json(msg='Ollama %s cannot pin a renderer: gemma4-small/-large exist from 0.21.0 on; '
                                 'upgrade Ollama first' % version_text, ollama_version=version_text, models=[])
        for name in pinner.targets():
            entry, diff = pinner.pin(name, module.params['renderer'])
            results.append(entry)
            if diff:
                diffs.append(diff)
    except loopback_http.ProbeFailure as exc:
        module.fail_json(msg=str(exc), models=results)
    result = dict(changed=any(r['changed'] for r in results), models=results, ollama_version=version_text)
    if module._diff and diffs:
        result['diff'] = diffs
    module.exit_json(**result)


if __name__ == '__main__':
    main()
