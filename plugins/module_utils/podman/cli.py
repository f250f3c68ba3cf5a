# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the podman detections need to know about podman: its host, its containers, their events.

Everything goes through the podman CLI with JSON output (no API socket is
assumed). Another user's rootless podman is run through ``runuser -u USER``,
which needs root. Every failure is a PodmanProblem with one line for a person.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import bounded_json, hostio, json_fields
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import CommandTimeout, HostInputError

# Restart policy names podman accepts; '' and 'no'/'never' mean none.
RESTARTING_POLICIES = ('always', 'unless-stopped', 'on-failure')
STOPPED_STATES = ('exited', 'stopped')

# State.StoppedByUser came with v4.7.0-rc1 (containers/podman commit 589867d716, "podman: don't restart after
# kill"), tagged `json:"StoppedByUser,omitempty"` from the start: podman leaves it out when it is false.
# libpod/define/container_inspect.go line per release: 231 (v4.7.0-v4.9.5), 280 (v5.0.0-v5.0.3),
# 306 (v5.1.0-v5.2.5), 321 (v5.3.0-v5.8.2); filled from the container's state (libpod/container_inspect.go
# l.143 at v4.7.x, l.146 from v4.8.0, l.145 at v5.5.x). Before v4.7.0 there is no such field.
STOPPED_BY_USER_FROM = (4, 7, 0)
STOPPED_BY_USER_TAG = ('libpod/define/container_inspect.go: StoppedByUser bool `json:"StoppedByUser,omitempty"`, '
                       'since v4.7.0')
# Containers per ``podman container inspect``: far below any argument-list limit.
INSPECT_BATCH = 200
FACTS = ('version', 'rootless', 'apparmor_enabled', 'event_logger')
INFO_SOURCE = 'podman info --format json'


class PodmanProblem(HostInputError):
    pass


class _CommandFailed(Exception):
    """podman exited non-zero (for a container that vanished meanwhile, say); callers decide."""

    def __init__(self, rc, reason):
        Exception.__init__(self, reason)
        self.rc = rc


def first_line(text):
    """podman's reason for a failure: the first line that is not one of its logrus warnings."""
    for line in (text or '').splitlines():
        line = line.strip()
        # podman's logrus warnings (cgroup v1, shared mounts) are noise, not the reason.
        if line and 'level=warning' not in line:
            return line[:300]
    return ''


