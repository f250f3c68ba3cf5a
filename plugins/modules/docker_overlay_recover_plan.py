#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: docker_overlay_recover_plan
short_description: Plan, and then check, the recovery of a swarm node whose containers are cut off their overlay network
version_added: 0.2.0
description:
  - With O(stage=plan), sorts a C(docker_overlay_sandbox) finding of this node by the codes its instances carry
    (C(evidence.kind), C(evidence.cause); never by their names or summaries) into the containers cut off, what
    could not be judged and what is confirmed only by its carrier, and returns what the
    P(homelab.postmortem.docker_overlay_recover#role) role does on this node as data (RV(scale_down), RV(restart),
    RV(start_again)) and as steps for a person (RV(steps)).
  - The containers to start again after the restart are read from the Engine API on the node's socket
    (O(docker_host)), only when something is cut off. They are the running ones whose restart policy is none or
    C(on-failure) (dockerd starts the others itself, and an C(on-failure) one only when it exited non-zero) and
    that are not swarm tasks (swarm starts or replaces its own). One run with C(--rm) is named in RV(notes), since
    the restart removes it.
  - Fails, changing nothing, when nothing is proven cut off and something could not be judged (a daemon that
    did not answer in time, fields of the wrong type, a node that could not be read). Acting would be a guess,
    and "nothing to do" would hide it.
  - With O(stage=verify), sorts the finding read after the restart the same way and fails when a container is
    still cut off or one cannot be judged; one whose interface has its carrier back while its network's
    sandbox file cannot be seen from where the audit runs passes, named in RV(unconfirmed).
  - Reads only; the role runs the steps (one node at a time, which only the play can order).
