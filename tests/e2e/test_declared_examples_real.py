"""The examples library (examples/declared_checks) against the real components, through the real
audit playbook: systemd as PID 1 in a podman container (timers that run, fail and are skipped by a
condition; a service with nothing listening and one with a listener; an fstab with an entry that is
not mounted), real podman containers with a failing health check (podman 4.3 schedules no health
checks without systemd: the test runs `podman healthcheck run` itself), a real Prometheus whose
/api/v1/targets says success while a target is down, and backup files on this machine.

Each example is loaded from the shipped file; only the names a user would change (units, ports,
paths, ids) are changed here, in the loaded data, so what is tested is the example's judge."""
import copy
import json
import os
import shutil
import subprocess
import time

import pytest
import yaml

from conftest import podman
from helpers import REPO_ROOT, free_port, http_json, local_host, read_env_file, run_audit

EXAMPLES = os.path.join(REPO_ROOT, 'examples', 'declared_checks')


def example(name):
    with open(os.path.join(EXAMPLES, name + '.yml')) as handle:
        return yaml.safe_load(handle)['checks'][0]


def variant(name, suffix, edit):
    check = copy.deepcopy(example(name))
    check['id'] = '%s_%s' % (check['id'], suffix)
    edit(check)
    return check


def write_checks(tmp_path, checks):
    path = tmp_path / 'checks.yml'
    path.write_text(yaml.safe_dump({'groups': ['examples'], 'checks': checks}, sort_keys=False))
    return str(path)


def statuses(run, host, ids):
    return dict((cid, run.finding(host, cid)['status']) for cid in ids)


def _question(check, name):
    return [q for q in check['gather'] if q['name'] == name][0]


# -- systemd, in a container ------------------------------------------------------------------------

UNITS = {
    # Every 2 s; the skipped one runs only while /run/go-skip exists (an unmounted backup disk).
    'backup-ok.timer': '[Timer]\nOnCalendar=*:*:0/2\nAccuracySec=1s\n',
    'backup-ok.service': '[Service]\nType=oneshot\nExecStart=/bin/true\n',
    'backup-fail.timer': '[Timer]\nOnCalendar=*:*:0/2\nAccuracySec=1s\n',
    'backup-fail.service': '[Service]\nType=oneshot\nExecStart=/bin/false\n',
    'backup-skip.timer': '[Timer]\nOnCalendar=*:*:0/2\nAccuracySec=1s\n',
    'backup-skip.service': '[Unit]\nConditionPathExists=/run/go-skip\n[Service]\nType=oneshot\nExecStart=/bin/true\n',
    'web-dead.service': '[Service]\nExecStart=/bin/sleep infinity\n',
    'web-live.service': '[Service]\nExecStart=/usr/bin/python3 -m http.server 8081 --bind 127.0.0.1\n',
}
FSTAB = '''# <file system> <mount point> <type> <options> <dump> <pass>
proc /proc proc defaults 0 0
tmpfs /mnt/data tmpfs defaults,nofail 0 0
/dev/sdb1 none swap sw 0 0
tmpfs /mnt/later tmpfs noauto 0 0
'''


@pytest.fixture(name='systemd_box')
def _systemd_box():
    """A container with systemd as PID 1 (the image scripts/setup-podman.sh builds), no network."""
    image = read_env_file('podman.env').get('POSTMORTEM_SYSTEMD_IMAGE')
    if not image:
        pytest.fail('no systemd image: run `make test-env` (scripts/setup-podman.sh)')
    name = 'postmortem-e2e-declared-%d' % os.getpid()
    podman('rm', '-f', name, check=False)
    podman('run', '-d', '--name', name, '--systemd=always', '--network', 'none', image, '/sbin/init')
    try:
        deadline = time.time() + 60
        booted = ('running', 'degraded')
        while podman('exec', name, 'systemctl', 'is-system-running', check=False).stdout.strip() not in booted:
            if time.time() > deadline:
                pytest.fail('systemd in %s did not finish booting' % name)
            time.sleep(0.5)
        yield name
    finally:
        podman('rm', '-f', '-t', '2', name, check=False)


def _show(box, unit, prop):
    return podman('exec', box, 'systemctl', 'show', '-p', prop, '--value', unit, check=False).stdout.strip()


