#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: podman_quadlet
short_description: Convert a rootful podman container into a Quadlet unit that systemd restarts
version_added: 0.1.0
description:
  - Builds a Quadlet C(.container) unit from C(podman container inspect) - from C(Config.CreateCommand)
    when podman recorded it, otherwise from the structured fields - following podman-systemd.unit(5)
    for the podman version on the host. A CreateCommand is read with the options of the host's own
    podman (C(podman --help), C(podman run --help)), so value options and on/off flags split as podman
    splits them. Every option with a Quadlet key in that version becomes the key (booleans with their
    real value, values written so the generator reads them back unchanged); the others go to
    C(PodmanArgs=) (global options to C(GlobalArgs=), C(--module) to C(ContainersConfModule=)),
    exactly as given, and are listed in RV(notes). The restart policy becomes C([Service] Restart=)
    (Quadlet adds C(--rm)). Options Quadlet cannot express fail the task with the reason.
  - The unit is validated with the Quadlet generator's dry run before anything is touched, and the
    command line the generator makes is compared option by option with the recorded CreateCommand;
    any option lost, changed or added (beyond what Quadlet adds to every container) fails the task
    (RV(conformance) in the result). Then the unit
    is written (backup first, atomic), systemd reloaded, the old container stopped and renamed aside, the
    service started and checked. Only when the new container runs is the old one removed, without its
    volumes. If the service does not come up, everything is put back as it was and the task fails.
  - A container whose writable layer has changes (C(podman diff)) is refused, because removing it would
    lose them, unless O(commit) is true; then it is committed to an image first and the unit uses that.
  - A running container is only replaced with O(replace_running), since replacing it restarts it.
  - A container already run by this unit (label C(PODMAN_SYSTEMD_UNIT)) is left alone, so a second run
    changes nothing.
options:
  name:
    description: Name of the rootful container to convert.
    type: str
    required: true
  unit_name:
    description:
      - Base name of the unit (C(<unit_name>.container) becomes C(<unit_name>.service)). Defaults to the
        container's name. An existing unit of that name that Quadlet did not generate is refused.
    type: str
  unit_dir:
    description: Where rootful Quadlet units live.
    type: path
    default: /etc/containers/systemd
  commit:
    description: Commit a container with writable-layer changes to an image and run the unit from that image.
    type: bool
    default: false
  replace_running:
    description: Convert a running container (it is stopped and started again as the service).
    type: bool
    default: false
  apparmor_unconfined:
    description:
      - Add C(--security-opt=apparmor=unconfined). This removes the container's AppArmor confinement;
        it is a trade-off some choose instead of, or on top of, systemd restarts. Never on by default.
    type: bool
    default: false
  restart_sec:
    description: C(RestartSec=) of the service, so a container that exits at once is not restarted in a tight loop.
    type: int
    default: 1
  start_timeout:
    description: Seconds to wait for the service and its container to be running.
    type: int
    default: 90
  quadlet_generator:
    description: Path of the Quadlet generator used for the dry run. Found in C(/usr/libexec/podman) or C(/usr/lib/podman) when not given.
    type: path
  backup:
    description: Keep a timestamped copy of an existing unit file before it is replaced.
    type: bool
    default: true
notes:
  - In check mode the module shows the unit (as a diff), the generator's verdict and the steps.
requirements:
  - podman 4.4 or later (Quadlet), systemd as the init system, root.
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.diff
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.podman_restart_userns_facts
'''

EXAMPLES = r'''
- name: See the unit and the steps for a container
  homelab.postmortem.podman_quadlet:
    name: web
  check_mode: true
  diff: true
  become: true

- name: Convert it, restarting it as a service
  homelab.postmortem.podman_quadlet:
    name: web
    replace_running: true
  become: true
'''

RETURN = r'''
unit_path:
  description: The Quadlet unit file.
  returned: when the container could be converted or is already converted
  type: str
  sample: /etc/containers/systemd/web.container
service:
  description: The systemd service that runs the container.
  returned: when the container could be converted or is already converted
  type: str
  sample: web.service
unit:
  description: The unit text written (or, in check mode, that would be written).
  returned: when the container could be converted
  type: str
source:
  description: Where the unit was built from, C(CreateCommand) or C(inspect).
  returned: when the container could be converted
  type: str
notes:
  description: Options carried as C(PodmanArgs=), options dropped, and other choices made, one per line.
  returned: when the container could be converted
  type: list
  elements: str
generated_exec_start:
  description: The C(ExecStart=) line the Quadlet generator produced in the dry run.
  returned: when the container could be converted
  type: str
conformance:
  description:
    - The differences between the recorded CreateCommand and the command the generated unit runs,
      option by option (C(lost ...), C(added ...), C(changed ...)). Empty when the conversion is
      faithful; any entry fails the task before anything is changed.
  returned: when the unit was built from a CreateCommand and the generator accepted it
  type: list
  elements: str
  sample: []
  version_added: 0.2.0