class PodmanCli(object):
    """podman for one user: None is the user the module runs as."""

    def __init__(self, ctx, user=None, steps=None):
        self.ctx = ctx
        self.user = user
        # Remediation modules pass a list: every command run is recorded for the task's result.
        self.steps = steps
        self.binary = ctx.which('podman')
        self._info = None
        self._facts = None
        self._containers = None
        # Commands that did not finish within their limit, and how that was said: asked again in the
        # same run (the other podman detection), they fail at once. A podman waiting on a lock
        # costs one command_timeout per run, not one per detection.
        self._timed_out = {}

    @property
    def label(self):
        return self.user or self.ctx.user_name

    def command(self, args):
        if self.binary is None:
            raise PodmanProblem('podman is not installed')
        cmd = [self.binary] + list(args)
        if self.user is None:
            return cmd
        runuser = self.ctx.which('runuser')
        if runuser is None:
            raise PodmanProblem('runuser is not installed; cannot run podman as %s' % self.user)
        return [runuser, '-u', self.user, '--'] + cmd

    def stream_command(self, args):
        """A command whose stdout is read as a stream.

        podman export opens /dev/stdout by path; a pipe created by root cannot be
        opened that way by another user, so that user's shell makes the pipe.
        """
        cmd = self.command(args)
        if self.user is None:
            return cmd
        split = cmd.index('--') + 1
        return cmd[:split] + ['sh', '-c', '"$@" | cat', 'sh'] + cmd[split:]

    def execute(self, args, what, check=True, record=True):
        """(rc, stdout, stderr) of podman ``args``; with ``check`` a failure is a PodmanProblem
        that says ``what`` failed, as whom, and podman's own reason. ``record``: False for a
        question asked again and again (a wait), which would flood the steps."""
        cmd = self.command(args)
        if record and self.steps is not None:
            self.steps.append(' '.join(cmd))
        key = tuple(cmd)
        if key in self._timed_out:
            raise CommandTimeout('%s; not run again' % self._timed_out[key])
        # A used-up detection budget stops a command before it starts (runner.limit): not a hang.
        limit = getattr(self.ctx.runner, 'limit', None)
        ran = limit is None or limit()[0] > 0
        try:
            rc, out, err = self.ctx.run_command(cmd)
        except CommandTimeout as exc:
            # Only a command that ran out of its time, not one the used-up budget kept from starting.
            if ran:
                self._timed_out[key] = str(exc)
            raise
        if check and rc != 0:
            raise PodmanProblem('%s as %s failed (rc %s): %s'
                                % (what, self.label, rc, first_line(err) or first_line(out) or 'no output'))
        return rc, out, err

    def run(self, args, what):
        return self.execute(args, 'podman %s' % what)[1]

    def json(self, args, what):
        out = self.run(args, what)
        return self._parse(out, 'podman %s' % what)

    def _parse(self, out, what):
        # podman's output is input we do not control: parsed within bounded_json's size and depth.
        if not (out or '').strip():
            return None
        try:
            return bounded_json.loads(out, '%s as %s' % (what, self.label))
        except bounded_json.JsonInputError as exc:
            if exc.kind == 'syntax':
                raise PodmanProblem('%s as %s did not print JSON: %s' % (what, self.label, exc.detail))
            raise PodmanProblem(str(exc))

    def info(self):
        if self._info is None:
            data = self.json(['info', '--format', 'json'], 'info')
            if not isinstance(data, dict):
                raise PodmanProblem('podman info as %s printed %s, not an object' % (self.label, type(data).__name__))
            where = 'info as %s' % self.label
            host = _typed(data, 'host', 'object', where) or {}
            security = _typed(host, 'security', 'object', where) or {}
            version = _typed(_typed(data, 'version', 'object', where) or {}, 'Version', 'string', where)
            self._info = {
                'version': version,
                'rootless': bool(_typed(security, 'rootless', 'boolean', where)),
                'apparmor_enabled': _typed(security, 'apparmorEnabled', 'boolean', where),
                'event_logger': _typed(host, 'eventLogger', 'string', where),
            }
        return self._info

    def facts(self):
        """version, rootless, apparmor_enabled and event_logger of this podman, and ``sources``: where
        each came from. podman --version and files where they are certain (facts.py), else podman info."""
        if self._facts is None:
            # Imported here: only a podman with containers to judge needs it.
            from ansible_collections.homelab.postmortem.plugins.module_utils.podman import facts as podman_facts
            rc, out, err = self.execute(['--version'], 'podman --version', check=False)
            try:
                if rc != 0:
                    raise podman_facts.Uncertain('podman --version failed (rc %s): %s'
                                                 % (rc, first_line(err) or first_line(out) or 'no output'))
                found = podman_facts.cheap(self.ctx, self, out)
            except (podman_facts.Uncertain, hostio.ReadProblem) as exc:
                found = dict(self.info())
                found['sources'] = dict((name, INFO_SOURCE) for name in FACTS)
                found['sources']['why_podman_info'] = str(exc)
            self._facts = found
        return self._facts

    def containers(self):
        """Every container of this user, as parsed Container objects (read once per PodmanCli)."""
        if self._containers is None:
            self._containers = self._read_containers()
        return self._containers

    def _read_containers(self):
        listed = self.json(['ps', '--all', '--format', 'json'], 'ps')
        if not isinstance(listed, list):
            raise PodmanProblem('podman ps as %s printed %s, not a list' % (self.label, type(listed).__name__))
        ids = [c.get('Id') or c.get('ID') for c in listed if isinstance(c, dict)]
        ids = [i for i in ids if i]
        if not ids:
            return []
        found = []
        for start in range(0, len(ids), INSPECT_BATCH):
            batch = ids[start:start + INSPECT_BATCH]
            try:
                found.extend(self._inspect(batch))
            except _CommandFailed:
                # A container removed between ps and inspect fails the whole batch: one by one then.
                for cid in batch:
                    try:
                        found.extend(self._inspect([cid]))
                    except _CommandFailed:
                        continue
        return [Container(d) for d in found]

    def container(self, name, record=True):
        """The container ``name`` or None when podman has none by that name. Any other failure (a
        locked database, a permission) is a PodmanProblem with podman's reason: it says nothing
        about whether the container exists."""
        try:
            found = self._inspect([name], record)
        except _CommandFailed as exc:
            # podman's words for a missing one: "no such container NAME" (4.3.1: "Error: inspecting
            # object: no such container NAME", cmd/podman/inspect/inspect.go:197 and
            # pkg/domain/infra/abi/containers.go:546; 5.4.2: the same text without the prefix,
            # inspect.go:189, containers.go:541).
            if 'no such container %s' % name in str(exc):
                return None
            raise PodmanProblem('podman container inspect %s as %s failed (rc %s): %s'
                                % (name, self.label, exc.rc, exc))
        return Container(found[0]) if found else None

    def _inspect(self, ids, record=True):
        rc, out, err = self.execute(['container', 'inspect'] + ids, 'podman container inspect', check=False,
                                    record=record)
        if rc != 0:
            raise _CommandFailed(rc, first_line(err) or first_line(out) or 'no output')
        data = self._parse(out, 'podman container inspect')
        if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
            raise PodmanProblem('podman container inspect as %s printed %s, not a list of objects'
                                % (self.label, _describe(data)))
        return data

    def events(self, container_id, since=None):
        """The container's events, oldest first, as (status, time) pairs."""
        args = ['events', '--stream=false', '--format', 'json', '--filter', 'container=%s' % container_id]
        if since:
            args += ['--since', since]
        out = self.run(args, 'events')
        events = []
        for line in out.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                event = bounded_json.loads(line, 'podman events')
            except bounded_json.JsonInputError:
                continue
            if isinstance(event, dict) and event.get('ID', container_id) == container_id:
                events.append((event.get('Status'), event.get('Time')))
        return events