options:
  finding:
    description: The C(docker_overlay_sandbox) finding of this node, as M(homelab.postmortem.docker_overlay_sandbox_facts) returned it.
    type: dict
    required: true
  stage:
    description: V(plan) before the recovery, V(verify) with the finding read after it.
    type: str
    default: plan
    choices: [plan, verify]
  docker_host:
    description: The daemon's API socket (E(DOCKER_HOST) form, unix only), read for the containers to start again.
    type: str
    default: unix:///var/run/docker.sock
  api_timeout:
    description: Seconds one Engine API request may take (1 to 300).
    type: int
    default: 10
  scale_down:
    description: Services (names or ids) to scale to zero before the restart, when something is cut off.
    type: list
    elements: str
    default: []
  scale_down_failing:
    description: Also scale to zero every service whose tasks on this node failed during network setup, as the finding names them.
    type: bool
    default: false
  restart:
    description: Whether dockerd may be restarted. When false the plan says that the containers stay cut off.
    type: bool
    default: false
  restart_command:
    description: The command that restarts dockerd, for the steps.
    type: list
    elements: str
    default: [systemctl, restart, docker]
  probe:
    description:
      - Whether the check after the restart runs the
        O(homelab.postmortem.docker_overlay_sandbox_facts#module:probes=overlay_ping) probe, for the steps.
    type: bool
    default: false
notes:
  - "In check mode each step of the plan reads C(would: ...); the module changes nothing in either mode."
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.plan
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.docker_overlay_sandbox_facts
'''

EXAMPLES = r'''
- name: Read the node's overlay state
  homelab.postmortem.docker_overlay_sandbox_facts:

- name: Plan the recovery of this node
  homelab.postmortem.docker_overlay_recover_plan:
    finding: "{{ ansible_facts.postmortem.docker_overlay_sandbox }}"
    scale_down_failing: true
    restart: true
  register: plan

- name: Show it
  ansible.builtin.debug:
    msg: "{{ [plan.msg] + plan.steps }}"
'''

RETURN = r'''
cut_off:
  description: The containers the finding calls cut off.
  returned: always
  type: list
  elements: str
  sample: [web]
not_judged:
  description: Why some thing could not be judged (its summary, or the finding's).
  returned: always
  type: list
  elements: str
unconfirmed:
  description: Containers whose interface has its carrier while their network's sandbox file could not be looked for (their summaries).
  returned: always
  type: list
  elements: str
failing_services:
  description: The services whose tasks on this node failed during network setup, as the finding names them.
  returned: always
  type: list
  elements: str
restart_required:
  description: Whether something is cut off, so that only a restart of dockerd brings it back.
  returned: when O(stage=plan)
  type: bool
restart:
  description: Whether the role restarts dockerd here (something is cut off and O(restart) allows it).
  returned: when O(stage=plan)
  type: bool
scale_down:
  description: The services to scale to zero first, the user's and, with O(scale_down_failing), the failing ones, each once.
  returned: when O(stage=plan)
  type: list
  elements: str
start_again:
  description: The containers to start again after the restart.
  returned: when O(stage=plan)
  type: list
  elements: str
steps:
  description: "The steps in order, for a person; in check mode each is C(would: ...)."
  returned: when O(stage=plan)
  type: list
  elements: str
  sample: ["scale service web to 0", "restart dockerd: systemctl restart docker"]
notes:
  description: Names the plan leaves out, and why (a service or container whose name is not a Docker name).
  returned: when O(stage=plan)
  type: list
  elements: str
diff:
  description:
    - Always empty, in both stages and in check mode. This module changes nothing on the node (with O(stage=plan) it
      reads the Engine API, no more); the P(homelab.postmortem.docker_overlay_recover#role) role scales the services
      down, restarts dockerd and starts the containers again, as RV(scale_down), RV(restart) and RV(start_again) say
      and RV(steps) lists.
  returned: always
  type: list
  elements: dict
backups:
  description:
    - Always empty. No file is written, and what the role changes (services scaled to zero, the daemon restarted)
      has no copy to keep; RV(scale_down) and RV(start_again) record which services it scales down and which
      containers it starts again.
  returned: always
  type: list
  elements: str
verified:
  description:
    - With O(stage=verify), true when the finding read after the restart (O(finding)) shows no container cut off
      and nothing that could not be judged. A container whose interface has its carrier back while its network's
      sandbox file cannot be seen from where the audit runs passes, and is named in RV(unconfirmed). Otherwise the
      task fails, with RV(cut_off) and RV(not_judged) saying what is still wrong.
    - Always false with O(stage=plan). The change is the role's; it runs this module again with O(stage=verify)
      once the daemon is back.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - Always false. This module changes nothing, so it has nothing to put back; a failed O(stage=verify) leaves the
      node as the restart left it, and the role stops there.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - With O(stage=plan), what is the matter with this node, C(cut off) and the containers the finding names, or
      C(nothing) and the finding's summary. With O(stage=verify), C(every container has its overlay back).
    - On a failure, why acting would be a guess (what could not be judged), or what is still cut off after the
      recovery.
  returned: always
  type: str
  sample: "cut off: web, db"
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import overlay_recovery

MAX_API_TIMEOUT = 300


class OverlayRecoveryPlan(fix_protocol.Fix):
    """The plan and the verify steps of the fix protocol for docker_overlay_recover. The apply step (scale
    down, restart dockerd, start again) is the role's: a restart must run on one node at a time across
    the play (throttle, any_errors_fatal), which only the play can order; so this module changes nothing."""

    def __init__(self, finding, stage, check_mode, read_start_again, **choices):
        self.finding = finding
        self.stage = stage
        self.check_mode = check_mode
        self.read_start_again = read_start_again
        self.choices = choices  # scale_down, scale_down_failing, restart, restart_command, probe

    def plan(self):
        if self.stage == 'verify':
            try:
                sorting = overlay_recovery.verify(self.finding)
            except overlay_recovery.RecoveryFailed as exc:
                raise fix_protocol.FixFailed(str(exc), **exc.sorting.result())
            except overlay_recovery.PlanRefused as exc:
                raise fix_protocol.FixFailed(str(exc))
            return fix_protocol.Plan(changed=False, result=dict(sorting.result(), verified=True),
                                     msg='every container has its overlay back')
        try:
            planned = overlay_recovery.plan(self.finding, self.read_start_again, **self.choices)
        except overlay_recovery.PlanRefused as exc:
            raise fix_protocol.FixFailed(str(exc), **(exc.sorting.result() if exc.sorting else {}))
        except docker_api.DockerProblem as exc:
            raise fix_protocol.FixFailed('the running containers cannot be read, so those to start again after the '
                                         'restart are not known: %s; nothing was changed' % exc)
        found = planned.result(self.check_mode)
        return fix_protocol.Plan(changed=False, result=found, msg=found.pop('msg'))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            finding=dict(type='dict', required=True),
            stage=dict(type='str', default='plan', choices=['plan', 'verify']),
            docker_host=dict(type='str', default='unix:///var/run/docker.sock'),
            api_timeout=dict(type='int', default=10),
            scale_down=dict(type='list', elements='str', default=[]),
            scale_down_failing=dict(type='bool', default=False),
            restart=dict(type='bool', default=False),
            restart_command=dict(type='list', elements='str', default=['systemctl', 'restart', 'docker']),
            probe=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params['stage'] == 'plan' and not 1 <= params['api_timeout'] <= MAX_API_TIMEOUT:
        module.fail_json(msg='api_timeout must be 1 to %d seconds, got %d' % (MAX_API_TIMEOUT, params['api_timeout']))

    def read_start_again():
        return overlay_recovery.containers_to_start_again(
            docker_api.DockerApi(docker_api.socket_path(params['docker_host']), params['api_timeout']))

    fix_protocol.run(module, OverlayRecoveryPlan(
        params['finding'], params['stage'], module.check_mode, read_start_again,
        scale_down=params['scale_down'], scale_down_failing=params['scale_down_failing'], restart=params['restart'],
        restart_command=params['restart_command'], probe=params['probe']))


if __name__ == '__main__':
    main()
