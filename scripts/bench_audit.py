"""make bench: the audit's cost, measured side by side in one run.

1. Alternately and in the same run, three playbooks over the same inventory of local
   hosts: audit_facts running every detection in one module call per host; the fact
   gathering users already pay for (ansible.builtin.setup); one <id>_facts call per
   detection per host. Medians and ratios; absolute seconds depend on the machine.
2. A podman host: the same audit against setup on this machine's podman, with a store of its own
   (so nobody else's containers count), first without containers, then with four (two with their
   own ID mapping, two running with a restart policy), with ping beside them as the floor.
   In 1 and 2 each side's CPU time (user + system of ansible-playbook and all it started) is
   reported beside the wall time: what the run cost the machine; other tenants' load moves it less.
3. Over real SSH on the test fleet (tests/e2e/ssh_fleet.py), at 4, 8 and 12 hosts: audit_facts
   against ansible.builtin.setup, alternated, forks = hosts, then at 12 with pipelining on, then
   each module's AnsiballZ file run by itself on one fleet host (CPU and wall time; ping is the
   floor every module pays). BENCH_FLEET=0 skips it.
4. Declared checks: the audit playbook (homelab.postmortem.audit) over the same local hosts with 20
   declared checks of the examples' kinds that find nothing here (units and ports nobody has, a fresh
   backup file, a podman without unhealthy containers), against the same playbook without them,
   alternated: CPU and wall time, as a ratio (the goal: at most 1.15x CPU).
5. The fleet report for 1,000 and 10,000 synthetic hosts (six findings each, three
   instances per finding): building and writing JSON, JUnit and HTML against one compact
   json.dumps of the same data (the floor), and against json.dump of it to a file (which
   Python runs through its pure-Python encoder: the issue's "json.dump" floor).
BENCH_LOCAL=0, BENCH_PODMAN=0, BENCH_FLEET=0, BENCH_DECLARED=0 and BENCH_REPORT=0 skip a section.
BENCH_BASELINE=REV (a git revision, e.g. `make bench BENCH_BASELINE=v0.2.0`) adds that revision's
audit_facts as a third side to sections 2 and 3 (and to the one-module costs), alternated with the
others in the same rounds: a change's before and after, side by side in one run.
Nothing here is a pass/fail test.
"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(REPO, '.venv', 'bin')
# BENCH_COLLECTIONS_PATH: a collection installed elsewhere (a copy nobody reinstalls during the run).
COLLECTIONS = os.environ.get('BENCH_COLLECTIONS_PATH') or os.path.join(REPO, 'build', 'collections')
sys.path.insert(0, COLLECTIONS)
from ansible_collections.homelab.postmortem.plugins.module_utils.registry import DETECTIONS  # noqa: E402

HOSTS = int(os.environ.get('BENCH_HOSTS', '6'))
BASELINE = os.environ.get('BENCH_BASELINE') or None
ROUNDS = int(os.environ.get('BENCH_ROUNDS', '5'))


def playbook(tasks):
    return [{'name': 'bench', 'hosts': 'all', 'gather_facts': False, 'tasks': tasks}]


def alternated_costs(playbooks, inventory, env, args=(), side_args=None, side_env=None):
    """({name: median wall time}, {name: median CPU time}) of ansible-playbook over each of
    ``playbooks`` ({name: path}), run alternately ROUNDS times, so that drift in machine load hits
    every side alike. CPU time is user + system of ansible-playbook and everything it started (the
    controller's workers and, for local hosts, the modules and the commands they ran): what the run
    cost the machines, which other tenants' load changes less than the wall time. ``side_args``:
    {name: [more ansible-playbook arguments for that side only]}; ``side_env``: {name: environment
    variables for that side only} (the baseline's collections path)."""
    times = dict((name, []) for name in playbooks)
    cpu = dict((name, []) for name in playbooks)
    names = list(playbooks)
    for number in range(ROUNDS):
        # Each round starts with the next side, so that no side always runs first in a round.
        for name in names[number % len(names):] + names[:number % len(names)]:
            path = playbooks[name]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '-i', inventory] + list(args)
                           + list((side_args or {}).get(name, ())) + [path], env=dict(env, **(side_env or {}).get(name, {})),
                           check=True, capture_output=True)
            times[name].append(time.monotonic() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return (dict((name, statistics.median(values)) for name, values in times.items()),
            dict((name, statistics.median(values)) for name, values in cpu.items()))


def alternated_medians(playbooks, inventory, env, args=(), side_env=None):
    """{name: median wall time}, as alternated_costs measures it."""
    return alternated_costs(playbooks, inventory, env, args, side_env=side_env)[0]


def install_baseline(work):
    """BENCH_BASELINE's collection, built from that revision's files (git archive) and installed into
    a directory of the bench's own: {'ANSIBLE_COLLECTIONS_PATH': it}, or None without a baseline."""
    if not BASELINE:
        return None
    source = os.path.join(work, 'baseline-src')
    os.makedirs(source)
    archive = subprocess.run(['git', '-C', REPO, 'archive', '--format=tar', BASELINE], check=True, capture_output=True).stdout
    subprocess.run(['tar', '-x', '-C', source], input=archive, check=True)
    dist, path = os.path.join(work, 'baseline-dist'), os.path.join(work, 'baseline-collections')
    galaxy = os.path.join(VENV_BIN, 'ansible-galaxy')
    subprocess.run([galaxy, 'collection', 'build', source, '--output-path', dist], check=True, capture_output=True)
    tarball = os.path.join(dist, os.listdir(dist)[0])
    subprocess.run([galaxy, 'collection', 'install', tarball, '-p', path, '--no-deps'], check=True, capture_output=True,
                   env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=path))
    print('baseline: %s (%s), beside this checkout\'s build/collections' % (BASELINE, subprocess.run(
        ['git', '-C', REPO, 'rev-parse', '--short', BASELINE], check=True, capture_output=True, text=True).stdout.strip()))
    return {'ANSIBLE_COLLECTIONS_PATH': path}


