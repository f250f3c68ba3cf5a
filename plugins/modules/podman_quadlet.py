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
    exactly as given, and are listed in C(notes). The restart policy becomes C([Service] Restart=)
    (Quadlet adds C(--rm)). Options Quadlet cannot express fail the task with the reason.
  - The unit is validated with the Quadlet generator's dry run before anything is touched, and the
    command line the generator makes is compared option by option with the recorded CreateCommand;
    any option lost, changed or added (beyond what Quadlet adds to every container) fails the task
    (C(conformance) in the result). Then the unit
    is written (backup first, atomic), systemd reloaded, the old container stopped and renamed aside, the
    service started and checked. Only when the new container runs is the old one removed, without its
    volumes. If the service does not come up, everything is put back as it was and the task fails.
  - A container whose writable layer has changes (C(podman diff)) is refused, because removing it would
    lose them, unless I(commit) is true; then it is committed to an image first and the unit uses that.
  - A running container is only replaced with I(replace_running), since replacing it restarts it.
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
attributes:
  check_mode:
    support: full
    description: Shows the unit (as a diff), the generator's verdict and the steps, and changes nothing.
  diff_mode:
    support: full
    description: Returns the unit file before and after.
  platform:
    platforms: posix
    support: full
    description: Target OS/families that can be operated against.
requirements:
  - podman 4.4 or later (Quadlet), systemd as the init system, root.
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
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
  description: Writable-layer changes found by C(podman diff) that would be lost without I(commit).
  returned: when the container could be converted
  type: list
  elements: str
committed_image:
  description: The image the writable layer was committed to.
  returned: when I(commit) was used and the layer had changes
  type: str
backup_file:
  description: Copy of the unit file that was replaced.
  returned: when an existing unit file was replaced and I(backup) is true
  type: str
skipped_reason:
  description: Why a container was left as it is although it is not converted yet.
  returned: when a running container was not replaced
  type: str
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options as podman_options
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_check
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_convert
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.filewrite import write_all
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

COMMAND_TIMEOUT = 1800
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError


class Failed(HostInputError):
    pass


