#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_export_idmap_facts
short_description: Find podman containers whose export and cp write shifted file owners
version_added: 0.1.0
description:
  - Lists the containers of the user the module runs as (root's rootful containers with
    C(become=true)) and of every user named in the setting C(users), and marks those with an ID
    mapping of their own (C(--userns=keep-id), C(--uidmap), C(--userns=auto)) C(at_risk), because
    C(podman export) and C(podman cp ctr:/ -) write their files with every owner shifted.
  - The opt-in probe C(export_owners) streams C(podman export) of each mapped container (at most
    C(probe_max_containers) per user, C(probe_timeout) seconds and C(probe_max_bytes) bytes each)
    straight into a tar reader, writes nothing to disk, and reads the owners of C(etc/passwd),
    C(etc/group), C(usr/bin/su) and C(bin/su). Any of them not 0/0 makes the container
    C(affected); all 0/0 makes it C(ok); none found makes it C(unknown).
  - Another user's containers are read with C(runuser -u USER), which needs root.
  - Returns C(ansible_facts.postmortem.podman_export_idmap); the same detection runs in
    M(homelab.postmortem.audit_facts).
  - "Settings: C(users) (list, default empty), C(probe_max_containers) (default 5),
    C(probe_timeout) (seconds, default 60), C(probe_max_bytes) (default 536870912)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
  - module: homelab.postmortem.podman_safe_export
'''

EXAMPLES = r'''
- name: Check root's and alice's containers, and measure their exports
  homelab.postmortem.podman_export_idmap_facts:
    probes: [export_owners]
    settings:
      podman_export_idmap:
        users: [alice]
  become: true
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(podman_export_idmap).
      returned: always
      type: complex
      contains:
        podman_export_idmap:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence.users) has one entry per user checked (C(user), C(podman_version), C(rootless),
              C(containers), C(mapped)); C(evidence.mapped_containers) counts containers with a mapping.
            - C(evidence.instances) has one entry per container; its evidence holds the container's
              C(name), C(id), C(state), C(uid_map), C(gid_map), C(userns_mode), C(image), C(user), and with
              the probe C(probe.owners) (path to C(uid/gid) as read from the export), C(probe.bytes_read) and
              C(probe.written_to_disk) (always false).
          returned: always
          type: dict
          sample:
            id: podman_export_idmap
            status: affected
            summary: 1 container(s) export with shifted owners (measured) (1 checked).
            evidence:
              instances:
                - name: container kid (alice)
                  status: affected
                  evidence: {uid_map: ["0:1:1000", "1000:0:1", "1001:1001:64536"],
                             probe: {owners: {etc/passwd: 1/1, usr/bin/su: 1/1}, written_to_disk: false}}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('podman_export_idmap')


if __name__ == '__main__':
    main()