def baseline_sides(paths, baseline):
    """The playbooks ({name: path}) with a 'baseline' side (the audit's playbook, run with the baseline's
    collections), and that side's environment for alternated_costs."""
    if not baseline:
        return paths, None
    return dict(paths, baseline=paths['audit']), {'baseline': baseline}


def baseline_ratio(medians, cpu=None):
    """The baseline's audit / setup beside this checkout's, or nothing without a baseline."""
    if 'baseline' not in medians:
        return ''
    text = '; baseline %s %4.2fx wall' % (BASELINE, medians['baseline'] / medians['setup'])
    return text + (', %4.2fx CPU' % (cpu['baseline'] / cpu['setup']) if cpu else '')


def main():
    work = tempfile.mkdtemp(prefix='postmortem-bench-')
    inventory = {'all': {'hosts': dict(('host%02d' % i, {'ansible_connection': 'local',
                                                         'ansible_python_interpreter': os.path.join(VENV_BIN, 'python')})
                                       for i in range(HOSTS))}}
    plays = {
        'one_call': playbook([{'name': 'all detections', 'homelab.postmortem.audit_facts': {}}]),
        'setup': playbook([{'name': 'gather facts', 'ansible.builtin.setup': {}}]),
        'per_detection': playbook([{'name': d.ID, 'homelab.postmortem.%s_facts' % d.ID: {}} for d in DETECTIONS]),
    }
    for name, content in list(plays.items()) + [('inventory', inventory)]:
        with open(os.path.join(work, name + '.json'), 'w') as handle:
            json.dump(content, handle)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS,
               ANSIBLE_FORKS=str(HOSTS), ANSIBLE_NOCOLOR='1')
    if os.environ.get('BENCH_LOCAL', '1') == '1':
        local_bench(work, plays, env)
    # Only sections 2 and 3 have a baseline side: build it only when one of them runs.
    with_baseline = any(os.environ.get(section, '1') == '1' for section in ('BENCH_PODMAN', 'BENCH_FLEET'))
    baseline = install_baseline(work) if with_baseline else None
    if BASELINE and not with_baseline:
        print('baseline: %s not built (BENCH_PODMAN=0 and BENCH_FLEET=0: no section compares with it)' % BASELINE)
    if os.environ.get('BENCH_PODMAN', '1') == '1':
        podman_host_bench(work, env, baseline)
    if os.environ.get('BENCH_FLEET', '1') == '1':
        fleet_bench(work, env, baseline)
    if os.environ.get('BENCH_DECLARED', '1') == '1':
        declared_bench(work, env)
    if os.environ.get('BENCH_REPORT', '1') == '1':
        report_bench()


