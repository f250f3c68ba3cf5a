"""A host whose tools hang: real ansible-playbook runs with a real ``podman`` that never answers.

The stand-in ``podman`` is a shell script that sleeps (what a podman waiting on
a storage lock looks like from outside); everything else is the real audit. A
command that timed out is not run again in the same run: a hung podman costs the
run one command_timeout, whichever podman detections ask it.
"""
import os
import signal
import time

import pytest

from helpers import local_host, run_audit

pytestmark = pytest.mark.needs_root('podman_restart_userns needs root to run its commands at all')


CONTAINER_ID = 'c0ffee' * 10 + 'beef'
# A podman that answers ps and inspect with one running container that has a restart policy, and
# whose info never returns. Its version, 4.9.3, is one whose containers.conf loading was not read
# (podman/facts.py), so the detections must ask podman info.
INFO_HANGS = """#!/bin/sh
echo $$ >> {bindir}/pids
echo "$*" >> {bindir}/calls
case "$1" in
  --version) echo "podman version 4.9.3" ;;
  ps) echo '[{{"Id": "{cid}", "Names": ["web"]}}]' ;;
  container) echo '[{{"Id": "{cid}", "Name": "web", "State": {{"Status": "running"}},
      "HostConfig": {{"RestartPolicy": {{"Name": "always", "MaximumRetryCount": 0}}}}, "Config": {{}}}}]' ;;
  *) sleep 600 & wait ;;
esac
"""


def stand_in(tmp_path, script):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    podman = bindir / 'podman'
    podman.write_text(script.format(bindir=bindir, cid=CONTAINER_ID))
    podman.chmod(0o755)
    return bindir


def calls(bindir):
    path = bindir / 'calls'
    return [line.split()[0] for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


@pytest.fixture
def hanging_tools(tmp_path):
    # The grandchild would keep the pipes open if only the script were killed.
    bindir = stand_in(tmp_path, '#!/bin/sh\necho $$ >> {bindir}/pids\necho "$*" >> {bindir}/calls\nsleep 600 &\nwait\n')
    yield {'PATH': '%s:%s' % (bindir, os.environ['PATH'])}
    stop_stand_ins(bindir)


@pytest.fixture
def info_hangs(tmp_path):
    bindir = stand_in(tmp_path, INFO_HANGS)
    yield bindir
    stop_stand_ins(bindir)


def stop_stand_ins(bindir):
    """Ansible's task timeout abandons the module process, which goes on to its next command: stop
    the module (a stand-in's parent) first, then each stand-in's process group. Only a process that
    is still one of our stand-ins (its command line names bindir) is touched: the pid of one that
    finished may belong to someone else by now."""
    pids = bindir / 'pids'
    for pid in (pids.read_text().split() if pids.exists() else []):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                if str(bindir).encode() not in handle.read():
                    continue
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
        # podman ps is the first thing asked; it is asked once for both detections.
        assert finding['summary'].startswith('podman ps')
        assert 'did not finish within 2 s (command_timeout)' in finding['summary']
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'
    assert calls(tmp_path / 'bin') == ['ps']
    assert elapsed < 60, elapsed
    assert run.host('localhost')['run']['command_timeout'] == 2


def test_a_podman_whose_info_never_returns_costs_one_command_timeout(tmp_path, info_hangs):
    """The issue's case: both podman detections need podman info, which hangs. Before, each waited
    its own command_timeout (61 s at the default 30 s); now the second is told at once."""
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_command_timeout': 3, 'postmortem_checks': ['podman']},
                    env={'PATH': '%s:%s' % (info_hangs, os.environ['PATH'])})
    assert run.proc.returncode == 0, run.output
    summaries = []
    for check in ('podman_restart_userns', 'podman_export_idmap'):
        finding = run.finding('localhost', check)
        assert finding['status'] == 'unknown', finding
        assert finding['summary'].startswith('podman info'), finding['summary']
        assert 'did not finish within 3 s (command_timeout)' in finding['summary']
        summaries.append(finding['summary'])
    assert sum('not run again' in s for s in summaries) == 1, summaries
    assert calls(info_hangs).count('info') == 1, calls(info_hangs)
    durations = run.host('localhost')['run']['duration_ms']
    spent = sorted(durations[check] for check in ('podman_restart_userns', 'podman_export_idmap'))
    assert spent[1] >= 3000 and spent[0] < 1000, durations


def test_the_task_timeout_is_the_last_guard(tmp_path, hanging_tools):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_command_timeout': 300, 'postmortem_task_timeout': 4, 'postmortem_checks': ['podman']},
                    env=hanging_tools)
    host = run.host('localhost')
    assert host['state'] == 'failed'
    assert 'timed out' in host['reason'].lower() or 'timeout' in host['reason'].lower(), host['reason']