def _wait(what, test, seconds=60):
    deadline = time.time() + seconds
    while not test():
        if time.time() > deadline:
            raise AssertionError('timed out waiting for %s' % what)
        time.sleep(0.5)


def _install(box):
    script = ['touch /run/go-skip', "printf '%s' > /etc/fstab" % FSTAB.replace("'", "'\\''")]
    for unit, text in UNITS.items():
        script.append("printf '%%s' '%s' > /etc/systemd/system/%s" % (text.replace("'", "'\\''"), unit))
    script += ['systemctl daemon-reload',
               'systemctl start backup-ok.timer backup-fail.timer backup-skip.timer web-dead.service web-live.service']
    podman('exec', box, 'sh', '-c', ' && '.join(script))
    for unit in ('backup-ok.service', 'backup-skip.service'):
        _wait('%s to run' % unit, lambda u=unit: _show(box, u, 'ExecMainExitTimestamp') not in ('', 'n/a'))
    _wait('backup-fail.service to fail', lambda: _show(box, 'backup-fail.service', 'Result') == 'exit-code')
    _wait('web-live to listen', lambda: podman('exec', box, 'python3', '-c', 'import socket; '
                                               'socket.create_connection(("127.0.0.1", 8081), 1)', check=False).returncode == 0)
    # From now on the condition skips every run: the timer still fires every 2 s, nothing runs.
    podman('exec', box, 'rm', '/run/go-skip')
    time.sleep(6)  # more than two of the timer's periods since the skipped service last finished


def _timer(suffix):
    def edit(check):
        _question(check, 'timer')['unit'] = 'backup-%s.timer' % suffix
        _question(check, 'service')['unit'] = 'backup-%s.service' % suffix
    return variant('backup_timer', suffix, edit)


def _web(suffix, port):
    def edit(check):
        _question(check, 'unit')['unit'] = 'web-%s.service' % suffix
        _question(check, 'sockets')['port'] = port
    return variant('unit_listening', suffix, edit)


def test_examples_against_real_systemd(tmp_path, systemd_box):
    _install(systemd_box)
    checks = [_timer('ok'), _timer('fail'), _timer('skip'), _web('dead', 8080), _web('live', 8081),
              example('unit_listening'), example('fstab_mounted')]
    inventory = {'all': {'hosts': {'box': {'ansible_connection': 'containers.podman.podman', 'ansible_host': systemd_box,
                                           'ansible_python_interpreter': '/usr/bin/python3'}}}}
    run = run_audit(tmp_path, inventory, {'postmortem_check_files': write_checks(tmp_path, checks),
                                          'postmortem_checks': ['declared']})
    assert run.proc.returncode == 0, run.output[-3000:]
    assert statuses(run, 'box', [c['id'] for c in checks]) == {
        'example.backup_timer_ok': 'ok',
        'example.backup_timer_fail': 'affected',      # Result=exit-code
        'example.backup_timer_skip': 'at_risk',       # the timer fires, the condition skips the run
        'example.unit_listening_dead': 'affected',    # active, nothing on 8080
        'example.unit_listening_live': 'ok',
        'example.unit_listening': 'not_applicable',   # no web.service in this container
        'example.fstab_mounted': 'affected',
    }
    fail = run.finding('box', 'example.backup_timer_fail')
    assert fail['evidence']['result'] == 'exit-code' and fail['evidence']['exit_status'] == '1'
    skip = run.finding('box', 'example.backup_timer_skip')
    assert skip['evidence']['result'] == 'success' and skip['evidence']['period'] == 2
    assert skip['summary'].startswith('backup.timer is active; backup.service last finished ')
    dead = run.finding('box', 'example.unit_listening_dead')
    assert dead['summary'].startswith('web.service is active (pid ') and dead['summary'].endswith('nothing listens on port 8080')
    fstab = run.finding('box', 'example.fstab_mounted')['evidence']['instances']
    assert [(i['name'], i['status']) for i in fstab] == [('/proc', 'ok'), ('/mnt/data', 'affected')]


# -- this machine: backup files, Prometheus, podman -------------------------------------------------

