#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_server_fix
short_description: Set safe llama-server settings where llama.cpp takes them from, and a restart policy
version_added: 0.1.0
description:
  - Finds every llama-server instance the way the C(llama_lora_cache) and C(llama_sleep_race) detections do
    (running processes, C(llama serve), a router's models from its C(--models-preset)) and resolves its
    configuration as llama.cpp does (config.ini files, then E(LLAMA_ARG_*) variables, then the command line).
  - With O(cache_ram_off), sets C(--cache-ram) to 0 for instances that load LoRA adapters with the RAM prompt
    cache on; with O(no_cache_prompt), turns prompt caching off for them. That closes the global path
    (scales changed with C(POST /lora-adapters)), which C(--cache-ram 0) leaves open, because a slot
    reuses its own prefix computed under the old scale. The cost is all prefix reuse.
  - With O(restart_on_failure), sets C(Restart=on-failure) for instances with sleep mode on whose
    unit would not restart them after a crash. With O(disable_sleep), sets
    C(--sleep-idle-seconds -1) on them as well.
  - Each setting is changed where it is set - the config.ini or preset line that wins (its value, the key
    kept), the C(Environment=) line of the unit, the unit's C(ExecStart=) (or Quadlet C(Exec=)) tokens - and,
    when nothing sets it, on the unit's command line or, for a router's model, in its preset section.
    Every change is proved before anything is written, by resolving the instance again as it would start
    with the change; a setting that would not change, or that is set somewhere this module does not write
    (no unit, an C(EnvironmentFile=), the service manager's environment, a file in another mount namespace),
    is left alone and listed in RV(open) with the reason.
  - Units under C(/etc/systemd/system) are edited in place; vendor units get a drop-in
    C(/etc/systemd/system/<unit>.d/50-homelab-postmortem.conf) (an C(ExecStart=) override starts
    with the empty reset line); Quadlet C(.container) files get C(Exec=) and C([Service] Restart=)
    edited in place. Only the lines that change are rewritten; each file is backed up first and
    written atomically; check mode returns the exact diff and writes nothing.
  - It never reloads systemd or restarts anything; the P(homelab.postmortem.llama_server#role) role does
    that when asked. Instances that no systemd service starts are returned in RV(unmanaged) with the
    manual step.
options:
  cache_ram_off:
    description: Turn the RAM prompt cache off on instances that serve LoRA adapters with it on.
    type: bool
    default: true
  no_cache_prompt:
    description:
      - Turn prompt caching off on instances that serve LoRA adapters with it on.
      - Without it, those instances are listed in RV(global_path_open).
    type: bool
    default: false
    version_added: 0.2.0
  restart_on_failure:
    description: Make systemd restart sleep-mode instances after a crash.
    type: bool
    default: true
  disable_sleep:
    description: Turn sleep mode off (C(--sleep-idle-seconds -1)) on instances that have it on.
    type: bool
    default: false
  units:
    description: Only change these units (names as systemd shows them). Default is every unit that needs it.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.diff
  - homelab.postmortem.remediation
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.llama_lora_cache_facts
  - module: homelab.postmortem.llama_sleep_race_facts
'''

EXAMPLES = r'''
- name: Safe flags for every llama-server unit on the host
  homelab.postmortem.llama_server_fix:
  register: llama_fix
  become: true
'''

RETURN = r'''
units:
  description:
    - One entry per unit that needed a change or whose servers must restart to read a changed config.ini or
      preset, with the fixes applied and the files written.
  returned: always
  type: list
  elements: dict
  sample:
    - unit: llama.service
      pids: [4242]
      mode: drop_in
      fixes: {cache_ram_off: true, no_cache_prompt: false, restart_on_failure: true, disable_sleep: false}
      files: [/etc/systemd/system/llama.service.d/50-homelab-postmortem.conf]
      changed: true
unmanaged:
  description: Instances no systemd service starts, with the manual step (a changed file still needs them restarted).
  returned: always
  type: list
  elements: dict
open:
  description:
    - Fixes that were not made, each with the reason; the finding stays open for them.
    - A fix is only made when resolving the instance again with the change gives the safe setting.
  returned: always
  type: list
  elements: dict
  sample:
    - {instance: llama-server pid 4242, pid: 4242, fix: cache_ram_off,
       reason: "llama.service: LLAMA_ARG_CACHE_RAM is set in EnvironmentFile=/etc/default/llama; change it there"}
  version_added: 0.2.0
global_path_open:
  description:
    - Instances that serve LoRA adapters with prompt caching on and that O(no_cache_prompt) did not
      cover; clients that change scales with C(POST /lora-adapters) can get answers from KV of the
      old scale there.
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 4242, cache_prompt_source: default}
  version_added: 0.2.0
diff:
  description:
    - One entry per file written, with the file's path as C(before_header) and C(after_header) and its whole text
      before and after (C(before) is empty for a file the run creates, such as a drop-in). The files are units under
      C(/etc/systemd/system) edited in place, drop-ins C(/etc/systemd/system/<unit>.d/50-homelab-postmortem.conf)
      for vendor units, Quadlet C(.container) files, and the config.ini and C(--models-preset) files whose winning
      line changes. Only the lines that change differ.
    - In check mode the same entries, and nothing is written. Empty when no instance needs a change; RV(open) and
      RV(global_path_open) then say what is left and why.
  returned: always
  type: list
  elements: dict
  sample:
    - before_header: /etc/systemd/system/llama.service.d/50-homelab-postmortem.conf
      after_header: /etc/systemd/system/llama.service.d/50-homelab-postmortem.conf
      before: ""
      after: |
        # Managed by homelab.postmortem.llama_server: safe llama-server flags and restart policy.
        [Service]
        ExecStart=
        ExecStart=/usr/bin/llama-server -m /srv/models/base.gguf --lora /srv/adapters/a.gguf --cache-ram 0
        Restart=on-failure
backups:
  description:
    - The copy of each existing file that was changed (a unit, a Quadlet file, a config.ini or preset), written
      beside it before it was replaced and named C(<file>.<UTC time>.bak). A file the run creates, such as a
      drop-in, has none.
    - Empty with O(backup=false), in check mode and when nothing changed.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/llama.service.20261201T131512Z.bak]
verified:
  description:
    - Whether every file written reads back with exactly the planned text. False in check mode and when nothing
      needed a change.
    - It says nothing about the running servers. systemd is not reloaded and nothing is restarted here; RV(units)
      and RV(unmanaged) name the servers that must restart to read the change.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When a file did not read back as planned, whether every file of the run was put back, written again with the
      text it had before or removed when the run created it. RV(msg) names any file that could not be put back.
    - When a write fails part way, the files it had already replaced are put back; true when there were any and every
      one is back, and RV(msg) names them.
    - False on every other failure. A plan that cannot be proved changes no file.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - "C(nothing to change) when no unit needs a change, also when every fix left to make is in RV(open). Once the
      files are written and read back, C(changed, and read back as planned); in check mode,
      C(check mode: the diff is what would change; nothing was changed)."
    - On a failure, what could not be read or proved and that no file was changed, or what did not read back and
      what was put back.
    - "When a unit or drop-in to write is on a read-only mount, check mode adds
      C(; it cannot be written now: mounted read-only: <mount> (<files>)), and a run fails with that text and
      C(; nothing was changed) before any file is written."
  returned: always
  type: str
  sample: changed, and read back as planned
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError


class LlamaServerFix(fix_protocol.Fix):
    """Plan: each setting changed where it wins, proved (llama/server_fix.py); the files are written,
    read back and put back by the protocol."""

    def __init__(self, ctx, systemctl, chosen, units, backup):
        self.ctx = ctx
        self.systemctl = systemctl
        self.chosen = chosen
        self.units = units
        self.backup = backup

    def plan(self):
        try:
            result, writes = server_fix.plan_and_prove(self.ctx, self.systemctl, self.chosen, self.units)
        except HostInputError as exc:
            raise fix_protocol.FixFailed('%s; no file was changed' % exc)
        return fix_protocol.Plan(writes=writes, result=result, backup=self.backup)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cache_ram_off=dict(type='bool', default=True),
            no_cache_prompt=dict(type='bool', default=False),
            restart_on_failure=dict(type='bool', default=True),
            disable_sleep=dict(type='bool', default=False),
            units=dict(type='list', elements='str', default=[]),
            backup=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    chosen = [name for name in server_fix.FIXES if params[name]]
    fix_protocol.run(module, LlamaServerFix(AuditContext(which=module.get_bin_path), module.get_bin_path('systemctl'),
                                            chosen, params['units'], params['backup']))


if __name__ == '__main__':
    main()