def local_bench(work, plays, env):
    medians, cpu = alternated_costs(dict((name, os.path.join(work, name + '.json')) for name in plays),
                                    os.path.join(work, 'inventory.json'), env)
    one, per, setup = medians['one_call'], medians['per_detection'], medians['setup']
    print('homelab.postmortem bench: %d local hosts, %d detections, %d rounds (median wall time of ansible-playbook)'
          % (HOSTS, len(DETECTIONS), ROUNDS))
    print('  audit_facts, one call per host        %6.2f s' % one)
    print('  ansible.builtin.setup                 %6.2f s' % setup)
    print('  one <id>_facts call per detection     %6.2f s' % per)
    print('  ratio audit / setup                   %6.2fx (CPU: %4.2fx)' % (one / setup, cpu['one_call'] / cpu['setup']))
    print('  ratio per-detection / one-call        %6.2fx' % (per / one))


def declared_checks(work):
    """20 declared checks of the examples' kinds (examples/declared_checks), made to find nothing on
    this machine: systemd units and ports nobody has (this machine has no systemd as PID 1), a fresh
    backup file, the machine's own fstab, a Prometheus port where nothing listens, podman's unhealthy
    containers (none in a fresh store)."""
    import yaml
    folder = os.path.join(REPO, 'examples', 'declared_checks')
    examples = {}
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as handle:
            check = yaml.safe_load(handle)['checks'][0]
            examples[check['id'].split('.', 1)[1]] = check
    backups = os.path.join(work, 'backups')
    os.makedirs(backups, exist_ok=True)
    with open(os.path.join(backups, 'fresh.tar.gz'), 'w') as handle:
        handle.write('a backup')
    edits = {
        'backup_timer': lambda q, n: q.update(unit=q['unit'].replace('backup', 'bench%d' % n)),
        'unit_listening': lambda q, n: q.update(unit='bench%d.service' % n) if q['kind'] == 'systemd' else q.update(port=19000 + n),
        'fstab_mounted': lambda q, n: None,
        'backup_file': lambda q, n: q.update(pattern=os.path.join(backups, '*.tar.gz')),
        'health_fields': lambda q, n: q.update(url='http://127.0.0.1:%d/api/v1/targets' % (19100 + n)),
        'container_health': lambda q, n: None,
    }
    counts = {'backup_timer': 4, 'unit_listening': 4, 'fstab_mounted': 2, 'backup_file': 4, 'health_fields': 4,
              'container_health': 2}
    checks = []
    for kind, count in sorted(counts.items()):
        for number in range(count):
            check = json.loads(json.dumps(examples[kind]))
            check['id'] = 'bench.%s_%d' % (kind, number)
            for question in check['gather']:
                edits[kind](question, number)
            checks.append(check)
    path = os.path.join(work, 'declared-checks.yml')
    with open(path, 'w') as handle:
        yaml.safe_dump({'checks': checks}, handle, sort_keys=False)
    return path, len(checks)


