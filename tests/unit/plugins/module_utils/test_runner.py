"""The command runner, with real commands: timeouts, budgets, output bounds, exec failures."""
import os
import sys
import time

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import CommandFailed, CommandTimeout
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner, OutputTooLarge


def test_output_exit_code_and_environment():
    rc, out, err = CommandRunner().run(['sh', '-c', 'echo "$LC_ALL"; echo oops >&2; exit 3'])
    assert (rc, out, err) == (3, 'C\n', 'oops\n')


def test_undecodable_bytes_never_come_back_as_surrogates():
    script = 'import sys; sys.stdout.buffer.write(b"a\\xffb"); sys.stderr.buffer.write(b"c\\xfed")'
    rc, out, err = CommandRunner().run([sys.executable, '-c', script])
    assert out == 'a\ufffdb'  # data for a parser: replaced, so JSON stays JSON
    assert err == 'c\\xfed'  # a message for a person: the byte stays visible
    out.encode('utf-8')  # strict: a lone surrogate would raise here
    err.encode('utf-8')


def test_a_hanging_command_is_killed_with_its_children_at_the_timeout(tmp_path):
    marker = tmp_path / 'child.pid'
    runner = CommandRunner(timeout=1)
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as caught:
        # The shell starts a child that would outlive a plain kill of the shell.
        runner.run(['sh', '-c', 'sleep 60 & echo $! > %s; wait' % marker])
    assert time.monotonic() - started < 5
    assert 'did not finish within 1 s (command_timeout)' in str(caught.value)
    assert caught.value.finding_status == 'unknown'
    child = int(marker.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail('the child of the timed-out command still runs')


def test_a_detection_budget_is_shared_by_its_commands():
    runner = CommandRunner(timeout=30)
    with runner.budget(1.5):
        runner.run(['sleep', '1'])
        with pytest.raises(CommandTimeout, match='detection time budget of 1.5 s'):
            runner.run(['sleep', '5'])
        time.sleep(0.6)
        with pytest.raises(CommandTimeout, match='was not run'):
            runner.run(['true'])
    # Outside the budget the command limit applies again.
    assert runner.run(['true'])[0] == 0


def test_output_is_bounded():
    runner = CommandRunner(max_output=1024 * 1024)
    with pytest.raises(OutputTooLarge, match='printed more than 1 MiB'):
        runner.run(['sh', '-c', 'yes x | head -c 5000000'])


@pytest.mark.parametrize('make', ['missing', 'not_executable_format'])
def test_commands_that_cannot_run_are_command_failures(tmp_path, make):
    path = tmp_path / 'tool'
    if make == 'not_executable_format':
        path.write_bytes(b'\x7fELF garbage')
        path.chmod(0o755)
    with pytest.raises(CommandFailed, match='cannot run tool'):
        CommandRunner().run([str(path), 'ps'])


def test_an_argument_list_too_long_is_a_command_failure():
    with pytest.raises(CommandFailed, match='argument list is too long'):
        CommandRunner().run(['true'] + ['x' * 1000] * 5000)


class _TwoCommands:
    ID = 'two_commands'
    GROUP = 'podman'
    TITLE = 'Runs a command that hangs'
    REFERENCES = ['x']
    REMEDIATION = {}
    PROBES = ()
    SETTINGS = {}
    APPLIES = {'image': False, 'binary': None, 'root': None}

    @staticmethod
    def detect(ctx):
        ctx.run_command(['sleep', '30'])
        raise AssertionError('not reached')


def test_a_hanging_command_makes_its_detection_unknown_and_names_the_command():
    ctx = AuditContext(runner=CommandRunner(timeout=1))
    started = time.monotonic()
    finding = registry.run_one(ctx, _TwoCommands)
    assert time.monotonic() - started < 5
    assert finding['status'] == 'unknown'
    assert finding['summary'] == 'sleep 30 did not finish within 1 s (command_timeout)'
