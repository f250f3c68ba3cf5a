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
  - homelab.postmortem contributors
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
# See the homelab.postmortem.detection doc fragment.
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('llama_sleep_race')


if __name__ == '__main__':
    main()