def declared_bench(work, env):
    """The audit playbook with and without 20 declared checks that find nothing, alternated."""
    checks, count = declared_checks(work)
    sides = {'without': 'homelab.postmortem.audit', 'with': 'homelab.postmortem.audit'}
    side_args = dict((name, ['-e', json.dumps({'postmortem_report_dir': os.path.join(work, 'report-' + name)})])
                     for name in sides)
    side_args['with'] += ['-e', json.dumps({'postmortem_check_files': checks})]
    medians, cpu = alternated_costs(sides, os.path.join(work, 'inventory.json'), env, side_args=side_args)
    print('declared checks (%d of the examples\' kinds that find nothing, %d local hosts, %d rounds alternated, '
          'the audit playbook)' % (count, HOSTS, ROUNDS))
    print('  without %5.2f s wall, %5.2f s CPU; with %5.2f s wall, %5.2f s CPU; ratio with / without %4.2fx wall, '
          '%4.2fx CPU (goal: at most 1.15x CPU)' % (medians['without'], cpu['without'], medians['with'], cpu['with'],
                                                    medians['with'] / medians['without'], cpu['with'] / cpu['without']))


BUILD = os.path.join(REPO, 'build')
PODMAN_CHECKS = ('podman_restart_userns', 'podman_export_idmap')


def podman_host_bench(work, env, baseline=None):
    """The audit against setup on a podman host (podman installed, as root): without containers,
    where the podman detections run podman ps and nothing else, and with four containers, where they
    also inspect them and read podman's facts. The store is the bench's own (vfs, its own graph,
    run and tmp directories), made here and removed afterwards."""
    podman = shutil.which('podman')
    if podman is None or os.geteuid() != 0:
        print('podman host: skipped (needs podman and root)')
        return
    store = tempfile.mkdtemp(prefix='postmortem-bench-podman-')
    storage_conf = os.path.join(store, 'storage.conf')
    with open(storage_conf, 'w') as handle:
        handle.write('[storage]\ndriver = "vfs"\ngraphroot = "%s/graph"\nrunroot = "%s/run"\n' % (store, store))
    base = env.get('CONTAINERS_CONF') or os.path.join(BUILD, 'containers.conf')
    text = open(base).read() if os.path.exists(base) else ''
    tmp_dir = 'tmp_dir = "%s/tmp"\n' % store
    text = text.replace('[engine]\n', '[engine]\n' + tmp_dir, 1) if '[engine]\n' in text else text + '\n[engine]\n' + tmp_dir
    conf = os.path.join(store, 'containers.conf')
    with open(conf, 'w') as handle:
        handle.write(text)
    penv = dict(env, CONTAINERS_CONF=conf, CONTAINERS_STORAGE_CONF=storage_conf)

    def run(*args):
        return subprocess.run([podman] + list(args), env=penv, check=True, capture_output=True, text=True, cwd='/')
    # ping does nothing: the floor every module pays (Python, AnsiballZ, ansible's module_utils).
    plays = {'audit': playbook([{'name': 'audit', 'homelab.postmortem.audit_facts': {}}]),
             'setup': playbook([{'name': 'gather facts', 'ansible.builtin.setup': {}}]),
             'ping': playbook([{'name': 'ping', 'ansible.builtin.ping': {}}])}
    for name, content in plays.items():
        with open(os.path.join(work, 'podman-%s.json' % name), 'w') as handle:
            json.dump(content, handle)
    inventory = os.path.join(work, 'inventory.json')
    print('podman host (%s, %d local hosts, %d rounds alternated, median wall time)'
          % (run('--version').stdout.strip(), HOSTS, ROUNDS))
    try:
        for label in ('no containers', '4 containers'):
            if label == '4 containers':
                sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))
                from helpers import read_env_file  # noqa: E402  (the e2e tests' reader of build/*.env)
                tiny = read_env_file('podman.env').get('POSTMORTEM_TINY_TAR')
                run('import', '--quiet', '--change', 'CMD ["/bin/sh"]', tiny, 'localhost/postmortem-bench:1')
                for number, options in enumerate((['--uidmap', '0:200000:65536', '--gidmap', '0:200000:65536'],
                                                  ['--uidmap', '0:300000:65536', '--gidmap', '0:300000:65536'], [], [])):
                    name = 'postmortem-bench-%d' % number
                    if number < 2:
                        run('create', '--name', name, '--network', 'none', *(options + ['localhost/postmortem-bench:1', 'true']))
                    else:
                        run('run', '--detach', '--name', name, '--network', 'none', '--restart', 'always',
                            'localhost/postmortem-bench:1', 'sleep', '100000')
            sides, side_env = baseline_sides(dict((name, os.path.join(work, 'podman-%s.json' % name)) for name in plays),
                                             baseline)
            medians, cpu = alternated_costs(sides, inventory, penv, side_env=side_env)
            spent = podman_detection_ms(penv)
            print('  %-14s audit_facts %5.2f s, setup %5.2f s, ping %5.2f s; ratio audit / setup %4.2fx wall, %4.2fx CPU '
                  '(ping %4.2fx, %4.2fx)%s; podman detections %s'
                  % (label + ':', medians['audit'], medians['setup'], medians['ping'], medians['audit'] / medians['setup'],
                     cpu['audit'] / cpu['setup'], medians['ping'] / medians['setup'], cpu['ping'] / cpu['setup'],
                     baseline_ratio(medians, cpu), spent))
    finally:
        subprocess.run([podman, 'rm', '--all', '--force', '--time', '0'], env=penv, capture_output=True, check=False)
        subprocess.run([podman, 'rmi', '--all', '--force'], env=penv, capture_output=True, check=False)
        shutil.rmtree(store, ignore_errors=True)


