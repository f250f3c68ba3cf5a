#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_restart_userns_facts
short_description: Find rootful podman containers whose restart policy stopped working, or will
version_added: 0.1.0
description:
  - Reads every rootful container (C(podman ps --all), C(podman container inspect)) with a
    restart policy, the host's AppArmor state (C(/sys/module/apparmor/parameters/enabled)) and
    the podman version.
  - C(affected) (STUCK) when a container has a restart policy that should have brought it back,
    is exited, and was not stopped by a person. Whether a person stopped it comes from
    C(State.StoppedByUser) where this podman's inspect has it (podman 5), otherwise from the
    container's events (podman 4 logs no C(stop) event; a completed C(cleanup) after the last
    C(died) means podman decided not to restart it, no cleanup means its restart path failed).
    C(on-failure) that exited 0 and C(on-failure:N) whose retries are spent are not stuck.
  - C(at_risk) when a running container is rootful, has its own UID/GID mapping, is confined by
    an AppArmor profile (not C(unconfined)), has a restart policy, and the host has AppArmor
    enabled. Containers run by a systemd unit (label C(PODMAN_SYSTEMD_UNIT), as Quadlet sets)
    are C(ok).
  - Needs root (C(become=true)); as another user the finding is C(unknown).
  - Returns C(ansible_facts.postmortem.podman_restart_userns); the same detection runs in
    M(homelab.postmortem.audit_facts).
  - "Setting C(fixed_in) (string, default none): the first podman version with the fix; running
    containers on that version or later are C(ok)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
  - module: homelab.postmortem.podman_quadlet
'''

EXAMPLES = r'''
- name: Find stuck and at-risk rootful containers
  homelab.postmortem.podman_restart_userns_facts:
  become: true

- name: List the stuck ones
  ansible.builtin.debug:
    msg: "{{ ansible_facts.postmortem.podman_restart_userns.evidence.instances
             | default([]) | selectattr('status', 'equalto', 'affected') | map(attribute='name') | list }}"
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(podman_restart_userns).
      returned: always
      type: complex
      contains:
        podman_restart_userns:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) holds C(podman_version), C(apparmor) (the kernel's AppArmor state, in words),
              C(podman_apparmor_enabled) (what podman info says), C(event_logger), C(containers) and
              C(containers_with_restart_policy).
            - C(evidence.instances) has one entry per container with a restart policy; its evidence holds
              C(name), C(id), C(state), C(exit_code), C(restart_policy), C(restart_count), C(uid_map),
              C(gid_map), C(userns_mode), C(apparmor_profile), C(image), C(systemd_unit),
              C(podman_version), C(apparmor), C(matches_apparmor_pattern), and for exited containers
              C(stopped_by_user_source) with C(stopped_by_user) or C(events_since_last_start) and C(outcome).
          returned: always
          type: dict
          sample:
            id: podman_restart_userns
            status: affected
            summary: 1 STUCK (web) of 2 rootful container(s) with a restart policy.
            evidence:
              podman_version: 5.4.2
              apparmor: AppArmor enabled (/sys/module/apparmor/parameters/enabled = Y)
              instances:
                - name: container web
                  status: affected
                  evidence: {restart_policy: always, restart_count: 1, state: exited, uid_map: ["0:200000:65536"],
                             apparmor_profile: containers-default-0.62.2, stopped_by_user: false}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('podman_restart_userns')


if __name__ == '__main__':
    main()