steps:
  description: What was done (or, in check mode, what would be done), in order.
  returned: always
  type: list
  elements: str
layer_changes:
  description: Writable-layer changes found by C(podman diff) that would be lost without O(commit).
  returned: when the container could be converted
  type: list
  elements: str
committed_image:
  description: The image the writable layer was committed to.
  returned: when O(commit) was used and the layer had changes
  type: str
backup_file:
  description: Copy of the unit file that was replaced.
  returned: when an existing unit file was replaced and O(backup) is true
  type: str
skipped_reason:
  description: Why a container was left as it is although it is not converted yet.
  returned: when a running container was not replaced
  type: str
diff:
  description:
    - At most one entry, for the unit file RV(unit_path). C(before) is its text before (empty when it is new) and
      C(after) the RV(unit) written. The swap of the container for the service (commit, stop, rename, start) is not
      in the diff; RV(steps) lists it.
    - Empty when nothing is converted (the container is already run by the unit, or it is running and
      O(replace_running) is off).
  returned: always
  type: list
  elements: dict
  sample:
    - before_header: /etc/containers/systemd/web.container
      after_header: /etc/containers/systemd/web.container
      before: ""
      after: |
        # Converted from podman container web by homelab.postmortem.podman_quadlet.
        # systemd restarts it (Restart= below); podman's own restart policy is not used.
        [Unit]
        Description=web (podman container converted to Quadlet)
        StartLimitIntervalSec=0

        [Container]
        ContainerName=web
        Image=docker.io/library/nginx:1.27
        PublishPort=8080:80

        [Service]
        Restart=always
        RestartSec=1

        [Install]
        WantedBy=default.target
backups:
  description:
    - The copy of the unit file RV(unit_path) made before it was replaced, beside it and named
      C(<unit_name>.container.<UTC time>.bak), the same path as RV(backup_file).
    - Empty when the unit file is new, with O(backup=false), in check mode and when nothing was converted. The old
      container is no backup here. It is kept, renamed C(<name>-pre-quadlet-<container id>), until the service
      runs, and then removed without its volumes; with O(commit) its writable layer lives on in RV(committed_image).
  returned: always
  type: list
  elements: str
  sample: [/etc/containers/systemd/web.container.20261201T131512Z.bak]
verified:
  description:
    - Whether, after C(systemctl start), systemd reports RV(service) C(active) and podman reports the container
      O(name) running, asked once a second for up to O(start_timeout) seconds (a service that reports C(failed)
      ends the wait). Only then is the old container removed. False in check mode and when nothing was converted.
  returned: always
  type: bool
  version_added: 0.2.0
rolled_back:
  description:
    - When the service did not come up, or reloading systemd, stopping, renaming or starting failed, whether the
      conversion was undone. The service is stopped, the unit file written back as it was (removed when it was
      new), systemd reloaded, the new container removed and the old one renamed back to O(name) and started again
      when it was running. The results of those commands are not checked; RV(steps) lists each one. An image
      committed with O(commit) is kept. A unit file that cannot be written back makes it false, and RV(msg) names
      it; the rest of the roll back still runs.
    - False when the task failed before the unit file was written; nothing but a committed image was changed then.
  returned: always
  type: bool
  version_added: 0.2.0
msg:
  description:
    - "When nothing is to do, that the container is already run by the unit, or that there is no container O(name)
      but RV(unit_path) exists (already converted). C(nothing to change) when a running container is left alone
      (RV(skipped_reason) says why), C(changed, and read back as planned) once the service runs, and in check mode
      C(check mode: the diff is what would change; nothing was changed)."
    - On a failure, the reason and, when the service did not come up, its last journal lines.
    - "When RV(unit_path) is on a read-only mount, check mode adds
      C(; it cannot be written now: mounted read-only: <mount> (<unit_path>)), and a run fails with that text and
      C(; nothing was changed) before the container is committed, stopped or renamed."
  returned: always
  type: str
  sample: web is already run by web.service (/etc/containers/systemd/web.container)
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

# podman stop and commit of a large container take long: bounded, but generously.
COMMAND_TIMEOUT = 1800


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            unit_name=dict(type='str'),
            unit_dir=dict(type='path', default='/etc/containers/systemd'),
            commit=dict(type='bool', default=False),
            replace_running=dict(type='bool', default=False),
            apparmor_unconfined=dict(type='bool', default=False),
            restart_sec=dict(type='int', default=1),
            start_timeout=dict(type='int', default=90),
            quadlet_generator=dict(type='path'),
            backup=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )
    ctx = AuditContext(runner=CommandRunner(timeout=COMMAND_TIMEOUT), which=module.get_bin_path)
    fix_protocol.run(module, quadlet_convert.Conversion(ctx, quadlet_convert.Options(**module.params)))


if __name__ == '__main__':
    main()