def podman_detection_ms(env):
    """What the podman detections took in one audit of one local host (postmortem_run.duration_ms)."""
    out = subprocess.run([os.path.join(VENV_BIN, 'ansible'), 'localhost', '-c', 'local', '-e',
                          'ansible_python_interpreter=%s' % os.path.join(VENV_BIN, 'python'),
                          '-m', 'homelab.postmortem.audit_facts', '-a', 'checks=podman'],
                         env=dict(env, ANSIBLE_LOAD_CALLBACK_PLUGINS='1', ANSIBLE_STDOUT_CALLBACK='ansible.builtin.minimal'),
                         capture_output=True, text=True, check=False).stdout
    try:
        facts = json.loads(out.split(' => ', 1)[1])['ansible_facts']
    except (IndexError, ValueError, KeyError):
        return 'not measured'
    durations = facts['postmortem_run']['duration_ms']
    sources = set()
    for check in PODMAN_CHECKS:
        evidence = facts['postmortem'][check]['evidence']
        for entry in [evidence] + list(evidence.get('users') or []):
            if isinstance(entry.get('podman_facts'), dict):
                sources.add('podman info' if 'why_podman_info' in entry['podman_facts'] else 'podman --version and files')
            elif entry.get('podman_facts'):
                sources.add(entry['podman_facts'])
    return '%s ms (facts: %s)' % (' + '.join('%d' % durations[c] for c in PODMAN_CHECKS), ', '.join(sorted(sources)))


FLEET_SIZES = (4, 8, 12)


