# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The podman_quadlet conversion: the plan (what must be true, what the unit will be, validated
by the generator's dry run and compared with the CreateCommand), then the swap of the container for
the service, its check, and the way back when the service does not come up.

Everything the host is asked goes through the context (``ctx.run_command``, ``ctx.which``) and
the files through ``write`` (the module's filewrite.write_all), so tests run it on fakes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import time

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import options as podman_options
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import quadlet_check, quadlet_keys

# Paths podman itself writes into a container's layer (mount points of the files it manages).
PODMAN_MANAGED = ('/etc', '/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/etc/passwd', '/etc/group',
                  '/run', '/run/.containerenv', '/run/secrets', '/dev', '/proc', '/sys', '/tmp', '/var/tmp')
_ANONYMOUS = re.compile(r'^[0-9a-f]{64}$')


def image_name_for_commit(container):
    return 'localhost/postmortem-quadlet-%s:%s' % (re.sub(r'[^a-z0-9._-]', '-', container.name.lower()),
                                                   container.id[:12])


def mount_destinations(container):
    return [m.get('Destination') for m in container.raw.get('Mounts') or [] if m.get('Destination')]


def layer_changes(diff, container):
    """The writable-layer changes that would be lost with the container, from ``podman diff --format json``."""
    diff = diff or {}
    paths = []
    for kind in ('added', 'changed', 'deleted'):
        paths.extend((kind, p) for p in diff.get(kind) or [] if isinstance(p, str))
    all_paths = [p for _kind, p in paths]
    mounts = mount_destinations(container)
    significant = []
    for kind, path in paths:
        if path in PODMAN_MANAGED:
            continue
        if any(path == m or path.startswith(m.rstrip('/') + '/') or m.startswith(path.rstrip('/') + '/') for m in mounts):
            continue
        # A changed directory is reported because something in it changed; count the something.
        if kind == 'changed' and any(o.startswith(path.rstrip('/') + '/') for o in all_paths):
            continue
        significant.append('%s %s' % (kind, path))
    return significant


def env_values(container):
    """The container's environment as recorded by inspect (Config.Env), name -> value."""
    return dict(item.split('=', 1) for item in (container.raw.get('Config') or {}).get('Env') or [] if '=' in item)


def build(container, version, image_config=None, image=None, restart_sec=1, unconfined=False, specs=None,
          version_text=None):
    """(unit text, notes, source) for ``container``; ConversionProblem when it cannot be converted faithfully.

    ``specs``: (global, run) OptionSpec of the host's podman, needed to read a CreateCommand.
    """
    rootfs = None
    if container.create_command:
        if specs is None:
            raise quadlet.ConversionProblem("podman's options are not known (podman --help could not be read)")
        unit, recorded_image, rootfs, command = quadlet.from_create_command(
            container, version, specs, env_values(container), version_text)
        source = 'CreateCommand'
    else:
        unit, recorded_image, rootfs, command = quadlet.from_inspect(container, image_config, version)
        source = 'inspect'
    if rootfs is not None and image:
        raise quadlet.ConversionProblem('--rootfs %s: the container runs from a root filesystem on the host, so its '
                                        'writable-layer changes cannot be committed to an image' % rootfs)
    _keep_anonymous_volumes(unit, container)
    text = quadlet.render(container, unit, image or recorded_image, command, restart_sec=restart_sec,
                          unconfined=unconfined, rootfs=rootfs)
    return text, unit.notes, source


def _keep_anonymous_volumes(unit, container):
    """The new container must mount the old one's anonymous volumes, or their data looks lost."""
    covered = set()
    for key, value in unit.keys:
        if key == 'Volume':
            parts = value.split(':')
            covered.add(parts[1] if len(parts) > 1 else parts[0])
    for mount in container.raw.get('Mounts') or []:
        name, dest = mount.get('Name') or '', mount.get('Destination')
        if mount.get('Type') == 'volume' and dest and dest not in covered and _ANONYMOUS.match(name):
            unit.add('Volume', '%s:%s' % (name, dest), 'multi', ['--volume', '%s:%s' % (name, dest)])
            unit.notes.append('anonymous volume %s at %s is mounted by name, so its data stays with the container'
                              % (name[:12], dest))


class ConversionFailed(fix_protocol.FixFailed):
    pass


# Steps of one conversion, in order; check mode lists them, the swap runs them.
def planned_steps(name, unit_path, service, aside, image, running):
    steps = ['podman commit %s %s' % (name, image)] if image else []
    steps += ['write %s' % unit_path, 'systemctl daemon-reload']
    if running:
        steps.append('podman stop %s' % name)
    steps += ['podman rename %s %s' % (name, aside), 'systemctl start %s' % service,
              'check %s is active and container %s runs' % (service, name), 'podman rm %s (volumes kept)' % aside]
    return steps


class Options(object):
    """What to convert and how (the podman_quadlet module's options, as plain values)."""

    def __init__(self, name, unit_name=None, unit_dir='/etc/containers/systemd', commit=False, replace_running=False,
                 apparmor_unconfined=False, restart_sec=1, start_timeout=90, quadlet_generator=None, backup=True):
        self.name = name
        self.unit_name = unit_name or name
        self.unit_dir = unit_dir
        self.commit = commit
        self.replace_running = replace_running
        self.apparmor_unconfined = apparmor_unconfined
        self.restart_sec = restart_sec
        self.start_timeout = start_timeout
        self.quadlet_generator = quadlet_generator
        self.backup = backup


class Conversion(fix_protocol.Fix):
    """One rootful container made into a Quadlet unit, as a fix (module_utils/fix_protocol.py): plan
    (checks, the unit, the generator's dry run), apply (commit, write the unit, swap the container for
    the service), verify (the service is active and its container runs), roll back (the old container
    back under its name), finish (remove the old container).

    ``options``: Options. ``steps`` and ``result`` say what was done and found, also after a failure;
    ``warnings`` are for the task's output.
    """

    def __init__(self, ctx, options, sleep=time.sleep, clock=time.monotonic):
        self.ctx = ctx
        self.options = options
        self.sleep = sleep
        self.clock = clock
        self.steps = []
        self.warnings = []
        self.name = options.name
        self.unit_name = options.unit_name
        self.service = '%s.service' % self.unit_name
        self.unit_path = os.path.join(options.unit_dir, '%s.container' % self.unit_name)
        self.result = {'unit_path': self.unit_path, 'service': self.service}
        self.cli = podman.PodmanCli(ctx, steps=self.steps)
        self.before = None
        self.container = None
        self.version = None
        self.version_text = None

    # The host, through the context.

    def _podman(self, args, what, check=True):
        return self.cli.execute(args, what, check)[1]

    def _podman_json(self, args, what):
        return self.cli.json(args, what)

    def _tool(self, name):
        path = self.ctx.which(name)
        if path is None:
            raise ConversionFailed('%s is not installed; the conversion needs systemd' % name)
        return path

    def _systemctl(self, args, what, check=True):
        cmd = [self._tool('systemctl')] + args
        self.steps.append(' '.join(cmd))
        rc, out, err = self.ctx.run_command(cmd)
        if check and rc != 0:
            raise ConversionFailed('%s failed (rc %d): %s' % (what, rc, podman.first_line(err) or podman.first_line(out)
                                                              or 'no output'))

    def _service_state(self):
        return hostio.systemd_show(self.ctx.run_command, self._tool('systemctl'), self.service,
                                   ['LoadState', 'ActiveState', 'FragmentPath', 'SourcePath'])

    def _read_unit(self):
        try:
            return hostio.read_text(self.unit_path)
        except hostio.ReadProblem as problem:
            if problem.kind == 'missing':
                return None
            raise ConversionFailed(str(problem))

    # The plan.

    def found(self):
        found = dict(self.result, steps=self.steps)
        found.pop('diff', None)
        return found

    def _plan(self, changed, diff=(), targets=(), **details):
        # ``result`` and ``steps`` are the ones apply adds to: the module returns them as they end up.
        self.result['steps'] = self.steps
        return fix_protocol.Plan(changed=changed, diff=diff, result=self.result, msg=self.result.get('msg', ''),
                                 warnings=self.warnings, targets=targets, **details)

    def plan(self):
        """What converting takes (listed as ``would:`` steps); nothing is changed."""
        if not self._preconditions():
            return self._plan(False)
        text, image = self._build_unit()
        diff = self.result.pop('diff')
        running = self.container.status == 'running'
        aside = '%s-pre-quadlet-%s' % (self.name, self.container.id[:12])
        self.steps.extend('would: %s' % step for step in planned_steps(self.name, self.unit_path, self.service,
                                                                       aside, image, running))
        if running and not self.options.replace_running:
            self.result['skipped_reason'] = ('%s is running; converting it restarts it. Set replace_running: true '
                                             '(podman_quadlet_replace_running) to convert it.' % self.name)
            self.warnings.append(self.result['skipped_reason'])
            return self._plan(False)
        return self._plan(True, [diff], targets=[self.unit_path], text=text, image=image, aside=aside, running=running,
                          switched=False)

    def _preconditions(self):
        """Checks before anything is planned; False when there is nothing to do."""
        if self.cli.binary is None:
            raise ConversionFailed('podman is not installed')
        if not self.ctx.is_root:
            raise ConversionFailed('converting rootful containers needs root (become: true)')
        info = self.cli.info()
        self.version = hostio.version_tuple(info['version'] or '')
        self.version_text = info['version'] or '?'
        if self.version is None or self.version < quadlet_keys.QUADLET_MIN:
            raise ConversionFailed('podman %s has no Quadlet (it needs podman 4.4 or later); convert by hand or upgrade '
                                   'podman' % info['version'])
        name, service = self.name, self.service
        self.before = self._read_unit()
        self.container = container = self.cli.container(name, record=False)
        if container is None:
            if self.before is not None:
                self.result['msg'] = 'no container %s, but %s exists: already converted' % (name, self.unit_path)
                return False
            raise ConversionFailed('no container named %s' % name)
        if container.quadlet_unit == service and self.before is not None:
            self.result['msg'] = '%s is already run by %s (%s)' % (name, service, self.unit_path)
            return False
        if container.quadlet_unit:
            raise ConversionFailed('%s is already run by systemd unit %s; it is not converted again'
                                   % (name, container.quadlet_unit))
        if container.status in ('paused', 'removing'):
            raise ConversionFailed('%s is %s; convert it when it is running or stopped' % (name, container.status))
        state = self._service_state()
        if state.get('LoadState') == 'loaded' and self.before is None:
            raise ConversionFailed('%s already exists (%s) and Quadlet did not generate it; choose another unit_name'
                                   % (service, state.get('FragmentPath') or 'unknown path'))
        return True

    def _build_unit(self):
        """The unit text (validated by the generator's dry run) and the image to commit to, if any."""
        options, container, name = self.options, self.container, self.name
        changes = layer_changes(self._podman_json(['diff', '--format', 'json', container.id], 'diff'), container)
        self.result['layer_changes'] = changes
        image = None
        if changes:
            if not options.commit:
                raise ConversionFailed('%s has %d change(s) in its writable layer (%s) that removing it would lose; set '
                                       'commit: true to commit them to an image first'
                                       % (name, len(changes), ', '.join(changes[:5])))
            image = image_name_for_commit(container)
        image_config = None
        if not container.create_command:
            image_config = self._image_config(container.raw.get('Image') or container.image)
        specs = self._option_specs() if container.create_command else None
        try:
            text, notes, source = build(container, self.version, image_config, image, restart_sec=options.restart_sec,
                                        unconfined=options.apparmor_unconfined, specs=specs,
                                        version_text=self.version_text)
        except quadlet.ConversionProblem as exc:
            raise ConversionFailed('%s cannot be converted: %s' % (name, exc))
        self.result.update(unit=text, notes=notes, source=source)
        self.result['diff'] = {'before': self.before or '', 'after': text,
                               'before_header': self.unit_path, 'after_header': self.unit_path}
        self._validate(text, specs, image)
        return text, image

    def _image_config(self, image):
        data = self._podman_json(['image', 'inspect', image], 'image inspect')
        first = data[0] if isinstance(data, list) and data else {}
        if not isinstance(first, dict):
            raise ConversionFailed('podman image inspect %s printed a list of %s, not of objects' % (image, type(first).__name__))
        return first.get('Config') or {}

    def _option_specs(self):
        """The host podman's global and run options, from its own --help."""
        def read_help(args):
            return self._podman(args + ['--help'], 'podman %s--help' % ''.join(a + ' ' for a in args))
        try:
            return podman_options.specs_for(self.version_text, read_help)
        except podman_options.OptionError as exc:
            raise ConversionFailed("podman's options could not be read from podman --help: %s" % exc)

    def _validate(self, text, specs, image):
        """The generator's dry run, and the command it makes compared with the CreateCommand."""
        container, name = self.container, self.name
        generator = self.options.quadlet_generator or quadlet.find_generator(self.ctx.which)
        if generator is None:
            raise ConversionFailed('no Quadlet generator found (/usr/libexec/podman/quadlet); set quadlet_generator')
        self.steps.append('%s -dryrun (unit in a temporary directory)' % generator)
        ok, generated, messages = quadlet.dry_run(generator, '%s.container' % self.unit_name, text,
                                                  runner=self.ctx.runner)
        exec_start = [line for line in generated.splitlines() if line.startswith('ExecStart=')]
        self.result['generated_exec_start'] = exec_start[0] if exec_start else ''
        if not ok:
            raise ConversionFailed('the Quadlet generator rejected the unit for %s: %s'
                                   % (name, messages or 'no service generated'))
        if specs is not None:
            differences = quadlet_check.compare(container.create_command, quadlet_check.exec_argv(exec_start[0]), specs,
                                                env_values=env_values(container), container=container, image=image,
                                                version_text=self.version_text)
            self.result['conformance'] = differences
            if differences:
                raise ConversionFailed('the unit for %s would not run the same container: %s; nothing was changed'
                                       % (name, '; '.join(differences)))

    # Apply, verify, roll back.

    def apply(self, plan, write):
        """Commit, write the unit, and replace the container by the service; roll back on failure."""
        name, details = self.name, plan.details
        # What was planned is now being done: the steps list what is run from here on.
        self.steps[:] = [step for step in self.steps if not step.startswith('would: ')]
        if details['image']:
            self._podman(['commit', '--quiet', name, details['image']], 'podman commit')
            self.result['committed_image'] = details['image']
        backups = write([(self.unit_path, self.before, details['text'])], self.options.backup)
        if backups:
            self.result['backup_file'] = backups[0]
        self.steps.append('wrote %s' % self.unit_path)
        try:
            self._systemctl(['daemon-reload'], 'systemctl daemon-reload')
            if details['running']:
                self._podman(['stop', name], 'podman stop')
            self._podman(['rename', name, details['aside']], 'podman rename')
            details['switched'] = True
            self._systemctl(['start', self.service], 'systemctl start %s' % self.service)
        except HostInputError as exc:
            left = self.roll_back(plan, write)
            what_now = ('could NOT be put back: %s' % '; '.join(left)) if left else 'everything was put back as it was'
            raise ConversionFailed('%s; %s%s' % (exc, what_now, self._journal()), rolled_back=not left)
        return backups

    def verify(self, plan):
        try:
            self._wait_running()
        except ConversionFailed as exc:
            return ['%s%s' % (exc, self._journal())]
        return []

    def finish(self, plan):
        self._podman(['rm', plan.details['aside']], 'podman rm of the old container')

    def _wait_running(self):
        """Until the service is active and its container runs, or start_timeout passes. A failed
        question (a busy podman, systemd) is asked again; its reason is kept for the message."""
        timeout = self.options.start_timeout
        deadline = self.clock() + timeout
        last = ''
        while self.clock() < deadline:
            try:
                active = self._service_state().get('ActiveState')
            except hostio.ReadProblem as problem:
                active = 'unknown (%s)' % problem.reason
            try:
                container = self.cli.container(self.name, record=False)
                status = container.status if container else 'absent'
            except podman.PodmanProblem as exc:
                container, status = None, 'unknown (%s)' % exc
            last = 'service %s, container %s' % (active, status)
            if active == 'active' and container is not None and container.status == 'running':
                self.steps.append('%s is active and %s runs' % (self.service, self.name))
                return
            if active == 'failed':
                break
            self.sleep(1)
        raise ConversionFailed('%s did not come up within %d s (%s)' % (self.service, timeout, last))

    def roll_back(self, plan, write):
        details, left = plan.details, []
        self._systemctl(['stop', self.service], 'systemctl stop', check=False)
        try:  # a unit file that cannot be put back is named; the rest of the roll back still runs
            if self.before is None:
                if os.path.exists(self.unit_path):
                    os.unlink(self.unit_path)
            else:
                write([(self.unit_path, None, self.before)], False)
        except (OSError, HostInputError) as exc:
            left.append('%s (%s)' % (self.unit_path, getattr(exc, 'strerror', None) or exc))
        self._systemctl(['daemon-reload'], 'systemctl daemon-reload', check=False)
        if details['switched']:
            self._podman(['rm', '--force', '--ignore', self.name], 'podman rm of the failed new container', check=False)
            self._podman(['rename', details['aside'], self.name], 'podman rename back', check=False)
            if details['running']:
                self._podman(['start', self.name], 'podman start', check=False)
        return left

    def _journal(self):
        lines, _why = hostio.read_journal(self.ctx.run_command, self.ctx.which('journalctl'), self.service, 8)
        lines = [line for line in lines or [] if line.strip()]
        return ('. Last journal lines of %s: %s' % (self.service, ' | '.join(lines[-8:]))) if lines else ''
