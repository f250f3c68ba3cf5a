# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way host-side code runs a command: bounded in time and in output.

Our failure class is the wedged host: a ``podman ps`` waiting on a storage
lock, a ``systemctl`` talking to a stuck systemd. Every command therefore has a
timeout (``command_timeout``), every detection a time budget
(``detection_timeout``) that its commands share, and a command's output is read
incrementally up to a bound. A command runs in its own process group, and the
whole group is killed when it times out, so a shell pipeline or a ``runuser``
cannot leave its children behind. Failures are HostInputErrors: the detection
that ran the command gets a finding that names the command and the limit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import select
import signal
import subprocess
import time

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import CommandFailed, CommandTimeout, HostInputError

DEFAULT_COMMAND_TIMEOUT = 30
DEFAULT_DETECTION_TIMEOUT = 300
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
# The environment every command gets on top of the module's: stable, unpaged, untranslated output.
COMMAND_ENV = {'LC_ALL': 'C', 'LANG': 'C', 'SYSTEMD_PAGER': '', 'PAGER': 'cat',
               'PODMAN_IGNORE_CGROUPSV1_WARNING': '1'}


class OutputTooLarge(HostInputError):
    pass


def decode(data):
    """A tool's message as text that is always valid UTF-8: undecodable bytes shown as \\xNN."""
    return data.decode('utf-8', 'backslashreplace')


def decode_data(data):
    """A tool's output for a parser: undecodable bytes become U+FFFD, so JSON stays JSON."""
    return data.decode('utf-8', 'replace')


def describe(cmd):
    """A command for a message: the program's base name and the first arguments."""
    words = [os.path.basename(str(cmd[0]))] + [str(w) for w in cmd[1:4]]
    text = ' '.join(words)
    return text + (' ...' if len(cmd) > 4 else '')


PR_SET_CHILD_SUBREAPER = 36
# How long reap_descendants goes on killing what a command left (each round re-reads /proc: a daemon's
# own children reparent to us only once it is dead).
REAP_ROUNDS = 20


def set_subreaper(on):
    """Make this process the reaper of whatever its commands orphan, or stop being it (Linux's
    PR_SET_CHILD_SUBREAPER): a child that daemonized (a new session, out of reach of killpg) is then ours
    to find and kill. True when the call held."""
    try:
        import ctypes  # only here: most runs never ask a command of the operator's
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0, 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def children():
    """The pids whose parent is this process, read from /proc (stat's fourth field)."""
    mine, found = os.getpid(), []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name, 'rb') as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        fields = stat[stat.rfind(b')') + 2:].split()
        if len(fields) > 1 and int(fields[1]) == mine:
            found.append(int(name))
    return found


def reap_descendants(keep=()):
    """Kill and reap every child of this process but those in ``keep`` (the children it had before the
    command): what the command left reparented to us as subreaper, and the daemon's own children after it,
    once it is dead. Returns how many were killed."""
    killed, keep = 0, set(keep)
    for _round in range(REAP_ROUNDS):
        pids = [pid for pid in children() if pid not in keep]
        if not pids:
            break
        for pid in pids:
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
            try:
                os.waitpid(pid, os.WNOHANG)  # never blocks: a process stuck in the kernel is reaped by init later
            except OSError:
                pass
            killed += 1
        time.sleep(0.02)
    return killed


