#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: vllm_lora_fold
short_description: Write a copy of a PEFT LoRA adapter that every vLLM serves at the scales it was trained with
version_added: 0.2.0
description:
  - Reads a PEFT adapter (C(adapter_config.json), C(adapter_model.safetensors)) and computes each module's
    trained scale with the pattern rule of the PEFT version that saved it - C(peft_version) in the config
    (PEFT 0.18.0 and later write it), else the releases the config's fields allow (C(exclude_modules) from
    0.14.0, C(corda_config) from 0.15.0, C(target_parameters) from 0.17.0, and every other field of each
    release's C(LoraConfig)). When those releases would have trained a module at different scales the task
    fails and names them; O(peft_version) then says which PEFT trained the adapter.
  - Writes a new adapter directory O(dest) (the original is never modified) where each module's C(lora_B)
    is multiplied by trained scale / base scale (base = C(lora_alpha / r), or C(/ sqrt(r)) with rsLoRA),
    the ranks the tensors need stay in C(rank_pattern) under each module's full name, and C(alpha_pattern)
    gives every module the base scale. So vLLM before 0.32.0 (one scale for all), vLLM 0.32.0 and later,
    and PEFT all serve the same adapter. Clearing the patterns instead would make PEFT refuse an adapter
    whose modules have other ranks.
  - Keeps C(r), C(lora_alpha), C(use_rslora), every other config field, each tensor's dtype (C(F32),
    C(F16), C(BF16) can be scaled; a module of another dtype that needs a factor fails the task) and the
    safetensors metadata (with a C(homelab.postmortem.folded_from) entry naming the source and its
    fingerprint). Tensors are streamed one at a time; the directory is written beside O(dest), fsynced, and
    swapped into place in one step (C(renameat2) with C(RENAME_EXCHANGE)), so O(dest) is never missing; an
    existing O(dest) is first kept as a timestamped backup (hard links), durable before O(dest) is touched.
    A filesystem that cannot swap directories fails the task and changes nothing.
  - An O(dest) folded from the same source (same config and weights header) is left alone, so a second run
    changes nothing. Check mode reports the factors and writes nothing.
  - Refuses a O(dest) that is O(src), lies inside it or holds it (also through links and bind mounts), an
    adapter with C(lora_alpha) 0, weights safetensors itself would refuse (overlapping or missing tensor
    data, a header it cannot parse), and a pattern key whose matching does not finish within 2 seconds (as
    PEFT's own C(re.match) would not); the message names the key. Files are opened without blocking, so a named
    pipe where a file should be is refused, not waited on.
  - When writing fails (a read-only or full filesystem), the partial copy is removed and the message says that
    O(dest) is unchanged; when the swap into place fails, the new copy and the backup are removed and O(dest) is
    unchanged.
  - The plan is checked under PEFT's three pattern rules and vLLM before and after 0.32.0 first; when module
    names overlap so that a pattern key would match another module, the task fails and nothing is written.
options:
  src:
    description: The adapter directory to read.
    type: path
    required: true
  dest:
    description: The directory to write the folded adapter to. Must not be O(src).
    type: path
    required: true
  max_listed:
    description: Modules listed in RV(factors).
    type: int
    default: 20
  peft_version:
    description:
      - The PEFT version that trained the adapter, for an adapter whose config does not tell it and whose
        patterns give different scales under the PEFT releases it allows (for example V(0.13.2)).
      - Overrides C(peft_version) in the config.
    type: str
notes:
  - In check mode the module reports the factors and the new C(adapter_config.json), and writes nothing.
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.diff
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.vllm_lora_patterns_facts
'''

EXAMPLES = r'''
- name: Fold the persona adapter's per-module scales into its weights
  homelab.postmortem.vllm_lora_fold:
    src: /srv/adapters/persona
    dest: /srv/adapters/persona-folded
  register: fold

- name: Show what was scaled
  ansible.builtin.debug:
    msg: "{{ fold.modules_scaled }} of {{ fold.modules }} modules scaled: {{ fold.factors }}"
'''

RETURN = r'''
dest:
  description: The folded adapter directory.
  returned: always
  type: str
modules:
  description: LoRA modules in the adapter.
  returned: always
  type: int
modules_scaled:
  description: Modules whose lora_B was (or would be) multiplied by a factor other than 1.
  returned: always
  type: int
factors:
  description: The first O(max_listed) modules with a factor other than 1, and the factor.
  returned: always
  type: list
  elements: dict
  sample: [{module: model.layers.0.self_attn.q_proj, factor: 0.5}]
base_scale:
  description: The scale every module has in the folded adapter.
  returned: always
  type: float
peft_rule:
  description:
    - The PEFT releases whose pattern rules decided the trained scales (C(versions), one per rule), the range
      of releases that can have saved the adapter (C(range)) and why (C(why)), and whether the adapter
      recorded its PEFT version (C(recorded)).
  returned: always
  type: dict
backup:
  description: Where the existing O(dest) was kept (its files hard-linked) before the new one took its place.
  returned: when O(dest) existed and was replaced
  type: str
diff:
  description:
    - One entry when O(dest) is (or in check mode would be) written, for C(adapter_config.json) in O(dest). C(before)
      is its text (empty when O(dest) is new; when it cannot be read as text, C(before_header) says why), C(after)
      the folded adapter's config with its new C(alpha_pattern) and C(rank_pattern). The weights,
      C(adapter_model.safetensors), are binary and not shown; RV(factors) lists what is scaled.
    - Empty when O(dest) already is the fold of O(src).
  returned: always
  type: list
  elements: dict
  sample:
    - before_header: /srv/adapters/persona-folded/adapter_config.json
      after_header: /srv/adapters/persona-folded/adapter_config.json
      before: ""
      after: |
        {
          "alpha_pattern": {
            "model.layers.0.self_attn.q_proj": 16.0
          },
          "lora_alpha": 32,
          "r": 16,
          "rank_pattern": {
            "model.layers.0.self_attn.q_proj": 8
          }
        }
backups:
  description:
    - When O(dest) existed and was replaced, the old directory kept beside it as hard links of its files, named
      C(<dest>.<UTC time>.bak) (the same path as RV(backup)) and durable before O(dest) was touched.
    - Empty when O(dest) was new, in check mode and when O(dest) already was the fold.
  returned: always
  type: list
  elements: str
  sample: [/srv/adapters/persona-folded.20261201T131512Z.bak]
verified:
  description:
    - Whether C(adapter_model.safetensors) in O(dest), read back, carries the C(homelab.postmortem.folded_from)
      metadata with the fingerprint of O(src) (its config and weights header). False in check mode and when O(dest)
      already was the fold.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When O(dest) did not read back as the fold, whether O(dest) was put back, the backup directory swapped back into
      its place or, when O(dest) was new, the new directory removed. O(src) is only ever read.
    - False on every other failure. A write that fails removes the partial copy and leaves O(dest) as it was, and
      RV(msg) says so.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - C(<src> folded into <dest>) (in check mode too, where nothing is written), or C(<dest> is already the fold of
      <src>).
    - On a failure, what failed and what is left of O(dest).
    - "When O(dest) is on a read-only mount, check mode adds C(; it cannot be written now: mounted read-only:
      <mount> (<dest>)), and a run fails with that text and C(; nothing was changed) before anything is written."
  returned: always
  type: str
  sample: /srv/adapters/persona folded into /srv/adapters/persona-folded
