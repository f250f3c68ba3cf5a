#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_server_fix
short_description: Set safe llama-server flags and restart policy in the systemd units that start it
version_added: 0.1.0
description:
  - Finds the running llama-server processes and the systemd service that owns each one, the way
    the C(llama_lora_cache) and C(llama_sleep_race) detections do.
  - With I(cache_ram_off), adds C(--cache-ram 0) (or sets an existing C(-cram)/C(--cache-ram) to 0)
    for instances that load LoRA adapters with the RAM prompt cache on.
  - With I(no_cache_prompt), adds C(--no-cache-prompt) (or turns an existing C(--cache-prompt) into it)
    for instances that load LoRA adapters with prompt caching on. That closes the global path
    (scales changed with C(POST /lora-adapters)), which C(--cache-ram 0) leaves open, because a slot
    reuses its own prefix computed under the old scale. The cost is all prefix reuse.
  - With I(restart_on_failure), sets C(Restart=on-failure) for instances with sleep mode on whose
    unit would not restart them after a crash. With I(disable_sleep), sets
    C(--sleep-idle-seconds -1) on them as well.
  - Units under C(/etc/systemd/system) are edited in place; vendor units get a drop-in
    C(/etc/systemd/system/<unit>.d/50-homelab-postmortem.conf) (an C(ExecStart=) override starts
    with the empty reset line); Quadlet C(.container) files get C(Exec=) and C([Service] Restart=)
    edited in place. Only the lines that change are rewritten; each file is backed up first and
    written atomically; check mode returns the exact diff and writes nothing.
  - It never reloads systemd or restarts anything; the C(homelab.postmortem.llama_server) role does
    that when asked. Instances that no systemd service starts are returned in C(unmanaged) with the
    manual step, and are not touched.
options:
  cache_ram_off:
    description: Turn the RAM prompt cache off on instances that serve LoRA adapters with it on.
    type: bool
    default: true
  no_cache_prompt:
    description:
      - Turn prompt caching off on instances that serve LoRA adapters with it on.
      - Without it, those instances are listed in C(global_path_open).
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
  description: One entry per unit that needed a change, with the fixes applied and the files written.
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
  description: Instances no systemd service starts, with the manual step. Nothing is changed for them.
  returned: always
  type: list
  elements: dict
global_path_open:
  description:
    - Instances that serve LoRA adapters with prompt caching on and that I(no_cache_prompt) did not
      cover; clients that change scales with C(POST /lora-adapters) can get answers from KV of the
      old scale there.
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 4242, cache_prompt_source: default}
  version_added: 0.2.0
backups:
  description: Backup copies made before writing.
  returned: always
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import unit_fix as llama_unit_fix
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError


MANUAL_STEPS = {
    'cache_ram_off': 'add --cache-ram 0',
    'no_cache_prompt': 'add --no-cache-prompt',
    'restart_on_failure': 'have its supervisor restart it when it crashes',
    'disable_sleep': 'add --sleep-idle-seconds -1',
}


def needed_fixes(ctx, process, params):
    """(fixes, caching): what this instance needs, from the same facts the detections use."""
    environ = process.environ() or {}
    wants_cache = wants_no_caching = False
    caching = (None, None)
    if llama_server.lora_adapters(process.argv):
        value, _source, _problems = llama_server.resolve_configured(ctx, llama_server.CACHE_RAM, process, environ)
        wants_cache = bool(params['cache_ram_off']) and llama_server.as_int(value) != 0
        enabled, source, _problems = llama_server.cache_prompt(ctx, process, environ)
        caching = (enabled is not False, source)
        wants_no_caching = bool(params['no_cache_prompt']) and caching[0]
    seconds = llama_server.as_int(llama_server.resolve(llama_server.SLEEP_IDLE_SECONDS, process.argv, environ)[0])
    sleeping = seconds is not None and seconds >= 0
    return {'cache_ram_off': wants_cache,
            'no_cache_prompt': wants_no_caching,
            'restart_on_failure': bool(params['restart_on_failure'] and sleeping),
            'disable_sleep': bool(params['disable_sleep'] and sleeping)}, caching


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
    ctx = AuditContext(which=module.get_bin_path)
    processes, _problems = llama_server.processes(ctx)
    per_unit, unmanaged, global_path_open = {}, [], []
    for process in processes:
        fixes, caching = needed_fixes(ctx, process, params)
        if caching[0] and not fixes['no_cache_prompt']:
            global_path_open.append({'pid': process.pid, 'cache_prompt_source': caching[1]})
        if not any(fixes.values()):
            continue
        unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
        if unit is None or scope != 'system':
            unmanaged.append({'pid': process.pid, 'fixes': fixes,
                              'manual': 'not started by a system service: change it by hand: %s'
                                        % '; '.join(MANUAL_STEPS[k] for k, v in fixes.items() if v)})
            continue
        if params['units'] and unit not in params['units']:
            continue
        entry = per_unit.setdefault(unit, {'unit': unit, 'pids': [], 'fixes': dict((k, False) for k in fixes)})
        entry['pids'].append(process.pid)
        for key, value in fixes.items():
            entry['fixes'][key] = entry['fixes'][key] or value

    systemctl = module.get_bin_path('systemctl')
    results, diffs, writes = [], [], []
    for unit, entry in sorted(per_unit.items()):
        if not systemctl:
            module.fail_json(msg='systemctl not found, but %s is a systemd service' % unit)
        try:
            props = hostio.systemd_show(ctx.run_command, systemctl, unit, ['FragmentPath', 'SourcePath', 'DropInPaths'])
            changes, mode = llama_unit_fix.plan(unit, props.get('FragmentPath'), props.get('SourcePath'),
                                                (props.get('DropInPaths') or '').split(),
                                                llama_unit_fix.Fixes(**entry['fixes']))
        except HostInputError as exc:
            module.fail_json(msg='%s: %s; no file was changed' % (unit, exc), units=results)
        entry.update(mode=mode, files=[c[0] for c in changes], changed=bool(changes))
        results.append(entry)
        for path, before, after in changes:
            diffs.append(dict(before_header=path, after_header=path, before=before or '', after=after))
            writes.append((path, before, after))

    backups = []
    if writes and not module.check_mode:
        backups = filewrite.write_all(module, writes, params['backup'])
    module.exit_json(changed=bool(writes), units=results, unmanaged=unmanaged, global_path_open=global_path_open,
                     backups=backups, diff=diffs)


if __name__ == '__main__':
    main()
