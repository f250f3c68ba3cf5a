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
    V(affected), re-creates the model through C(/api/create) from itself with its stored renderer set to
    O(renderer) (V(gemma4-large) by default) and C(parser) C(gemma4), passing its system prompt, template, parameters, license and
    messages as they are, then reads C(/api/show) back and fails if any of them changed.
  - Models whose stored renderer already is the wanted one are left alone, so a second run changes nothing.
  - Refuses on Ollama before 0.21.0, where V(gemma4-large) does not exist (requests would fail with
    C(unknown renderer)).
  - Check mode (with diff) shows each model's Modelfile before and after and changes nothing.
  - Talks only to a loopback address of the host it runs on.
  - Every model that will change is backed up (O(backup)) before the first one is re-created; a backup that cannot
    be written (a read-only or full filesystem, a O(backup_dir) that is a file) stops the run with nothing changed.
    Models are then re-created one at a time, each read back and verified. Models are independent, so one that was
    re-created and verified stays pinned when a later one fails; a model that was re-created but lost a field is
    re-created again as it was. A failure names the model and says which models were already re-created (with
    their backups), what was put back or could not be, and which were not attempted.
options:
  url:
    description: Ollama's address on the host.
    type: str
    default: http://127.0.0.1:11434
  token:
    description: A bearer token for C(/api/create), when a proxy in front of Ollama needs one. Never logged.
    type: str
  models:
    description: Models to pin (short names, as in C(/api/tags)). Empty means every model the detection reports V(affected).
    type: list
    elements: str
    default: []
  renderer:
    description: The renderer to pin.
    type: str
    default: gemma4-large
    choices: [gemma4-large, gemma4-small]
  timeout:
    description:
      - Seconds one request may take, connecting, the reply's headers and its body together (C(/api/create) copies
        no weights; it writes a new manifest). 1 to 3600.
    type: int
    default: 120
  backup:
    description:
      - Write each model's Modelfile and C(/api/show) answer to O(backup_dir) before it is re-created, so the
        old configuration can be restored with C(ollama create NAME -f FILE). (A copy inside Ollama would be
        one more Gemma 4 model resolving to the small template.)
    type: bool
    default: true
  backup_dir:
    description: Where the backups go; created with mode 0700.
    type: path
    default: /var/lib/homelab-postmortem/ollama-modelfiles
notes:
  - In check mode the module reports which models would be re-created, with each Modelfile's diff.
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.diff
  - homelab.postmortem.host
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
      description: The Modelfile written before the model was re-created, when O(backup) is on.
      type: str
  sample: [{model: mygemma:latest, changed: true, before_renderer: gemma4, after_renderer: gemma4-large}]
ollama_version:
  description: The version Ollama reported.
  returned: always
  type: str
diff:
  description:
    - One entry per model that is (or in check mode would be) re-created, named by the model in C(before_header)
      and C(after_header). C(before) is its Modelfile as C(/api/show) gives it; C(after) is the same text with its
      C(RENDERER) line set to O(renderer) (added when it had none) and C(PARSER gemma4) added when it had no
      C(PARSER). No file on the host changes; the model is re-created through C(/api/create).
    - A model that already has the renderer has no entry.
  returned: always
  type: list
  elements: dict
  sample:
    - before_header: mygemma:latest
      after_header: mygemma:latest
      before: "FROM gemma4:27b\nPARAMETER num_ctx 8192\nRENDERER gemma4\n"
      after: "FROM gemma4:27b\nPARAMETER num_ctx 8192\nRENDERER gemma4-large\nPARSER gemma4\n"
backups:
  description:
    - The Modelfile kept of each model that was re-created, in O(backup_dir) (mode 0700), named after the model
      (characters other than letters, digits, C(.), C(_) and C(-) become C(_)) and the UTC time,
      C(<model>.<UTC time>.Modelfile), mode 0600. Beside each, the same name ending in C(.show.json) holds the
      model's whole C(/api/show) answer. All are written before the first model is re-created; restore one with
      C(ollama create NAME -f FILE).
    - Empty with O(backup=false), in check mode and when no model changed.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/homelab-postmortem/ollama-modelfiles/mygemma_latest.20261201T131512Z.Modelfile]
