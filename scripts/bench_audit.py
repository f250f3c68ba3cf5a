"""make bench: what the one-round-trip audit saves, measured side by side.

Runs, alternately and in the same run, two playbooks over the same inventory
of local hosts: (a) audit_facts running every detection in one module call per
host, (b) one <id>_facts module call per detection per host. Reports medians
and the ratio b/a; absolute seconds depend on the machine, the ratio is the
claim. Nothing here is a pass/fail test.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(REPO, '.venv', 'bin')
sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
from ansible_collections.homelab.postmortem.plugins.module_utils.registry import DETECTIONS  # noqa: E402

HOSTS = int(os.environ.get('BENCH_HOSTS', '6'))
ROUNDS = int(os.environ.get('BENCH_ROUNDS', '5'))


def playbook(tasks):
    return [{'name': 'bench', 'hosts': 'all', 'gather_facts': False, 'tasks': tasks}]


def main():
    work = tempfile.mkdtemp(prefix='postmortem-bench-')
    inventory = {'all': {'hosts': dict(('host%02d' % i, {'ansible_connection': 'local',
                                                         'ansible_python_interpreter': os.path.join(VENV_BIN, 'python')})
                                       for i in range(HOSTS))}}
    plays = {
        'one_call': playbook([{'name': 'all detections', 'homelab.postmortem.audit_facts': {}}]),
        'per_detection': playbook([{'name': d.ID, 'homelab.postmortem.%s_facts' % d.ID: {}} for d in DETECTIONS]),
    }
    for name, content in list(plays.items()) + [('inventory', inventory)]:
        with open(os.path.join(work, name + '.json'), 'w') as handle:
            json.dump(content, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, 'build', 'collections'),
               ANSIBLE_FORKS=str(HOSTS), ANSIBLE_NOCOLOR='1')
    times = dict((name, []) for name in plays)
    for _round in range(ROUNDS):
        for name in plays:  # alternate, so drift in machine load hits both sides alike
            started = time.monotonic()
            subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '-i', os.path.join(work, 'inventory.json'),
                            os.path.join(work, name + '.json')], env=env, check=True, capture_output=True)
            times[name].append(time.monotonic() - started)
    one, per = statistics.median(times['one_call']), statistics.median(times['per_detection'])
    print('homelab.postmortem bench: %d local hosts, %d detections, %d rounds (median wall time of ansible-playbook)'
          % (HOSTS, len(DETECTIONS), ROUNDS))
    print('  audit_facts, one call per host        %6.2f s' % one)
    print('  one <id>_facts call per detection     %6.2f s' % per)
    print('  ratio per-detection / one-call        %6.2fx' % (per / one))


if __name__ == '__main__':
    main()
