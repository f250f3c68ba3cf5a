"""The README's first command block, run as a new user would on a controller with pyenv (issue 35).

The block is taken from README.md as written (the first ```sh block) and run line by line in bash, in a
copy of the checkout's files, with nothing of make's: the tarball is built and installed into a
collections path of the test's own, and the audit of localhost runs with a PATH whose python3,
python3.13 ... are pyenv-like shims that exit 127 ("pyenv: python3.13: command not found"), what
ansible-core's interpreter discovery picks on such a machine (docs/ENVIRONMENT: "Process gotcha";
discovery tries python3.13 first, ansible-core 2.19 lib/ansible/config/base.yml INTERPRETER_PYTHON_FALLBACK).
Before: the README's audit line left localhost "failed (not audited)" there.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from helpers import REPO_ROOT

# python3 itself is the machine's real one (the block makes its virtualenv with it, #44); the versioned names
# are the shims ansible-core's discovery tries first.
SHIMMED = ['python'] + ['python3.%d' % minor for minor in range(8, 15)]
SHIM = '#!/bin/sh\necho "pyenv: $(basename "$0"): command not found" >&2\nexit 127\n'


def first_block():
    with open(os.path.join(REPO_ROOT, 'README.md')) as handle:
        readme = handle.read()
    match = re.search(r'^```sh\n(.*?)^```', readme, re.M | re.S)
    assert match, 'README.md has no ```sh block'
    return match.group(1)


def checkout_copy(dest):
    """The files git knows about (tracked, or new and not ignored), as a fresh checkout has them."""
    listed = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split('\0')
    for name in listed:
        source = os.path.join(REPO_ROOT, name)
        if name and os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(source, os.path.join(dest, name))
    return dest


def pyenv_machine(tmp_path):
    """An environment like a new user's: ansible-core on PATH after broken pyenv shims, a home and a
    collections path of its own, nothing of make's or of the other tests'."""
    shims = tmp_path / 'pyenv' / 'shims'
    shims.mkdir(parents=True)
    for name in SHIMMED:
        (shims / name).write_text(SHIM)
        (shims / name).chmod(0o755)
    (shims / 'python3').symlink_to('/usr/bin/python3')  # Debian's, with venv (scripts/setup-system.sh)
    home = tmp_path / 'home'
    home.mkdir()
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(('ANSIBLE_', 'POSTMORTEM_', 'PYTHON', 'VIRTUAL_ENV', 'PIP_')) and k != 'CONTAINERS_CONF')
    # No ansible-core on PATH: the block installs its own (#44). /usr/bin and /bin for bash, tar and git.
    env.update({'HOME': str(home), 'ANSIBLE_COLLECTIONS_PATH': str(tmp_path / 'collections'), 'ANSIBLE_NOCOLOR': '1',
                'PATH': os.pathsep.join([str(shims), '/usr/local/bin', '/usr/bin', '/bin'])})
    return env


def run_block(block, cwd, env):
    script = 'set -euo pipefail\n' + block
    return subprocess.run(['bash', '-c', script], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def test_the_shims_are_what_discovery_would_pick(tmp_path):
    env = pyenv_machine(tmp_path)
    found = subprocess.run(['sh', '-c', 'command -v python3.13; python3.13 -V'], env=env, capture_output=True, text=True, check=False)
    assert found.stdout.strip().endswith('pyenv/shims/python3.13') and found.returncode == 127
    assert found.stderr.strip() == 'pyenv: python3.13: command not found'


def test_the_readme_first_block_audits_this_machine_on_a_pyenv_controller(tmp_path):
    block = first_block()
    lines = [line.split('#', 1)[0].strip() for line in block.splitlines()]
    commands = [line for line in lines if line]
    # ansible-core into a virtualenv first (a machine with only Python 3, #44), then the tarball route (Galaxy
    # only once published); localhost carries its interpreter.
    assert commands[0].startswith('python3 -m venv ') and commands[1].startswith("pip install 'ansible-core>=2.19")
    assert commands[2].startswith('ansible-galaxy collection build') and commands[3].startswith('ansible-galaxy collection install')
    audit = [c for c in commands if c.startswith('ansible-playbook homelab.postmortem.audit') and 'localhost' in c]
    assert audit and all('ansible_python_interpreter' in c for c in audit), audit
    env = pyenv_machine(tmp_path)
    checkout = checkout_copy(str(tmp_path / 'checkout'))
    assert not os.path.exists(os.path.join(checkout, 'ansible.cfg'))  # nothing but the command line sets the interpreter

    run = run_block(block, checkout, env)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-4000:]
    installed = tmp_path / 'collections' / 'ansible_collections' / 'homelab' / 'postmortem' / 'MANIFEST.json'
    assert installed.is_file(), output[-2000:]
    reports = os.path.join(checkout, 'postmortem-report')
    for name in ('postmortem.json', 'postmortem.html', 'postmortem-junit.xml'):
        assert os.path.isfile(os.path.join(reports, name)), (name, os.listdir(reports))
    with open(os.path.join(reports, 'postmortem.json')) as handle:
        report = json.load(handle)
    host = [h for h in report['hosts'] if h['name'] == 'localhost'][0]
    assert host['state'] == 'audited', host
    # The host was measured: every built-in check has a finding with a status of the model.
    assert set(host['findings']) == set(c['id'] for c in report['checks']) and len(host['findings']) >= 12
    assert all(f['status'] in report['statuses'] for f in host['findings'].values())
    assert 'pyenv' not in output

    # The control: the same line without the interpreter is what issue 35 met, localhost not audited.
    bare = re.sub(r"\s+-e\s+'ansible_python_interpreter=[^']*'", '', audit[0])
    assert bare != audit[0] and 'ansible_python_interpreter' not in bare
    control = run_block('. ~/.venvs/postmortem/bin/activate\n' + bare + ' -e postmortem_report_dir=control-report', checkout, env)
    with open(os.path.join(checkout, 'control-report', 'postmortem.json')) as handle:
        failed = [h for h in json.load(handle)['hosts'] if h['name'] == 'localhost'][0]
    assert failed['state'] == 'failed' and 'pyenv' in failed['reason'], (failed, control.stdout[-2000:])


@pytest.fixture(autouse=True)
def _no_user_collections_touched():
    """The block installs into the test's collections path, never into the user's ~/.ansible."""
    user = os.path.expanduser('~/.ansible/collections/ansible_collections/homelab/postmortem/MANIFEST.json')
    before = os.path.getmtime(user) if os.path.exists(user) else None
    yield
    assert (os.path.getmtime(user) if os.path.exists(user) else None) == before