_describe = json_fields.describe


def _typed(data, key, kind, where):
    """data[key] when it has the expected kind (None when absent or null); a PodmanProblem that
    names the field and the tool when it does not."""
    try:
        return json_fields.typed(data, key, kind)
    except json_fields.FieldError as exc:
        raise PodmanProblem('podman %s: %s' % (where, exc))


def _strings(value):
    return [v for v in (value or []) if isinstance(v, str) and v]


class Container(object):
    """The parts of ``podman container inspect`` the detections and the role use.

    Every field is type-checked where it is read: podman's output is input we do
    not control, and a wrong type must name itself instead of failing later.
    """

    def __init__(self, data):
        where = 'container inspect'
        self.raw = data
        state = _typed(data, 'State', 'object', where) or {}
        host = _typed(data, 'HostConfig', 'object', where) or {}
        config = _typed(data, 'Config', 'object', where) or {}
        self.id = _typed(data, 'Id', 'string', where) or ''
        self.name = (_typed(data, 'Name', 'string', where) or self.id[:12]).lstrip('/')
        self.status = _typed(state, 'Status', 'string', where) or 'unknown'
        exit_code = state.get('ExitCode')
        # A float (NaN, 1.5) is no exit code; keep it visible as text.
        integer = isinstance(exit_code, int) and not isinstance(exit_code, bool)
        self.exit_code = exit_code if exit_code is None or integer else str(exit_code)
        self.started_at = _typed(state, 'StartedAt', 'string', where)
        self.finished_at = _typed(state, 'FinishedAt', 'string', where)
        # None when this podman's inspect has no such field (4.x).
        self.stopped_by_user = _typed(state, 'StoppedByUser', 'boolean', where)
        policy = _typed(host, 'RestartPolicy', 'object', where) or {}
        self.restart_policy = (_typed(policy, 'Name', 'string', where) or '').strip()
        self.restart_retries = _typed(policy, 'MaximumRetryCount', 'integer', where) or 0
        self.restart_count = _typed(data, 'RestartCount', 'integer', where) or 0
        mappings = _typed(host, 'IDMappings', 'object', where) or {}
        self.uid_map = _strings(_typed(mappings, 'UidMap', 'list', where))
        self.gid_map = _strings(_typed(mappings, 'GidMap', 'list', where))
        self.userns_mode = _typed(host, 'UsernsMode', 'string', where) or ''
        self.apparmor_profile = _typed(data, 'AppArmorProfile', 'string', where) or ''
        self.create_command = _strings(_typed(config, 'CreateCommand', 'list', where))
        self.labels = _typed(config, 'Labels', 'object', where) or {}
        self.image = _typed(config, 'Image', 'string', where) or _typed(data, 'ImageName', 'string', where) or ''

    @property
    def restarts(self):
        return self.restart_policy in RESTARTING_POLICIES

    @property
    def policy_text(self):
        if self.restart_policy == 'on-failure' and self.restart_retries:
            return 'on-failure:%d' % self.restart_retries
        return self.restart_policy or 'no'

    @property
    def own_mapping(self):
        """Whether the container has a user namespace mapping of its own."""
        if self.uid_map or self.gid_map:
            return True
        mode = self.userns_mode.split(':', 1)[0]
        return mode in ('keep-id', 'auto', 'nomap')

    def mapping_shift(self):
        """('identity' | 'shifted' | 'unknown', why) of the container's own mapping.

        Inspect shows each range as "container:host:size" (libpod/container_inspect.go generateIDMappings,
        fmt.Sprintf("%d:%d:%d", ContainerID, HostID, Size), the same from v4.3 to v5.8). A mapping in which
        every range has container == host moves no ID: a rootful --userns=keep-id container gets the
        host's own mapping, 0:0:4294967295 (pkg/util/utils.go GetKeepIDMapping: /proc/self/uid_map from
        v4.5.0, unshare.GetHostIDMappings from v5.1.0; v4.3-v4.4 refuse keep-id for root)."""
        if not (self.uid_map and self.gid_map):
            return 'unknown', ('inspect shows no %s for this %s container'
                               % (' or '.join(n for n, m in (('UidMap', self.uid_map), ('GidMap', self.gid_map)) if not m),
                                  self.userns_mode or 'mapped'))
        moved = []
        for kind, ranges in (('uid', self.uid_map), ('gid', self.gid_map)):
            for text in ranges:
                parts = text.split(':')
                if len(parts) != 3 or not all(p and len(p) <= 10 and not p.strip('0123456789') for p in parts):
                    return 'unknown', 'inspect shows the %s range %r, not container:host:size' % (kind, text)
                if int(parts[0]) != int(parts[1]):
                    moved.append('%s %s' % (kind, text))
        if moved:
            return 'shifted', 'it moves IDs (%s; container:host:size)' % ', '.join(moved)
        return 'identity', 'every range maps an ID to itself (%s)' % ', '.join(self.uid_map)

    @property
    def apparmor_confined(self):
        return self.apparmor_profile not in ('', 'unconfined')

    @property
    def quadlet_unit(self):
        """The systemd unit that runs this container, when Quadlet or podman generate made it."""
        return self.labels.get('PODMAN_SYSTEMD_UNIT')

    def evidence(self):
        return {
            'name': self.name,
            'id': self.id[:12],
            'state': self.status,
            'exit_code': self.exit_code,
            'restart_policy': self.policy_text,
            'restart_count': self.restart_count,
            'uid_map': self.uid_map,
            'gid_map': self.gid_map,
            'userns_mode': self.userns_mode,
            'apparmor_profile': self.apparmor_profile or None,
            'image': self.image,
            'systemd_unit': self.quadlet_unit,
        }


