#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: llama_sleep_race_facts
short_description: Find llama-server instances exposed to the sleep-mode race
version_added: 0.1.0
description:
  - Finds llama-server processes (command line, then C(LLAMA_ARG_*) environment) and router
    preset INI files with C(--sleep-idle-seconds) >= 0. A request that arrives just before
    such a server sleeps can hang until another request wakes it, or crash it with SIGSEGV.
  - For each running instance, reads the C(Restart=) of the systemd unit that owns the
    process, to tell whether a crash would be restarted.
  - Never sends a request to the server, because a probe of this race can crash it.
  - Returns C(ansible_facts.postmortem.llama_sleep_race); the same detection runs in
    M(homelab.postmortem.audit_facts).
  - Status C(at_risk) when sleep mode is on, C(ok) when it is off, C(not_applicable) when no
    llama-server runs and no preset is listed.
  - "Setting C(preset_paths) (list of paths): preset files to read besides those named by a
    running router's C(--models-preset)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Check llama-server sleep settings
  homelab.postmortem.llama_sleep_race_facts:
  become: true

- name: Also read a preset file no router has loaded yet
  homelab.postmortem.llama_sleep_race_facts:
    settings:
      llama_sleep_race:
        preset_paths: [/etc/llama/models.ini]
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(llama_sleep_race).
      returned: always
      type: complex
      contains:
        llama_sleep_race:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence.instances) has one entry per llama-server process and per preset section.
              A process entry's evidence holds C(pid), C(argv) (API keys redacted),
              C(sleep_idle_seconds), C(source) (C(command line) or C(default)) and C(supervisor)
              with C(unit), C(scope), C(restart), C(crash_restarted) (true, false, or null when it
              could not be told, with C(reason)), C(n_restarts), C(fragment_path) and C(drop_ins).
            - A preset entry's evidence holds C(file), C(section), C(defined_in) (section and line),
              C(sleep_idle_seconds), C(used_by) (router pids) and C(overridden_by) when the
              router's command line wins.
          returned: always
          type: dict
          sample:
            id: llama_sleep_race
            status: at_risk
            summary: 1 of 1 llama-server instance(s) have sleep mode on; 1 would stay down after a crash.
            evidence:
              llama_server_processes: 1
              instances:
                - name: llama-server pid 4242
                  status: at_risk
                  evidence: {pid: 4242, sleep_idle_seconds: 2, source: command line,
                             supervisor: {unit: llama.service, restart: "no", crash_restarted: false}}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('llama_sleep_race')


if __name__ == '__main__':
    main()
