# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Options shared by audit_facts and every <id>_facts module (their attributes: attributes.facts).
    DOCUMENTATION = r'''
options:
  probes:
    description:
      - Probes to run, by name. A probe sends a bounded number of requests to a running
        service (or, for V(ir_tx_trace), drives hardware) to measure the failure instead
        of inferring it. Probes are never run unless listed here.
      - An unknown probe name fails the task before anything is read.
    type: list
    elements: str
    default: []
  root:
    description:
      - Alternate filesystem root for file-based checks, for example an SD-card image
        mounted at V(/mnt/sdcard). With a root other than V(/) nothing that belongs to the
        running system (processes, sysfs, the running kernel) is read.
      - Must be an absolute path to an existing directory; a relative path, a missing one or a
        file fails the task with the reason. C($HOME) and C(~) are not expanded.
    type: str
    default: /
  settings:
    description:
      - 'Per-detection settings, keyed by detection id, for example
        V({"pi_ir_tx": {"fixed_in": "6.18.60"}}). Each detection''s page in C(docs/) lists
        its settings with their types and defaults.'
      - Every setting is checked against its type before any detection runs; an unknown id or key,
        or a value of the wrong type, fails the task once with a message that names the detection,
        the key, the expected type and the known keys.
    type: dict
    default: {}
  command_timeout:
    description:
      - Seconds one host command (C(podman ps), C(systemctl show), ...) may take. A command that takes
        longer is killed with everything it started, and the detection that ran it reports V(unknown)
        naming the command and the limit; the other detections still run.
    type: int
    default: 30
  detection_timeout:
    description:
      - Seconds all host commands of one detection may take together; past it the detection reports
        V(unknown). Give the audit task an Ansible C(timeout) above the sum as the last guard.
    type: int
    default: 300
  max_instances:
    description:
      - Instances (processes, containers, config lines, models) one finding keeps in its evidence,
        the most serious first; the rest are counted by status in C(evidence.instances_omitted), so a
        pathological host cannot produce megabytes of facts.
    type: int
    default: 200
notes:
  - Detections never change the host, and the module never reports C(changed).
  - Bad input on a host (an unreadable or binary config file, a process that exits while it
    is read, a tool that fails or prints nonsense) gives that finding the status V(error), and a
    host command that does not answer in time the status V(unknown), with the reason in
    C(summary); the other detections still run. A bug in the collection itself is an V(error)
    that says so and names the exception.
  - Host-side code uses only the Python standard library.
'''