def kill_group(proc):
    """Kill ``proc`` and everything it started (it leads its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        try:
            proc.kill()
        except OSError:
            pass


class CommandRunner(object):
    """Runs commands for one module run.

    ``timeout``: seconds one command may take. ``budget()`` opens a time budget
    that every command inside it shares (the registry opens one per detection).
    """

    def __init__(self, timeout=DEFAULT_COMMAND_TIMEOUT, max_output=MAX_OUTPUT_BYTES, env_update=None):
        self.timeout = timeout
        self.max_output = max_output
        self.env = dict(os.environ)
        self.env.update(COMMAND_ENV)
        self.env.update(env_update or {})
        self._deadline = None
        self._budget_seconds = None

    def budget(self, seconds):
        return _Budget(self, seconds)

    def limit(self, timeout=None):
        """(seconds this command may take, what limits it) under the command limit and the budget."""
        seconds = self.timeout if timeout is None else min(timeout, self.timeout)
        why = '%s s (command_timeout)' % _num(seconds)
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                return 0, 'the detection time budget of %s s (detection_timeout)' % _num(self._budget_seconds)
            if left < seconds:
                seconds = left
                why = 'the detection time budget of %s s (detection_timeout)' % _num(self._budget_seconds)
        return seconds, why

    def spawn(self, cmd, env=None, stdin=None):
        """Start ``cmd`` in its own process group with pipes for stdout and stderr."""
        full_env = dict(self.env)
        full_env.update(env or {})
        try:
            # Not AnsibleModule.run_command (ansible-test 2.21's ansible-bad-function): it takes no time limit, starts
            # no process group of its own (a timeout must kill the whole tree) and does not cap what it reads.
            return subprocess.Popen([str(c) for c in cmd], stdin=stdin if stdin is not None else subprocess.DEVNULL,  # pylint: disable=ansible-bad-function
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                                    close_fds=True, start_new_session=True)
        except OSError as exc:
            if exc.errno == errno.E2BIG:
                raise CommandFailed('cannot run %s: its argument list is too long (%d arguments)' % (describe(cmd), len(cmd)))
            raise CommandFailed('cannot run %s: %s' % (describe(cmd), exc.strerror or exc))

    def run_contained(self, cmd, timeout=None, env=None, max_output=None):
        """run(), for a command of the operator's (a declared check's): whatever it leaves running when it ends
        or is killed, a daemon in a session of its own included, is killed too, as docs/declared_checks.md says
        (#49). This process is subreaper for the command's time only, and only what the command left is
        killed (children it had before are kept). Not for our own tools: rootless podman keeps a pause process
        on purpose."""
        before = children()
        held = set_subreaper(True)
        try:
            return self.run(cmd, timeout=timeout, env=env, max_output=max_output)
        finally:
            if held:
                reap_descendants(before)
                set_subreaper(False)

    def run(self, cmd, timeout=None, env=None, max_output=None):
        """(rc, stdout, stderr) as text (see decode_data and decode). Raises CommandTimeout,
        CommandFailed, OutputTooLarge (more than ``max_output`` bytes, default the runner's, on either pipe)."""
        return self._run(cmd, timeout, env, max_output)

    def _run(self, cmd, timeout, env, max_output):
        max_output = self.max_output if max_output is None else min(max_output, self.max_output)
        seconds, why = self.limit(timeout)
        if seconds <= 0:
            raise CommandTimeout('%s was not run: %s is used up' % (describe(cmd), why))
        proc = self.spawn(cmd, env)
        out, err = [], []
        sizes = {proc.stdout: 0, proc.stderr: 0}
        sinks = {proc.stdout: out, proc.stderr: err}
        open_pipes = [proc.stdout, proc.stderr]
        deadline = time.monotonic() + seconds
        try:
            while open_pipes:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CommandTimeout('%s did not finish within %s' % (describe(cmd), why))
                ready, _w, _x = select.select(open_pipes, [], [], left)
                for pipe in ready:
                    chunk = os.read(pipe.fileno(), 65536)
                    if not chunk:
                        open_pipes.remove(pipe)
                        continue
                    sizes[pipe] += len(chunk)
                    if sizes[pipe] > max_output:
                        raise OutputTooLarge('%s printed more than %s; stopped reading it' % (describe(cmd), _size(max_output)))
                    sinks[pipe].append(chunk)
            rc = _wait(proc, deadline)
            if rc is None:
                raise CommandTimeout('%s did not finish within %s' % (describe(cmd), why))
        except BaseException:
            kill_group(proc)
            proc.wait()
            raise
        finally:
            proc.stdout.close()
            proc.stderr.close()
        return rc, decode_data(b''.join(out)), decode(b''.join(err))


class _Budget(object):
    def __init__(self, runner, seconds):
        self.runner = runner
        self.seconds = seconds

    def __enter__(self):
        self.saved = (self.runner._deadline, self.runner._budget_seconds)
        self.runner._deadline = time.monotonic() + self.seconds
        self.runner._budget_seconds = self.seconds
        return self

    def __exit__(self, *exc):
        self.runner._deadline, self.runner._budget_seconds = self.saved
        return False


def _wait(proc, deadline):
    """The exit code, or None when the process outlives the deadline with its pipes closed."""
    while True:
        rc = proc.poll()
        if rc is not None:
            return rc
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _size(count):
    """A byte count for a message: 32 MiB, 64 KiB, 100 bytes."""
    for unit, name in ((1024 * 1024, 'MiB'), (1024, 'KiB')):
        if count >= unit and count % unit == 0:
            return '%d %s' % (count // unit, name)
    return '%d bytes' % count


def _num(seconds):
    return ('%d' % seconds) if float(seconds).is_integer() else ('%.1f' % seconds)
