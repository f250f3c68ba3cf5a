"""A host whose tools hang: real ansible-playbook runs with a real ``podman`` that never answers.

The stand-in ``podman`` is a shell script that sleeps (what a podman waiting on
a storage lock looks like from outside); everything else is the real audit.
"""
import os
import signal
import time

import pytest

from helpers import local_host, run_audit

pytestmark = pytest.mark.needs_root('podman_restart_userns needs root to run its commands at all')


@pytest.fixture
def hanging_tools(tmp_path):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    podman = bindir / 'podman'
    # The grandchild would keep the pipes open if only the script were killed.
    podman.write_text('#!/bin/sh\necho $$ >> %s/pids\nsleep 600 &\nwait\n' % bindir)
    podman.chmod(0o755)
    yield {'PATH': '%s:%s' % (bindir, os.environ['PATH'])}
    # Ansible's task timeout abandons the module process, which goes on to its next command:
    # stop the module (the stand-in's parent) first, then each stand-in's process group.
    pids = bindir / 'pids'
    for pid in (pids.read_text().split() if pids.exists() else []):
        try:
            with open('/proc/%s/stat' % pid) as handle:
                os.kill(int(handle.read().rsplit(')', 1)[1].split()[1]), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass
        try:
            os.killpg(int(pid), signal.SIGKILL)
        except OSError:
            pass


def test_a_hanging_podman_gives_unknown_within_the_limit_and_the_rest_still_runs(tmp_path, hanging_tools):
    started = time.monotonic()
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_command_timeout': 2, 'postmortem_checks': ['podman', 'pi']},
                    env=hanging_tools)
    elapsed = time.monotonic() - started
    assert run.proc.returncode == 0, run.output
    for check in ('podman_restart_userns', 'podman_export_idmap'):
        finding = run.finding('localhost', check)
        assert finding['status'] == 'unknown', finding
        assert finding['summary'].startswith('podman info')
        assert 'did not finish within 2 s (command_timeout)' in finding['summary']
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'
    # Two detections, one 2 s command each, plus ansible's own start-up.
    assert elapsed < 60, elapsed
    assert run.host('localhost')['run']['command_timeout'] == 2


def test_the_task_timeout_is_the_last_guard(tmp_path, hanging_tools):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_command_timeout': 300, 'postmortem_task_timeout': 4, 'postmortem_checks': ['podman']},
                    env=hanging_tools)
    host = run.host('localhost')
    assert host['state'] == 'failed'
    assert 'timed out' in host['reason'].lower() or 'timeout' in host['reason'].lower(), host['reason']
