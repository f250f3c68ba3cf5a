"""A test fleet of real hosts reached over real SSH: podman containers from the locally built
Debian 12 image with sshd (scripts/setup-podman.sh), on a podman network of their own, each with
its own filesystem and sshd, and keys generated here.

States, so an audit has something to tell apart:
- fleet-01 .. fleet-03: a Raspberry Pi config.txt that still loads pwm-ir-tx (pi_ir_tx at_risk on
  this 6.18 kernel) and a llama-server stand-in serving a LoRA adapter with the RAM cache on
  (llama_lora_cache at_risk): hit by two detections;
- fleet-04: a llama-server stand-in with sleep mode on and no supervisor (llama_sleep_race);
- the rest clean; fleet-11 has no Python (the audit cannot run there); fleet-12 is in the inventory
  but its container is never started (unreachable). up(N) makes N hosts the same way: the
  next-to-last without Python, the last unreachable (the benchmark uses 14: 12 that can be audited).

    python ssh_fleet.py up [N] | down | inventory
"""
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(REPO_ROOT, 'build')
STATE = os.path.join(BUILD, 'ssh-fleet')
NETWORK = 'pm-ssh-fleet'
SIZE = 12
ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf'))
# The Pis' config.txt as the fleet starts: the transmitter on pwm-ir-tx.
PI_CONFIG = '[all]\ndtoverlay=pwm-ir-tx,gpio_pin=17\n'
WRITE_PI_CONFIG = 'mkdir -p /boot/firmware && printf %%s %s > /boot/firmware/config.txt' % shlex.quote(PI_CONFIG)
# A stand-in process with llama-server's name and command line (the detections read /proc).
STANDIN = "(exec -a llama-server python3 -c 'import time; time.sleep(10**9)' %s &)"


def podman(*args, check=True, timeout=120):
    return subprocess.run(['podman'] + list(args), env=ENV, capture_output=True, text=True, check=check,
                          timeout=timeout)


def image():
    with open(os.path.join(BUILD, 'podman.env')) as handle:
        values = dict(line.strip().split('=', 1) for line in handle if '=' in line)
    return values['POSTMORTEM_SSHD_IMAGE']


def name(index):
    return 'fleet-%02d' % index


def setup_script(index, size=SIZE):
    lines = ['set -e', 'mkdir -p /run/sshd /root/.ssh', 'ssh-keygen -A >/dev/null',
             'cp /keys/id.pub /root/.ssh/authorized_keys', 'chmod 600 /root/.ssh/authorized_keys']
    if index <= 3:
        lines += [WRITE_PI_CONFIG, STANDIN % '-m /models/base.gguf --lora /models/persona.gguf --port 8080']
    if index == 4:
        lines += [STANDIN % '-m /models/base.gguf --sleep-idle-seconds 300 --port 8080']
    if index == size - 1:
        lines += ['rm -f /usr/bin/python3*']
    lines += ['exec /usr/sbin/sshd -D -e']
    return '\n'.join(lines)


def up(size=SIZE):
    os.makedirs(STATE, exist_ok=True)
    key = os.path.join(STATE, 'id')
    if not os.path.exists(key):
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', key], check=True)
    if podman('network', 'exists', NETWORK, check=False).returncode != 0:
        podman('network', 'create', NETWORK)
    hosts = {}
    for index in range(1, size + 1):
        host = name(index)
        podman('rm', '-f', host, check=False)
        if index == size:
            hosts[host] = {'ansible_host': '10.255.255.1', 'ansible_port': 22}  # never started: unreachable
            continue
        podman('run', '-d', '--name', host, '--hostname', host, '--network', NETWORK,
               '-v', '%s:/keys:ro' % STATE, image(), '/bin/bash', '-c', setup_script(index, size))
        address = podman('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', host).stdout.strip()
        hosts[host] = {'ansible_host': address}
    for host, variables in hosts.items():
        if host == name(size):
            continue
        deadline = time.time() + 60
        while time.time() < deadline:
            probe = subprocess.run(['ssh', '-i', key, '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                                    '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=3', 'root@%s' % variables['ansible_host'],
                                    'true'], capture_output=True, timeout=20, check=False)
            if probe.returncode == 0:
                break
            time.sleep(0.5)
        else:
            raise RuntimeError('%s did not answer ssh: %s' % (host, probe.stderr.decode(errors='replace')))
    inventory = {'all': {'hosts': hosts, 'vars': {
        'ansible_user': 'root', 'ansible_ssh_private_key_file': key,
        'ansible_ssh_common_args': '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
        'ansible_python_interpreter': '/usr/bin/python3', 'ansible_ssh_timeout': 5}}}
    with open(os.path.join(STATE, 'inventory.json'), 'w') as handle:
        json.dump(inventory, handle, indent=2)
    return inventory


def down(size=SIZE + 8):
    # Removes what a larger fleet (the benchmark's) left as well.
    for index in range(1, size + 1):
        podman('rm', '-f', '-t', '0', name(index), check=False)
    podman('network', 'rm', '-f', NETWORK, check=False)


if __name__ == '__main__':
    command = sys.argv[1] if len(sys.argv) > 1 else 'inventory'
    if command == 'up':
        print(json.dumps(up(int(sys.argv[2]) if len(sys.argv) > 2 else SIZE), indent=2))
    elif command == 'down':
        down()
    else:
        with open(os.path.join(STATE, 'inventory.json')) as handle:
            print(handle.read())