def stopped_by_user(container, podman_version):
    """(True | False | None, where it came from): State.StoppedByUser read with podman's own omission rule.

    Present: its value. Absent on a podman from v4.7.0 on: false, which is what podman leaves out
    (STOPPED_BY_USER_TAG). Absent before, or with a version that does not say (a -dev build of the first
    release, no version): None, and the reason; the caller reads the events instead."""
    if container.stopped_by_user is not None:
        return container.stopped_by_user, 'podman inspect State.StoppedByUser'
    version = hostio.version_tuple(podman_version or '')
    first = '.'.join(str(p) for p in STOPPED_BY_USER_FROM)
    if version is None:
        return None, 'podman inspect has no State.StoppedByUser and the podman version is not known'
    dev_of_first = version[:3] == STOPPED_BY_USER_FROM and 'dev' in (podman_version or '')
    if version >= STOPPED_BY_USER_FROM and not dev_of_first:
        return False, ('podman inspect omits State.StoppedByUser, which podman %s does when it is false (%s)'
                       % (podman_version, STOPPED_BY_USER_TAG))
    if dev_of_first:
        return None, 'podman %s is a development build of %s, which may predate State.StoppedByUser' % (
            podman_version, first)
    return None, 'podman %s has no State.StoppedByUser (it came with v%s)' % (podman_version, first)