def fleet_bench(work, env, baseline=None):
    """The audit against setup over real SSH on the test fleet, at 4, 8 and 12 hosts that can be
    audited; then with pipelining on; then where a host's time goes (one module run by itself)."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'e2e'))
    import ssh_fleet  # noqa: E402
    size = max(FLEET_SIZES) + 2  # + one host without Python and one unreachable, which the bench leaves out
    inventory = ssh_fleet.up(size)
    try:
        auditable = ['fleet-%02d' % i for i in range(1, max(FLEET_SIZES) + 1)]
        plays = {'audit': playbook([{'name': 'audit', 'homelab.postmortem.audit_facts': {}}]),
                 'setup': playbook([{'name': 'gather facts', 'ansible.builtin.setup': {}}])}
        for name, content in plays.items():
            with open(os.path.join(work, 'fleet-%s.json' % name), 'w') as handle:
                json.dump(content, handle)
        print('over SSH on the test fleet (forks = hosts, %d rounds alternated, median wall time)' % ROUNDS)
        runs = [(count, False) for count in FLEET_SIZES] + [(max(FLEET_SIZES), True)]
        for count, pipelining in runs:
            subset = {'all': {'hosts': dict((h, inventory['all']['hosts'][h]) for h in auditable[:count]),
                              'vars': inventory['all']['vars']}}
            path = os.path.join(work, 'fleet-%d.json' % count)
            with open(path, 'w') as handle:
                json.dump(subset, handle)
            sides, side_env = baseline_sides(dict((name, os.path.join(work, 'fleet-%s.json' % name)) for name in plays), baseline)
            medians = alternated_medians(sides, path,
                                         dict(env, ANSIBLE_PIPELINING='1' if pipelining else '0'),
                                         args=['-f', str(count)], side_env=side_env)
            audit, setup = medians['audit'], medians['setup']
            print('  %2d hosts%s: audit_facts %5.2f s, setup %5.2f s, ratio audit / setup %4.2fx%s (1 module execution per host)'
                  % (count, ', pipelining' if pipelining else '', audit, setup, audit / setup, baseline_ratio(medians)))
        module_cost(inventory, env, baseline)
    finally:
        ssh_fleet.down(size)


MODULE_COST = r"""
import resource, statistics, subprocess, sys, time
runs = {}
for _round in range(8):
    for name, path in zip(sys.argv[1::2], sys.argv[2::2]):
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        subprocess.run(['python3', path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        wall, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.setdefault(name, []).append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall))
for name in sys.argv[1::2]:
    print('%s %.3f %.3f' % (name, statistics.median(r[0] for r in runs[name]), statistics.median(r[1] for r in runs[name])))