verified:
  description:
    - Whether every model that was re-created, read back with C(/api/show) once all of them were, has the renderer
      O(renderer) stored and its system prompt, template, parameters, license and messages as they were. False in
      check mode and when no model needed a change.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When that read-back found a model not as planned, whether every re-created model was re-created again through
      C(/api/create) with its old renderer, parser and fields and read back so. A model that had no renderer stored
      cannot be put back that way (C(/api/create) cannot remove one), so it stays false; restore that model from its
      RV(backups) file.
    - False when a model fails while they are re-created one at a time. RV(msg) then says which models were
      re-created and left so, which one was put back or could not be, and which were not attempted.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - "Once every model named in O(models) (or found affected) was re-created and read back,
      C(changed, and read back as planned). C(nothing to change) when each has the renderer already or none is
      affected; in check mode, C(check mode: the diff is what would change; nothing was changed)."
    - On a failure, why Ollama cannot pin a renderer (its version), or which model failed and why, with what was
      changed and where the backups are.
    - "When O(backup_dir) is on a read-only mount, check mode adds C(; it cannot be written now: mounted read-only:
      <mount> (<backup_dir>/)), and a run fails with that text and C(; nothing was changed) before any model is
      backed up or re-created."
  returned: always
  type: str
  sample: changed, and read back as planned
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, loopback_http, registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import ollama_gemma4_renderer
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import common as ollama_common
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import renderer_fix

MAX_TIMEOUT = 3600


def affected_models(url, timeout):
    """The models the ollama_gemma4_renderer detection calls affected; FixFailed when it could not read Ollama."""
    limit = ollama_common.COMMON_SETTINGS['timeout']['max']
    settings = registry.validate_settings({'ollama_gemma4_renderer': {'url': url, 'timeout': min(timeout, limit)}})
    finding = registry.run_one(AuditContext(settings=settings), ollama_gemma4_renderer.DETECTION)
    if finding['status'] in ('error', 'unknown'):
        raise renderer_fix.FixFailed('the detection could not read Ollama: %s' % finding['summary'])
    return [i['evidence']['model'] for i in finding['evidence'].get('instances', []) if i['status'] == 'affected']


class RendererPin(fix_protocol.Fix):
    """Plan: /api/show of each model; apply: back up every changing model, then re-create them one at a
    time, each verified (renderer_fix.apply); verify: read every one back; roll back: re-create them as
    they were."""

    def __init__(self, client, models, renderer, backup_dir=None, find_affected=None):
        self.client = client
        self.models = models
        self.renderer = renderer
        self.backup_dir = backup_dir        # None: no backups
        self.find_affected = find_affected  # () -> [model names], when ``models`` is empty

    def plan(self):
        version_text, plans = None, []
        try:
            version_text = self.client.version()
            refused = renderer_fix.check_version(version_text)
            if refused:
                raise fix_protocol.FixFailed(refused, ollama_version=version_text, models=[])
            names = self.models or self.find_affected()
            plans = renderer_fix.plan(self.client, names, self.renderer)
        except loopback_http.ProbeFailure as exc:
            raise fix_protocol.FixFailed('%s; nothing was changed' % exc, ollama_version=version_text,
                                         models=[p.entry() for p in plans])
        # The backups go in backup_dir (a path ending in a separator: the directory is what is written in).
        return fix_protocol.Plan(diff=[p.diff() for p in plans if p.changed],
                                 result=dict(models=[p.entry() for p in plans], ollama_version=version_text),
                                 targets=[os.path.join(self.backup_dir, '')] if self.backup_dir else [], models=plans)

    def apply(self, plan, write):
        plans = plan.details['models']
        if self.backup_dir:
            renderer_fix.write_backups(plans, self.backup_dir)
        renderer_fix.apply(self.client, plans)
        plan.result['models'] = [p.entry() for p in plans]
        return [p.backup for p in plans if p.backup]

    def verify(self, plan):
        return renderer_fix.verify(self.client, plan.details['models'])

    def roll_back(self, plan, write):
        return renderer_fix.roll_back(self.client, plan.details['models'])


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
    params = module.params
    if not 1 <= params['timeout'] <= MAX_TIMEOUT:
        module.fail_json(msg='timeout must be 1 to %d seconds, got %d' % (MAX_TIMEOUT, params['timeout']), models=[])
    client = renderer_fix.Client(params['url'], params['timeout'], params['token'])
    fix_protocol.run(module, RendererPin(client, params['models'], params['renderer'],
                                         params['backup_dir'] if params['backup'] else None,
                                         lambda: affected_models(params['url'], params['timeout'])))


if __name__ == '__main__':
    main()