@pytest.fixture(name='prometheus')
def _prometheus(tmp_path):
    """Debian's Prometheus, scraping itself and a port where nothing listens, every second."""
    port, dead = free_port(), free_port()
    config = tmp_path / 'prometheus.yml'
    config.write_text(yaml.safe_dump({'global': {'scrape_interval': '1s'}, 'scrape_configs': [
        {'job_name': 'self', 'static_configs': [{'targets': ['127.0.0.1:%d' % port]}]},
        {'job_name': 'dead', 'static_configs': [{'targets': ['127.0.0.1:%d' % dead]}]}]}))
    log = open(str(tmp_path / 'prometheus.log'), 'w')
    proc = subprocess.Popen([shutil.which('prometheus') or '/usr/bin/prometheus', '--config.file=%s' % config,
                             '--storage.tsdb.path=%s' % (tmp_path / 'tsdb'), '--web.listen-address=127.0.0.1:%d' % port],
                            stdout=log, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d/api/v1/targets' % port

    def scraped():
        try:
            healths = dict((t['labels']['job'], t['health']) for t in http_json(url)['data']['activeTargets'])
        except OSError:
            return False
        return healths == {'self': 'up', 'dead': 'down'}
    try:
        _wait('prometheus to scrape both targets', scraped)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


@pytest.fixture(name='unhealthy_container')
def _unhealthy_container():
    image = read_env_file('podman.env').get('POSTMORTEM_TINY_IMAGE')
    names = ['postmortem-e2e-sick-%d' % os.getpid(), 'postmortem-e2e-well-%d' % os.getpid()]
    try:
        for name in names:
            podman('run', '-d', '--name', name, '--network', 'none', '--health-cmd', 'test -e /tmp/ok',
                   '--health-interval', '1h', image, 'sleep', '600')
        podman('exec', names[1], 'touch', '/tmp/ok')
        # podman's default health-retries is 3: three failures in a row make it unhealthy.
        for _run in range(3):
            podman('healthcheck', 'run', names[0], check=False)
        podman('healthcheck', 'run', names[1])
        health = json.loads(podman('inspect', names[0], '--format', '{{json .State.Health}}').stdout)
        assert health['Status'] == 'unhealthy', health
        yield names
    finally:
        for name in names:
            podman('rm', '-f', '-t', '0', name, check=False)


def test_examples_against_this_machine(tmp_path, prometheus, unhealthy_container):
    backups = {}
    for case, files in (('fresh', [('a.tar.gz', 10, 3600 * 30), ('b.tar.gz', 10, 60)]),
                        ('stale', [('a.tar.gz', 10, 3600 * 27)]),
                        ('empty', [('a.tar.gz', 10, 3600 * 30), ('b.tar.gz', 0, 60)]),
                        ('none', [])):
        folder = tmp_path / 'backup' / case
        folder.mkdir(parents=True)
        for name, size, age in files:
            (folder / name).write_bytes(b'x' * size)
            os.utime(str(folder / name), (time.time() - age, time.time() - age))
        backups[case] = str(folder)

    def backup(case):
        return variant('backup_file', case, lambda c: _question(c, 'backups').update(pattern=backups[case] + '/*.tar.gz'))
    health = variant('health_fields', 'prometheus', lambda c: _question(c, 'targets').update(url=prometheus))
    checks = [backup('fresh'), backup('stale'), backup('empty'), backup('none'), health, example('container_health')]
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_check_files': write_checks(tmp_path, checks), 'postmortem_checks': ['examples']})
    assert run.proc.returncode == 0, run.output[-3000:]
    assert statuses(run, 'localhost', [c['id'] for c in checks]) == {
        'example.backup_file_fresh': 'ok', 'example.backup_file_stale': 'at_risk', 'example.backup_file_empty': 'affected',
        'example.backup_file_none': 'affected', 'example.health_fields_prometheus': 'affected',
        'example.container_health': 'affected'}
    assert run.finding('localhost', 'example.backup_file_fresh')['evidence']['newest'] == backups['fresh'] + '/b.tar.gz'
    targets = run.finding('localhost', 'example.health_fields_prometheus')['evidence']['instances']
    assert sorted((i['evidence']['job'], i['status']) for i in targets) == [('dead', 'affected'), ('self', 'ok')]
    assert 'connection refused' in [i for i in targets if i['status'] == 'affected'][0]['evidence']['error']
    sick, well = unhealthy_container
    containers = run.finding('localhost', 'example.container_health')['evidence']['containers']
    assert sick in containers and well not in containers
