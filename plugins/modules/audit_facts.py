#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: audit_facts
short_description: Run homelab.postmortem detections on a host in one round trip
version_added: 0.1.0
description:
  - Runs any subset of the collection's detections on the target and returns one finding
    per detection in RV(ansible_facts.postmortem), keyed by detection id.
  - Detections read files, C(/proc), C(/sys) and C(systemctl show); they never change the host.
  - This is the module behind the C(homelab.postmortem.audit) playbook.
options:
  checks:
    description:
      - Detection ids or groups to run, like C(gather_subset) of C(ansible.builtin.setup). V(all) runs every detection; a group
        runs its detections; V(!id) or V(!group) excludes them. A list of only exclusions means all
        but those.
      - 'The groups and their detection ids:'
      # BEGIN GENERATED detection ids (scripts/gen_detection_files.py)
      - V(pi) (group) - V(pi_ir_tx).
      - V(llama) (group) - V(llama_lora_cache), V(llama_spec_logprobs), V(llama_sleep_race).
      - V(podman) (group) - V(podman_restart_userns), V(podman_export_idmap).
      - V(docker) (group) - V(docker_overlay_sandbox).
      - V(ollama) (group) - V(ollama_gemma4_renderer), V(ollama_format_think), V(ollama_schema_order).
      - V(vllm) (group) - V(vllm_weight_cache), V(vllm_lora_patterns).
      # END GENERATED detection ids
      - An unknown id or group fails the task before any detection runs.
      - With O(declared), the declared checks' ids, the group V(declared) and their own groups select them too.
    type: list
    elements: str
    default: [all]
  declared:
    description:
      - Declared checks to ask, as M(homelab.postmortem.audit_validate) makes them from C(postmortem_check_files)
        (each an C(id), C(title), C(groups), C(timeout), C(digest) and C(gather), its questions). The host only
        answers them, in RV(ansible_facts.postmortem_declared); their verdict is the controller's
        (M(homelab.postmortem.audit_report)). See the collection's C(docs/declared_checks.md).
      - A check whose questions are wrong is that check's V(error); an entry that cannot even be named fails the task.
    type: list
    elements: dict
    default: []
    version_added: 0.2.0
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.facts
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
'''

EXAMPLES = r'''
- name: Run every detection
  homelab.postmortem.audit_facts:

- name: Everything but the Raspberry Pi check
  homelab.postmortem.audit_facts:
    checks: ['!pi_ir_tx']

- name: Only the podman detections, with a shorter limit per command
  homelab.postmortem.audit_facts:
    checks: [podman]
    command_timeout: 10
  become: true

- name: Audit an SD-card image before it is flashed
  homelab.postmortem.audit_facts:
    checks: [pi_ir_tx]
    root: /mnt/sdcard

- name: Narrow the affected kernel range once a fixed kernel ships
  homelab.postmortem.audit_facts:
    checks: [pi_ir_tx]
    settings:
      pi_ir_tx:
        fixed_in: "6.18.60"

- name: Show what was found
  ansible.builtin.debug:
    msg: "{{ item.value.status }}: {{ item.value.summary }}"
  loop: "{{ ansible_facts.postmortem | dict2items }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description:
        - Findings keyed by detection id. Every finding has C(id), C(title), C(status)
          (one of V(ok), V(affected), V(at_risk), V(not_applicable), V(unknown), V(error)),
          C(summary), C(evidence), C(remediation) and C(references).
        - A detection that looked at several things (processes, config lines, containers)
          lists them in C(evidence.instances), each with C(name), C(status), C(summary)
          and C(evidence); the finding's status is the worst of them.
      returned: always
      type: dict
      sample:
        llama_sleep_race:
          id: llama_sleep_race
          title: llama-server sleep mode loses or crashes on a request that arrives just before it sleeps
          status: at_risk
          summary: 1 of 1 llama-server instance(s) have sleep mode on; 1 would stay down after a crash.
          evidence:
            llama_server_processes: 1
            instances:
              - name: llama-server pid 4242
                status: at_risk
                summary: llama-server pid 4242 sleeps after 2 s idle (command line); a crash is NOT restarted.
                evidence:
                  pid: 4242
                  sleep_idle_seconds: 2
                  supervisor:
                    unit: llama.service
                    restart: "no"
                    crash_restarted: false
          remediation:
            manual:
              - Leave sleep mode off (--sleep-idle-seconds -1, the default).
          references:
            - https://github.com/ggml-org/llama.cpp/issues/29689
    postmortem_declared:
      description:
        - The answers to the declared checks' questions, keyed by check id - C(digest), C(now) (the host's
          time) and C(answers) (one per question), or C(status) and C(reason) when the check could not be
          asked (V(error), V(unknown), V(not_applicable)). Data for the controller's judge, not findings.
      returned: when O(declared) is not empty
      type: dict
    postmortem_run:
      description: How the findings were produced.
      returned: always
      type: dict
      contains:
        checks:
          description: Detection ids that ran.
          type: list
          elements: str
          returned: always
        declared:
          description: Declared check ids that were asked.
          type: list
          elements: str
          returned: always
        probes:
          description: Probes that were allowed to run.
          type: list
          elements: str
          returned: always
        root:
          description: Filesystem root that was audited.
          type: str
          returned: always
        command_timeout:
          description: Seconds one host command was allowed.
          type: int
          returned: always
        detection_timeout:
          description: Seconds each detection's commands were allowed together.
          type: int
          returned: always
        live:
          description: Whether the running system was read (false when auditing an image through O(root)).
          type: bool
          returned: always
        duration_ms:
          description: Wall time of each detection in milliseconds.
          type: dict
          returned: always
        collection_version:
          description: Version of homelab.postmortem that produced the findings.
          type: str
          returned: always
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module()


if __name__ == '__main__':
    main()