def apparmor_state(ctx):
    """(True/False/None, evidence text) for the host kernel's AppArmor."""
    value = hostio.read_optional_text(ctx.sys_path('module/apparmor/parameters/enabled'))
    if value is None:
        return False, 'no AppArmor in this kernel (/sys/module/apparmor absent)'
    if value.upper().startswith('Y'):
        return True, 'AppArmor enabled (/sys/module/apparmor/parameters/enabled = %s)' % value
    return False, 'AppArmor present but disabled (/sys/module/apparmor/parameters/enabled = %s)' % value


def last_exit_outcome(events):
    """What the container's last exit looked like in its events.

    Returns 'stopped_by_person' (a ``stop`` or ``kill`` event between the last
    start and the last ``died``), 'restarted' (a ``start`` after it),
    'cleanup_declined' (podman's cleanup process ran and chose not to restart:
    on podman 4.x a person's ``podman stop`` looks like this too),
    'restart_failed' (nothing after it, or a ``restart`` with no ``start``: the
    process that restarts containers never finished), or None without a ``died``.
    """
    statuses = [status for status, _time in events]
    if 'died' not in statuses:
        return None
    died = len(statuses) - 1 - statuses[::-1].index('died')
    before = statuses[:died]
    since_start = before[len(before) - before[::-1].index('start'):] if 'start' in before else before
    after = statuses[died + 1:]
    if 'start' in after:
        return 'restarted'
    if any(s in ('stop', 'kill') for s in since_start + after):
        return 'stopped_by_person'
    if 'cleanup' in after and 'restart' not in after:
        return 'cleanup_declined'
    return 'restart_failed'


def cli_for(ctx, user=None):
    """The run's PodmanCli for ``user``: both podman detections share one podman info/ps/inspect."""
    return ctx.shared(('podman', user), lambda: PodmanCli(ctx, user))


def users_to_check(ctx, extra_users):
    """[PodmanCli]: the user the module runs as, then each extra user that is not it."""
    clis = [cli_for(ctx)]
    me = clis[0].label
    for user in extra_users or []:
        user = str(user)
        if user and user != me:
            clis.append(cli_for(ctx, user))
    return clis
