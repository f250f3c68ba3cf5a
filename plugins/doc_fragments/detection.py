# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Options and attributes shared by audit_facts and every <id>_facts module.
    DOCUMENTATION = r'''
options:
  probes:
    description:
      - Probes to run, by name. A probe sends a bounded number of requests to a running
        service (or, for C(ir_tx_trace), drives hardware) to measure the failure instead
        of inferring it. Probes are never run unless listed here.
      - An unknown probe name fails the task before anything is read.
    type: list
    elements: str
    default: []
  root:
    description:
      - Alternate filesystem root for file-based checks, for example an SD-card image
        mounted at C(/mnt/sdcard). With a root other than C(/) nothing that belongs to the
        running system (processes, sysfs, the running kernel) is read.
    type: path
    default: /
  settings:
    description:
      - Per-detection settings, keyed by detection id, for example
        C({"pi_ir_tx": {"fixed_in": "6.18.60"}}). Each detection's page in C(docs/) lists
        its settings and their defaults. Unknown ids or keys fail the task.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    support: none
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  facts:
    support: full
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
  platform:
    platforms: posix
    support: full
    description: Target OS/families that can be operated against.
notes:
  - Detections never change the host, and the module never reports C(changed).
  - Bad input on a host (an unreadable or binary config file, a process that exits while it
    is read, a missing C(systemctl)) gives that finding the status C(error) or C(unknown)
    with the reason in C(summary); the other detections still run.
  - Host-side code uses only the Python standard library.
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
          (one of C(ok), C(affected), C(at_risk), C(not_applicable), C(unknown), C(error)),
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
        probes:
          description: Probes that were allowed to run.
          type: list
          elements: str
          returned: always
        root:
          description: Filesystem root that was audited.
          type: str
          returned: always
        live:
          description: Whether the running system was read (false when auditing an image through I(root)).
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
