#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: docker_overlay_sandbox_facts
short_description: Find running Docker containers cut off their swarm overlay network
version_added: 0.1.0
description:
  - Talks to the Docker Engine API over its unix socket (standard library only) and reads, for every
    overlay network with containers on this node, whether the network's sandbox exists
    (C(<exec-root>/netns/<epoch>-<network id>), any epoch), and for each running container on it whether
    its interface on that network has a carrier, read inside the container's own network namespace
    (C(nsenter --net ip -o link); sysfs from outside would show the host's interfaces).
  - The sandbox is looked for in the directory of each running container's sandbox key
    (C(NetworkSettings.SandboxKey), C(<exec-root>/netns/<id>)), the daemon's own answer, wherever
    C(--exec-root), C(/etc/docker/daemon.json) or a C(--config-file) put it. Only where that key is not
    there as the audit sees it is the exec root assumed (setting C(exec_root), else as dockerd resolved
    it at start from its flag, its config file, or its rootless or plain default), and a sandbox missing
    where it was assumed is C(unknown), never C(affected).
  - C(affected) when a running container is cut off (no sandbox where its sandbox key says, no carrier,
    or with the probe no answer to a ping), whatever the Engine version. C(at_risk) when tasks on this node failed during network
    setup on an Engine in the affected range (29.0.0 and later, moby PR 50945), since each such failure
    takes one join too many off the network's count. Counts of C(Peer entry was not in db) warnings in
    the daemon's journal are evidence.
  - Probe C(overlay_ping) (opt-in) sends one ping from each running container (at most
    C(probe_max_containers)) to the network's load-balancer endpoint, or to another container on it.
  - Needs root (C(become=true)). Returns C(ansible_facts.postmortem.docker_overlay_sandbox); the same
    detection runs in M(homelab.postmortem.audit_facts).
  - "Settings: C(socket) (default C(unix:///var/run/docker.sock)), C(exec_root) (used only where no sandbox
    key shows the exec root; default: as dockerd resolves it), C(api_timeout) (10), C(affected_from) (C(29.0.0)), C(fixed_in) (none),
    C(journal_unit) (C(docker.service)), C(probe_max_containers) (20)."
extends_documentation_fragment:
  - homelab.postmortem.detection
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Find containers cut off their overlay network, with real traffic
  homelab.postmortem.docker_overlay_sandbox_facts:
    probes: [overlay_ping]
  become: true

- name: A second daemon on the same host (its exec root comes from its containers' sandbox keys)
  homelab.postmortem.docker_overlay_sandbox_facts:
    settings:
      docker_overlay_sandbox:
        socket: unix:///run/docker-b.sock
  become: true
'''

RETURN = r'''
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: complex
  contains:
    postmortem:
      description: Findings keyed by detection id; this module returns only C(docker_overlay_sandbox).
      returned: always
      type: complex
      contains:
        docker_overlay_sandbox:
          description:
            - The finding, with the keys every finding has (C(id), C(title), C(status), C(summary),
              C(evidence), C(remediation), C(references)).
            - C(evidence) has C(engine_version), C(in_affected_range), C(swarm), C(node_id), C(exec_root) and
              C(exec_root_from) (the containers' sandbox keys, or the assumption), C(exec_root_assumed)
              (C(exec_root), C(from), C(dockerd_pid), C(config_file), C(notes)), C(networks) (per network
              C(netns_dir), C(netns_dir_confirmed), C(sandbox), C(local_containers),
              C(failed_network_setup_tasks)) and C(peer_entry_warnings).
            - C(evidence.instances) has one entry per container on an overlay network (C(container),
              C(network), C(interface), C(flags), C(carrier), C(sandbox), C(netns_dir), C(netns_dir_from),
              C(netns_dir_confirmed), C(sandbox_unknown) when it could not be looked for, and with the probe
              C(ping)) and one per network with failed starts on this node.
          returned: always
          type: dict
          sample:
            id: docker_overlay_sandbox
            status: affected
            summary: 1 running container(s) cut off their overlay network (c1); docker ps still says running.
            evidence:
              engine_version: 29.8.2
              instances:
                - name: container c1 on ovs
                  status: affected
                  evidence: {interface: eth0, flags: [NO-CARRIER, BROADCAST, MULTICAST, UP], carrier: false}
    postmortem_run:
      description: How the finding was produced (checks, probes, root, live, duration_ms, collection_version).
      returned: always
      type: dict
'''

from ansible_collections.homelab.postmortem.plugins.module_utils.facts_module import main as run_module


def main():
    run_module('docker_overlay_sandbox')


if __name__ == '__main__':
    main()