'''

import json
import os
import shutil

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, hostio, treewrite
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import adapters as vllm_adapters
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import fold
from ansible_collections.homelab.postmortem.plugins.module_utils.vllm import lora_scale


def _config_diff(dest, config):
    """adapter_config.json of ``dest`` before and after: the fold's diff (the weights are binary)."""
    dest_config = os.path.join(dest, vllm_adapters.CONFIG)
    before, before_header = '', dest_config
    try:
        before = hostio.read_text(dest_config, limit=vllm_adapters.MAX_CONFIG_BYTES)
    except hostio.ReadProblem as problem:
        if problem.kind != 'missing':
            # Not UTF-8, a named pipe, too large: shown as what it is, never read as text.
            before_header = '%s (%s)' % (dest_config, problem.reason)
    return {'before': before, 'after': json.dumps(config, indent=2, sort_keys=True) + '\n',
            'before_header': before_header, 'after_header': dest_config}


class LoraFold(fix_protocol.Fix):
    """Plan the fold of ``src`` into ``dest``; apply writes the new directory and swaps it in; verify reads
    its provenance back; roll back swaps the old directory back (or removes a new one)."""

    def __init__(self, src, dest, peft_version=None, max_listed=20):
        self.src = src
        self.dest = dest
        self.peft_version = peft_version
        self.max_listed = max_listed

    def plan(self):
        src, dest = self.src, self.dest
        try:
            fold.check_paths(src, dest)
            adapter = vllm_adapters.load(src)
            planned = fold.plan(adapter, self.peft_version)
        except HostInputError as exc:
            raise fix_protocol.FixFailed('%s; nothing was written' % exc)
        scaled = [(m, f) for m, f in sorted(planned.factors.items()) if abs(f - 1) > fold.TOLERANCE]
        versions = [self.peft_version] if self.peft_version else adapter.candidates
        result = dict(
            dest=dest, modules=len(planned.factors), modules_scaled=len(scaled), base_scale=planned.base_scale,
            factors=[{'module': m, 'factor': round(f, 8)} for m, f in scaled[:self.max_listed]],
            peft_rule={'versions': [lora_scale.dotted(v) for v in versions],
                       'range': adapter.peft_range.text(), 'why': adapter.peft_range.why,
                       'recorded': adapter.peft_version_recorded},
        )
        if fold.up_to_date(dest, planned.fingerprint):
            return fix_protocol.Plan(result=result, msg='%s is already the fold of %s' % (dest, src))
        return fix_protocol.Plan(diff=[_config_diff(dest, planned.config)], result=result, folded=planned, targets=[dest],
                                 msg='%s folded into %s' % (src, dest))

    def apply(self, plan, write):
        try:
            backup = fold.write(plan.details['folded'], self.dest)
        except HostInputError as exc:
            # fold.write says what is left of dest; src is only ever read.
            raise fix_protocol.FixFailed('%s; %s was only read' % (exc, self.src))
        plan.details['backup'] = backup
        if backup:
            plan.result['backup'] = backup
        return [backup] if backup else []

    def verify(self, plan):
        if fold.up_to_date(self.dest, plan.details['folded'].fingerprint):
            return []
        return ['%s does not read back as the fold of %s' % (self.dest, self.src)]

    def roll_back(self, plan, write):
        backup = plan.details.get('backup')
        try:
            if backup is None:
                shutil.rmtree(self.dest)
            else:
                # Swapped back from hard links of the backup: dest is present throughout, and the backup the
                # result names stays.
                treewrite.restore_directory(backup, self.dest)
        except OSError as exc:
            return ['%s (%s)' % (self.dest, getattr(exc, 'strerror', None) or exc)]
        return []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type='path', required=True),
            dest=dict(type='path', required=True),
            max_listed=dict(type='int', default=20),
            peft_version=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    peft_version = None
    if params['peft_version']:
        peft_version = hostio.version_tuple(params['peft_version'])
        if peft_version is None:
            module.fail_json(msg='peft_version %r is not a version number' % params['peft_version'])
    fix_protocol.run(module, LoraFold(params['src'], params['dest'], peft_version, params['max_listed']))


if __name__ == '__main__':
    main()