class Converter(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.steps = []
        self.result = {}

        # podman stop and commit of a large container take long: bounded, but generously.
        self.ctx = AuditContext(runner=CommandRunner(timeout=COMMAND_TIMEOUT), which=module.get_bin_path)
        self.cli = podman.PodmanCli(self.ctx, steps=self.steps)

    def podman(self, args, what, check=True):
        rc, out, _err = self.cli.execute(args, what, check)
        return rc, out

    def systemctl(self, args, what, check=True):
        cmd = [self.module.get_bin_path('systemctl', required=True)] + args
        self.steps.append(' '.join(cmd))
        rc, out, err = self.ctx.run_command(cmd)
        if check and rc != 0:
            raise Failed('%s failed (rc %d): %s' % (what, rc, podman.first_line(err) or podman.first_line(out) or 'no output'))
        return rc, out

    def inspect(self, name):
        rc, out, err = self.ctx.run_command(self.cli.command(['container', 'inspect', name]))
        if rc != 0:
            return None
        data = self.module.from_json(out or '[]')
        return podman.Container(data[0]) if data else None

    def service_state(self, service):
        rc, out, err = self.ctx.run_command([self.module.get_bin_path('systemctl', required=True), 'show', service,
                                             '--property=LoadState,ActiveState,FragmentPath,SourcePath'])
        return dict(line.split('=', 1) for line in out.splitlines() if '=' in line)


def _read(path):
    try:
        return hostio.read_text(path)
    except hostio.ReadProblem as problem:
        if problem.kind == 'missing':
            return None
        raise Failed(str(problem))


class Target(object):
    """What one conversion works on: the container, its unit file and service."""

    def __init__(self, params):
        self.name = params['name']
        self.unit_name = params['unit_name'] or self.name
        self.service = '%s.service' % self.unit_name
        self.unit_path = os.path.join(params['unit_dir'], '%s.container' % self.unit_name)
        self.before = None
        self.container = None
        self.version = None
        self.version_text = None


def _preconditions(conv, target):
    """Checks before anything is planned; returns False when there is nothing to do."""
    if conv.cli.binary is None:
        raise Failed('podman is not installed')
    if not conv.ctx.is_root:
        raise Failed('converting rootful containers needs root (become: true)')
    info = conv.cli.info()
    target.version = hostio.version_tuple(info['version'] or '')
    target.version_text = info['version'] or '?'
    if target.version is None or target.version < quadlet.QUADLET_MIN:
        raise Failed('podman %s has no Quadlet (it needs podman 4.4 or later); convert by hand or upgrade podman'
                     % info['version'])
    name, service = target.name, target.service
    target.before = _read(target.unit_path)
    target.container = container = conv.inspect(name)
    if container is None:
        if target.before is not None:
            conv.result['msg'] = 'no container %s, but %s exists: already converted' % (name, target.unit_path)
            return False
        raise Failed('no container named %s' % name)
    if container.quadlet_unit == service and target.before is not None:
        conv.result['msg'] = '%s is already run by %s (%s)' % (name, service, target.unit_path)
        return False
    if container.quadlet_unit:
        raise Failed('%s is already run by systemd unit %s; it is not converted again' % (name, container.quadlet_unit))
    if container.status in ('paused', 'removing'):
        raise Failed('%s is %s; convert it when it is running or stopped' % (name, container.status))
    state = conv.service_state(service)
    if state.get('LoadState') == 'loaded' and target.before is None:
        raise Failed('%s already exists (%s) and Quadlet did not generate it; choose another unit_name'
                     % (service, state.get('FragmentPath') or 'unknown path'))
    return True


def _build_unit(conv, target):
    """The unit text (validated by the generator's dry run) and the image to commit to, if any."""
    params, container, name = conv.params, target.container, target.name
    rc, out = conv.podman(['diff', '--format', 'json', container.id], 'podman diff')
    changes = quadlet_convert.layer_changes(conv.module.from_json(out or '{}'), container)
    conv.result['layer_changes'] = changes
    image = None
    if changes:
        if not params['commit']:
            raise Failed('%s has %d change(s) in its writable layer (%s) that removing it would lose; set commit: '
                         'true to commit them to an image first' % (name, len(changes), ', '.join(changes[:5])))
        image = quadlet_convert.image_name_for_commit(container)
    image_config = None
    if not container.create_command:
        rc, out = conv.podman(['image', 'inspect', container.raw.get('Image') or container.image], 'podman image inspect')
        image_config = (conv.module.from_json(out or '[{}]') or [{}])[0].get('Config') or {}
    specs = _option_specs(conv, target) if container.create_command else None
    try:
        text, notes, source = quadlet_convert.build(container, target.version, image_config, image,
                                                    restart_sec=params['restart_sec'],
                                                    unconfined=params['apparmor_unconfined'], specs=specs,
                                                    version_text=target.version_text)
    except quadlet.ConversionProblem as exc:
        raise Failed('%s cannot be converted: %s' % (name, exc))
    conv.result.update(unit=text, notes=notes, source=source)
    conv.result['diff'] = {'before': target.before or '', 'after': text,
                           'before_header': target.unit_path, 'after_header': target.unit_path}

    generator = params['quadlet_generator'] or quadlet.find_generator(conv.module.get_bin_path)
    if generator is None:
        raise Failed('no Quadlet generator found (/usr/libexec/podman/quadlet); set quadlet_generator')
    conv.steps.append('%s -dryrun (unit in a temporary directory)' % generator)
    ok, generated, messages = quadlet.dry_run(generator, '%s.container' % target.unit_name, text, runner=conv.ctx.runner)
    exec_start = [line for line in generated.splitlines() if line.startswith('ExecStart=')]
    conv.result['generated_exec_start'] = exec_start[0] if exec_start else ''
    if not ok:
        raise Failed('the Quadlet generator rejected the unit for %s: %s' % (name, messages or 'no service generated'))
    if specs is not None:
        differences = quadlet_check.compare(container.create_command, quadlet_check.exec_argv(exec_start[0]), specs,
                                            env_values=_env_values(container), container=container, image=image,
                                            version_text=target.version_text)
        conv.result['conformance'] = differences
        if differences:
            raise Failed('the unit for %s would not run the same container: %s; nothing was changed'
                         % (name, '; '.join(differences)))
    return text, image


def _env_values(container):
    return dict(item.split('=', 1) for item in (container.raw.get('Config') or {}).get('Env') or [] if '=' in item)


def _option_specs(conv, target):
    """The host podman's global and run options, from its own --help."""
    def read_help(args):
        _rc, out = conv.podman(args + ['--help'], 'podman %s--help' % ''.join(a + ' ' for a in args))
        return out
    try:
        return podman_options.specs_for(target.version_text, read_help)
    except podman_options.OptionError as exc:
        raise Failed("podman's options could not be read from podman --help: %s" % exc)


def _swap(conv, target, text, image, aside, running):
    """Commit, write the unit, and replace the container by the service; roll back on failure."""
    name, service, unit_path = target.name, target.service, target.unit_path
    if image:
        conv.podman(['commit', '--quiet', name, image], 'podman commit')
        conv.result['committed_image'] = image
    backups = write_all(conv.module, [(unit_path, target.before, text)], conv.params['backup'])
    if backups:
        conv.result['backup_file'] = backups[0]
    conv.steps.append('wrote %s' % unit_path)
    switched = False
    try:
        conv.systemctl(['daemon-reload'], 'systemctl daemon-reload')
        if running:
            conv.podman(['stop', name], 'podman stop')
        conv.podman(['rename', name, aside], 'podman rename')
        switched = True
        conv.systemctl(['start', service], 'systemctl start %s' % service)
        _wait_running(conv, service, name, conv.params['start_timeout'])
    except HostInputError as exc:
        _roll_back(conv, service, unit_path, target.before, switched, name, aside, running)
        raise Failed('%s; everything was put back as it was%s' % (exc, _journal(conv, service)))
    conv.podman(['rm', aside], 'podman rm of the old container')


def convert(conv):
    target = Target(conv.params)
    conv.result.update(unit_path=target.unit_path, service=target.service)
    if not _preconditions(conv, target):
        return False
    text, image = _build_unit(conv, target)
    name, container = target.name, target.container
    running = container.status == 'running'
    aside = '%s-pre-quadlet-%s' % (name, container.id[:12])
    plan = ['podman commit %s %s' % (name, image)] if image else []
    plan += ['write %s' % target.unit_path, 'systemctl daemon-reload']
    if running:
        plan.append('podman stop %s' % name)
    plan += ['podman rename %s %s' % (name, aside), 'systemctl start %s' % target.service,
             'check %s is active and container %s runs' % (target.service, name), 'podman rm %s (volumes kept)' % aside]
    if running and not conv.params['replace_running']:
        conv.result['skipped_reason'] = ('%s is running; converting it restarts it. Set replace_running: true '
                                         '(podman_quadlet_replace_running) to convert it.' % name)
        conv.steps.extend('would: %s' % step for step in plan)
        conv.module.warn(conv.result['skipped_reason'])
        return False
    if conv.module.check_mode:
        conv.steps.extend('would: %s' % step for step in plan)
        return True
    _swap(conv, target, text, image, aside, running)
    return True


def _wait_running(conv, service, name, timeout):
    deadline = time.time() + timeout
    last = ''
    while time.time() < deadline:
        state = conv.service_state(service)
        container = conv.inspect(name)
        last = 'service %s, container %s' % (state.get('ActiveState'), container.status if container else 'absent')
        if state.get('ActiveState') == 'active' and container is not None and container.status == 'running':
            conv.steps.append('%s is active and %s runs' % (service, name))
            return
        if state.get('ActiveState') == 'failed':
            break
        time.sleep(1)
    raise Failed('%s did not come up within %d s (%s)' % (service, timeout, last))


def _roll_back(conv, service, unit_path, before, switched, name, aside, was_running):
    conv.systemctl(['stop', service], 'systemctl stop', check=False)
    if before is None:
        if os.path.exists(unit_path):
            os.unlink(unit_path)
    else:
        write_all(conv.module, [(unit_path, None, before)], False)
    conv.systemctl(['daemon-reload'], 'systemctl daemon-reload', check=False)
    if switched:
        conv.podman(['rm', '--force', '--ignore', name], 'podman rm of the failed new container', check=False)
        conv.podman(['rename', aside, name], 'podman rename back', check=False)
        if was_running:
            conv.podman(['start', name], 'podman start', check=False)


def _journal(conv, service):
    journalctl = conv.module.get_bin_path('journalctl')
    if not journalctl:
        return ''
    rc, out, err = conv.ctx.run_command([journalctl, '--unit', service, '--lines', '8', '--no-pager', '--output', 'cat'])
    lines = [line for line in out.splitlines() if line.strip()]
    return ('. Last journal lines of %s: %s' % (service, ' | '.join(lines[-8:]))) if lines else ''


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
    conv = Converter(module)
    try:
        changed = convert(conv)
    except HostInputError as exc:
        result = dict(conv.result)
        result.pop('diff', None)
        module.fail_json(msg=str(exc), steps=conv.steps, **result)
    result = dict(conv.result)
    if not (module._diff and changed):
        result.pop('diff', None)
    module.exit_json(changed=changed, steps=conv.steps, **result)


if __name__ == '__main__':
    main()