"""


def module_cost(inventory, env, baseline=None):
    """One host's share: each module's AnsiballZ file, as Ansible sent it, run on a fleet host by
    itself (8 rounds alternated): CPU and wall time. ping is the floor every module pays (Python,
    the wrapper, ansible.module_utils.basic)."""
    host = 'fleet-05'
    modules = [('ping', 'ping', 'ansible.builtin.ping', {}), ('audit_facts', 'audit_facts', 'homelab.postmortem.audit_facts', {}),
               ('setup', 'setup', 'ansible.builtin.setup', {})]
    if baseline:
        modules.append(('baseline', 'audit_facts', 'homelab.postmortem.audit_facts', baseline))
    with open(os.path.join(tempfile.mkdtemp(prefix='postmortem-bench-'), 'inventory.json'), 'w') as handle:
        json.dump({'all': {'hosts': {host: inventory['all']['hosts'][host]}, 'vars': inventory['all']['vars']}}, handle)
    paths = []
    for label, short, fqcn, side_env in modules:
        subprocess.run(['podman', 'exec', host, 'rm', '-rf', '/root/.ansible/tmp'], check=False, capture_output=True)
        subprocess.run([os.path.join(VENV_BIN, 'ansible'), '-i', handle.name, host, '-m', fqcn],
                       env=dict(env, ANSIBLE_KEEP_REMOTE_FILES='1', ANSIBLE_PIPELINING='0', **side_env), check=False,
                       capture_output=True)
        found = subprocess.run(['podman', 'exec', host, 'sh', '-c', 'ls /root/.ansible/tmp/*/AnsiballZ_%s.py' % short],
                               capture_output=True, text=True, check=False).stdout.split()
        if not found:
            print('  module cost: the AnsiballZ file of %s was not kept; skipped' % fqcn)
            return
        kept = '/tmp/AnsiballZ_%s.py' % label
        subprocess.run(['podman', 'exec', host, 'cp', found[0], kept], check=True)
        paths += [label, kept]
    measured = subprocess.run(['podman', 'exec', '-i', host, 'python3', '-', ] + paths, input=MODULE_COST,
                              capture_output=True, text=True, check=False).stdout.split('\n')
    print('one module on one fleet host, run by itself (median of 8): CPU and wall time')
    for line in measured:
        if line.strip():
            name, cpu, wall = line.split()
            print('  %-12s CPU %.3f s, wall %.3f s' % (name, float(cpu), float(wall)))


def synthetic_result(index, checks=6, instances=3):
    """One host's audit result: make bench's set (6 findings, 3 instances) or the heavier one the
    issue sets the HTML size against (12 findings, 2 instances each with evidence)."""
    statuses = ('ok', 'at_risk', 'affected', 'not_applicable', 'ok', 'ok')
    findings = {}
    for number in range(checks):
        check = 'check%d' % number
        findings[check] = {
            'id': check, 'title': check, 'status': statuses[(index + number) % 6], 'summary': 'summary of host %d' % index,
            'evidence': {'instances': [{'name': 'instance %d' % k, 'status': 'ok', 'summary': 'fine',
                                        'evidence': {'pid': k, 'argv': ['/usr/bin/server', '--flag', str(k)] * 3}}
                                       for k in range(instances)]},
            'remediation': {'role': None, 'vars': {}, 'module': None, 'manual': ['a step'], 'disruption': 'none'},
            'references': ['https://example.invalid/%d' % number]}
    return {'changed': False, 'ansible_facts': {'postmortem': findings, 'postmortem_run': {}}}


def report_bench():
    from ansible_collections.homelab.postmortem.plugins.plugin_utils import fix_outcome, report, report_drift, report_files, report_summary  # noqa: E402
    print('fleet report (synthetic hosts; median of 5, alternated): build + drift against the previous run + write '
          'JSON, JUnit, HTML and metrics, against one compact json.dumps of the same report')
    for label, checks_count, instances in (("make bench's set: 6 findings a host, 3 instances", 6, 3),
                                           ('heavier set: 12 findings a host, 2 instances', 12, 2)):
        print('  %s' % label)
        for count in (1000, 10000):
            hosts = ['host%05d' % i for i in range(count)]
            results = dict((h, synthetic_result(i, checks_count, instances)) for i, h in enumerate(hosts))
            checks = [('check%d' % n, 'check%d' % n) for n in range(checks_count)]
            times = {'report': [], 'dumps': [], 'dump': []}
            scratch = tempfile.mkdtemp(prefix='postmortem-report-bench-')
            for _round in range(5):
                started = time.monotonic()
                built = report.build(hosts, results, checks, 'bench')
                # The fix command of each open finding, as audit_report adds it (host variables: none here).
                fix_outcome.add_fixes(built, scratch, None, lambda host: {})
                history, _drift = report_drift.drift_since(built, scratch, frozenset(c for c, _t in checks))
                report_files.write(built, scratch, ['json', 'junit', 'html', 'prometheus'])
                with open(os.path.join(scratch, report_drift.HISTORY_FILE), 'w') as out:
                    json.dump(report_drift.next_history(built, history), out, separators=(',', ':'))
                times['report'].append(time.monotonic() - started)
                started = time.monotonic()
                json.dumps(built, separators=(',', ':'))
                times['dumps'].append(time.monotonic() - started)
                started = time.monotonic()
                with open(os.path.join(scratch, 'floor.json'), 'w') as out:
                    json.dump(built, out, separators=(',', ':'))
                times['dump'].append(time.monotonic() - started)
            sizes = dict((name, os.path.getsize(os.path.join(scratch, name)) / 1e6)
                         for name in ('postmortem.html', 'postmortem.json', report_drift.HISTORY_FILE))
            lines = len(report_summary.summary_lines(built, {'json': 'postmortem.json'}))
            total, dumps, dump = (statistics.median(times[k]) for k in ('report', 'dumps', 'dump'))
            print('    %6d hosts: %6.2f s; compact json.dumps %5.2f s (ratio %4.1fx); json.dump to a file %5.2f s '
                  '(ratio %4.2fx); HTML %5.1f MB (JSON %5.1f MB); history %4.2f MB; summary %d lines'
                  % (count, total, dumps, total / dumps, dump, total / dump, sizes['postmortem.html'],
                     sizes['postmortem.json'], sizes[report_drift.HISTORY_FILE], lines))


if __name__ == '__main__':
    main()
