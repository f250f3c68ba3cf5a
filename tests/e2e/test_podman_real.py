"""podman_restart_userns, podman_export_idmap and podman_safe_export against real podman.

Real: Debian 12's podman 4.3.1, rootful (runc, build/containers.conf) and rootless
(the pmrootless user made by scripts/setup-podman.sh, vfs storage, --network none),
with the tiny busybox image built by scripts/make_tiny_image.py. Containers are
really created, really exit, really get stuck.

Not real here: AppArmor (this kernel has none). The AT RISK side of
podman_restart_userns is covered by tests/unit/plugins/module_utils/detections/test_podman_restart_userns.py with recorded
inspect output and a host-state fixture; here the same containers are checked to
be reported ok *because* AppArmor is absent, with that reason in the evidence.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from helpers import BUILD, VENV_BIN, ansible_env, local_host, read_env_file, run_audit, run_module

sys.path.insert(0, os.path.join(BUILD, 'collections'))

from ansible_collections.homelab.postmortem.plugins.module_utils import registry  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman_cli  # noqa: E402
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import facts as podman_facts  # noqa: E402

pytestmark = pytest.mark.needs_root('rootful podman, and runuser for the rootless user, need root; '
                                    'make test runs as root (CI does)')

ENV = read_env_file('podman.env')
IMAGE = ENV.get('POSTMORTEM_TINY_IMAGE', 'localhost/postmortem-tiny:1')
ROOTLESS = ENV.get('POSTMORTEM_ROOTLESS_USER', 'pmrootless')
PODMAN_ENV = dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf'))
NETNS_DIR = '/run/netns'


def podman(*args, check=True, user=None, timeout=120):
    cmd = ['podman'] + list(args)
    if user:
        cmd = ['runuser', '-u', user, '--'] + cmd
    return subprocess.run(cmd, env=PODMAN_ENV, capture_output=True, text=True, check=check, timeout=timeout, cwd='/')


def inspect(name, user=None):
    return json.loads(podman('container', 'inspect', name, user=user).stdout)[0]


def wait_for(predicate, timeout=30, what='condition'):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError('timed out waiting for %s' % what)


@pytest.fixture
def names():
    """Unique container names for one test; every container is removed afterwards, and every
    network namespace podman made for them: a container whose last exit was never cleaned up
    (make_stuck's) keeps its namespace, and the address in it, after podman rm, and podman's
    allocator would hand that address out again."""
    made = []
    token = uuid.uuid4().hex[:6]
    namespaces_before = set(os.listdir(NETNS_DIR)) if os.path.isdir(NETNS_DIR) else set()

    def name(label, user=None):
        made.append((label + '-' + token, user))
        return label + '-' + token
    yield name
    for container, user in made:
        podman('rm', '--force', container, check=False, user=user)
    in_use = set(podman('ps', '--format', '{{.NetworkSettings.SandboxKey}}', check=False).stdout.split())
    for namespace in (set(os.listdir(NETNS_DIR)) if os.path.isdir(NETNS_DIR) else set()) - namespaces_before:
        path = os.path.join(NETNS_DIR, namespace)
        if path not in in_use and namespace.startswith('netns-'):
            subprocess.run(['umount', path], capture_output=True, check=False)
            os.unlink(path)


def detect(check, probes=(), settings=None):
    ctx = AuditContext(probes=probes, settings=settings or {})
    findings, _timings = registry.run(ctx, registry.select([check]))
    return findings[check]


def by_name(finding, container):
    found = [i for i in finding['evidence'].get('instances', []) if i['evidence'].get('name') == container]
    assert found, 'no instance for %s in %s' % (container, json.dumps(finding, indent=1)[:2000])
    return found[0]


def make_stuck(name, tmp_path):
    """A real STUCK container: its restart path fails after the first restart.

    podman's restart decision runs in ``podman container cleanup``, which conmon
    starts from the podman binary recorded when the container was created. Create
    it through a copy of podman, let it be restarted once, remove the copy: the
    next exit is never handled, exactly the shape of the AppArmor failure (died,
    restart, then nothing; RestartCount 1). Killing conmon does not work here
    (the orphan becomes a zombie nobody reaps).
    """
    once = str(tmp_path / 'podman-once')
    shutil.copy('/usr/bin/podman', once)
    os.chmod(once, 0o755)
    subprocess.run([once, 'run', '--detach', '--name', name, '--restart', 'always', '--uidmap', '0:200000:65536',
                    '--gidmap', '0:200000:65536', IMAGE, 'sh', '-c', 'sleep 2; exit 1'],
                   env=PODMAN_ENV, check=True, capture_output=True)
    wait_for(lambda: inspect(name)['RestartCount'] >= 1, what='the first restart')
    os.unlink(once)
    # On some kernels podman's own restart of a mapped container already stops at "created"
    # (events: died, restart, init, cleanup; never start): stuck after one restart either way.
    wait_for(lambda: inspect(name)['State']['Status'] in ('exited', 'stopped', 'created'), what='the second exit')
    time.sleep(1)
    assert inspect(name)['RestartCount'] == 1


def test_stuck_container_is_affected_and_the_rightly_stopped_ones_are_not(names, tmp_path):
    stuck = names('pm-stuck')
    make_stuck(stuck, tmp_path)
    stopped = names('pm-stopped')
    podman('run', '--detach', '--name', stopped, '--restart', 'always', IMAGE, 'sleep', '1000')
    podman('stop', '--time', '1', stopped)
    exited_zero = names('pm-onfail0')
    podman('run', '--detach', '--name', exited_zero, '--restart', 'on-failure', IMAGE, 'true')
    wait_for(lambda: inspect(exited_zero)['State']['Status'] == 'exited', what='the on-failure container to exit')
    mapped = names('pm-mapped')
    podman('run', '--detach', '--name', mapped, '--restart', 'always', '--uidmap', '0:300000:65536',
           '--gidmap', '0:300000:65536', IMAGE, 'sleep', '1000')
    plain = names('pm-norestart')
    podman('run', '--detach', '--name', plain, IMAGE, 'sleep', '1000')

    finding = detect('podman_restart_userns')

    assert finding['status'] == 'affected'
    stuck_instance = by_name(finding, stuck)
    assert stuck_instance['status'] == 'affected'
    assert 'STUCK' in stuck_instance['summary']
    evidence = stuck_instance['evidence']
    assert evidence['restart_policy'] == 'always' and evidence['restart_count'] == 1
    assert evidence['uid_map'] == ['0:200000:65536']
    assert evidence['outcome'] == 'restart_failed'
    assert evidence['podman_version'] == finding['evidence']['podman_version']
    assert by_name(finding, stopped)['status'] == 'ok'
    assert 'person' in by_name(finding, stopped)['summary']
    assert by_name(finding, exited_zero)['status'] == 'ok'
    assert 'exited 0 under on-failure' in by_name(finding, exited_zero)['summary']
    mapped_instance = by_name(finding, mapped)
    assert mapped_instance['status'] == 'ok'
    assert 'no AppArmor in this kernel' in mapped_instance['summary']
    assert mapped_instance['evidence']['matches_apparmor_pattern'] is False
    # No restart policy: not a candidate at all.
    assert not [i for i in finding['evidence']['instances'] if i['evidence'].get('name') == plain]


def test_restarting_container_is_not_stuck(names):
    """Negative: a plain --restart always container that keeps exiting is brought back by podman."""
    name = names('pm-loop')
    podman('run', '--detach', '--name', name, '--restart', 'always', IMAGE, 'sh', '-c', 'sleep 1; exit 1')
    wait_for(lambda: inspect(name)['RestartCount'] >= 2, what='two restarts')
    finding = detect('podman_restart_userns')
    assert by_name(finding, name)['status'] == 'ok'


def test_podman_that_errors_gives_an_error_finding(tmp_path):
    """Bad input: podman that fails (unreadable containers.conf) is an error with the reason, not a traceback.
    podman ps is the first command the detections run."""
    bad = tmp_path / 'containers.conf'
    bad.write_text('[engine\nthis is not toml')
    env = dict(PODMAN_ENV, CONTAINERS_CONF=str(bad))
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        finding = detect('podman_restart_userns')
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert finding['status'] == 'error'
    assert 'podman ps as root failed' in finding['summary']


def cheap_and_info(user=None):
    """podman's four facts from podman --version and files (podman/facts.py), and from podman info."""
    ctx = AuditContext()
    cli = podman_cli.PodmanCli(ctx, user)
    _rc, out, _err = cli.execute(['--version'], 'podman --version')
    cheap = podman_facts.cheap(ctx, cli, out)
    return cheap, cli.info()


FACTS = ('version', 'rootless', 'apparmor_enabled', 'event_logger')


@pytest.mark.parametrize('case', ['build containers.conf', 'events_logger none', 'no CONTAINERS_CONF, root XDG file'])
def test_the_facts_without_podman_info_are_what_podman_info_says(tmp_path, monkeypatch, case):
    """Each answer of the cheap sources is compared with this podman 4.3.1's own podman info, as root.
    4.3.1 reads a user's containers.conf only rootless (containers/common v0.50.1 config_linux.go:36-45):
    root's XDG_CONFIG_HOME file changes nothing, and both sides must say so."""
    with open(os.path.join(BUILD, 'containers.conf')) as handle:
        build_conf = handle.read()
    assert '[engine]' in build_conf and 'events_logger' not in build_conf
    if case == 'events_logger none':
        conf = tmp_path / 'containers.conf'
        conf.write_text(build_conf.rstrip('\n') + '\nevents_logger = "none"\n')
        monkeypatch.setenv('CONTAINERS_CONF', str(conf))
    elif case == 'no CONTAINERS_CONF, root XDG file':
        monkeypatch.delenv('CONTAINERS_CONF', raising=False)
        xdg = tmp_path / 'xdg' / 'containers'
        xdg.mkdir(parents=True)
        (xdg / 'containers.conf').write_text('[engine]\nevents_logger = "none"\n')
        monkeypatch.setenv('XDG_CONFIG_HOME', str(tmp_path / 'xdg'))
    else:
        monkeypatch.setenv('CONTAINERS_CONF', os.path.join(BUILD, 'containers.conf'))
    cheap, info = cheap_and_info()
    assert dict((f, cheap[f]) for f in FACTS) == dict((f, info[f]) for f in FACTS), cheap['sources']
    assert cheap['event_logger'] == ('none' if case == 'events_logger none' else 'file')


@pytest.mark.parametrize('xdg', [False, True])
def test_the_rootless_users_facts_without_podman_info_are_what_podman_info_says(tmp_path, monkeypatch, xdg):
    """The rootless user through runuser: rootless, no AppArmor, and its own containers.conf, found
    through XDG_CONFIG_HOME (runuser passes it on) or its HOME."""
    if xdg:
        config = tempfile.mkdtemp(prefix='postmortem-xdg-')
        os.makedirs(os.path.join(config, 'containers'))
        with open(os.path.join(config, 'containers', 'containers.conf'), 'w') as handle:
            handle.write('[engine]\nevents_logger = "none"\n')
        # The user's own directory: rootless podman also keeps its CNI lock under XDG_CONFIG_HOME.
        for path in (config, os.path.join(config, 'containers'), os.path.join(config, 'containers', 'containers.conf')):
            shutil.chown(path, ROOTLESS, ROOTLESS)
        monkeypatch.setenv('XDG_CONFIG_HOME', config)
        # CONTAINERS_CONF would be the only file read (config.go:735-741).
        monkeypatch.delenv('CONTAINERS_CONF', raising=False)
    try:
        cheap, info = cheap_and_info(ROOTLESS)
    finally:
        if xdg:
            shutil.rmtree(config, ignore_errors=True)
    assert dict((f, cheap[f]) for f in FACTS) == dict((f, info[f]) for f in FACTS), cheap['sources']
    assert cheap['rootless'] is True and cheap['event_logger'] == ('none' if xdg else info['event_logger'])


def test_export_probe_measures_the_rootful_shift(names):
    mapped = names('pm-export-mapped')
    podman('create', '--name', mapped, '--uidmap', '0:200000:65536', '--gidmap', '0:200000:65536', IMAGE, 'true')
    plain = names('pm-export-plain')
    podman('create', '--name', plain, IMAGE, 'true')

    without_probe = detect('podman_export_idmap')
    assert by_name(without_probe, mapped)['status'] == 'at_risk'
    assert by_name(without_probe, plain)['status'] == 'ok'

    finding = detect('podman_export_idmap', probes=['export_owners'])
    instance = by_name(finding, mapped)
    assert instance['status'] == 'affected'
    assert instance['evidence']['probe']['owners']['etc/passwd'] == '200000/200000'
    assert instance['evidence']['probe']['owners']['usr/bin/su'] == '200000/200000'
    assert instance['evidence']['probe']['written_to_disk'] is False
    # Only mapped containers are exported by the probe.
    assert 'probe' not in by_name(finding, plain)['evidence']


def test_an_identity_mapping_shifts_nothing_and_is_ok(names):
    """A mapping of its own that moves no ID (what a rootful --userns=keep-id container gets from podman
    4.5 on: the host's own 0:0:4294967295; 4.3.1 refuses keep-id for root, so --uidmap 0:0:65536 here):
    its export writes the owners the container sees, and the detection says so instead of at_risk."""
    identity = names('pm-export-identity')
    podman('create', '--name', identity, '--uidmap', '0:0:65536', '--gidmap', '0:0:65536', IMAGE, 'true')
    assert inspect(identity)['HostConfig']['IDMappings'] == {'UidMap': ['0:0:65536'], 'GidMap': ['0:0:65536']}
    listing = subprocess.run('podman export %s | tar tvf - etc/passwd' % identity, shell=True, env=PODMAN_ENV,
                             capture_output=True, text=True, timeout=120, check=True).stdout
    assert ' root/root ' in listing or ' 0/0 ' in listing, listing
    instance = by_name(detect('podman_export_idmap'), identity)
    assert instance['status'] == 'ok', instance['summary']
    assert instance['evidence']['mapping'] == 'identity'


def test_rootful_safe_export_maps_a_uidmap_container_back(names, tmp_path):
    """Rootful, paused commit (podman's default): the archive has 0/0 where podman export has 200000/200000."""
    mapped = names('pm-safe-rootful')
    podman('run', '--detach', '--name', mapped, '--uidmap', '0:200000:65536', '--gidmap', '0:200000:65536',
           IMAGE, 'sleep', '1000')
    dest = str(tmp_path / 'rootful.tar')
    proc = run_module(tmp_path, 'homelab.postmortem.podman_safe_export', {'container': mapped, 'dest': dest})
    assert 'CHANGED' in proc.stdout, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.split(' => ', 1)[1])
    assert result['owners']['etc/passwd'] == '0/0' and result['mapping'] == ['0:200000:65536']
    assert '--pause=true' in ' '.join(result['steps'])
    listing = subprocess.run(['tar', '--numeric-owner', '-tvf', dest, 'etc/passwd'], capture_output=True, text=True,
                             check=True).stdout
    assert ' 0/0 ' in listing
    images = podman('images', '--format', '{{.Repository}}').stdout
    assert 'postmortem-safe-export' not in images
    check = run_module(tmp_path, 'homelab.postmortem.podman_safe_export',
                       {'container': mapped, 'dest': str(tmp_path / 'never.tar')}, check=True)
    assert 'CHANGED' in check.stdout and not os.path.exists(str(tmp_path / 'never.tar'))


@pytest.fixture(scope='module')
def rootless_image():
    """The tiny image in the rootless user's own storage (vfs)."""
    tar = os.path.join('/tmp', 'postmortem-tiny-%s.tar' % ROOTLESS)
    shutil.copy(ENV['POSTMORTEM_TINY_TAR'], tar)
    os.chmod(tar, 0o644)
    try:
        if podman('image', 'exists', IMAGE, user=ROOTLESS, check=False).returncode != 0:
            podman('import', '--quiet', '--change', 'CMD ["/bin/sh"]', tar, IMAGE, user=ROOTLESS)
    finally:
        os.unlink(tar)
    return IMAGE


def test_rootless_keep_id_export_is_shifted_and_the_safe_export_is_not(names, rootless_image, tmp_path, request):
    keep_id = names('pm-keepid', user=ROOTLESS)
    podman('create', '--name', keep_id, '--userns=keep-id', '--network', 'none', rootless_image, 'sleep', '1000',
           user=ROOTLESS)
    podman('start', keep_id, user=ROOTLESS)

    finding = detect('podman_export_idmap', probes=['export_owners'], settings={'podman_export_idmap': {'users': [ROOTLESS]}})
    instance = by_name(finding, keep_id)
    assert instance['status'] == 'affected'
    assert instance['evidence']['user'] == ROOTLESS
    assert instance['evidence']['probe']['owners']['etc/passwd'] == '1/1'
    assert finding['status'] == 'affected'

    # pytest's tmp_path is root's (0700); the rootless user writes its archive under /tmp.
    dest_dir = tempfile.mkdtemp(prefix='postmortem-export-')
    shutil.chown(dest_dir, ROOTLESS)
    request.addfinalizer(lambda: shutil.rmtree(dest_dir, ignore_errors=True))
    dest = os.path.join(dest_dir, 'keepid.tar')
    result = run_safe_export(tmp_path, keep_id, dest, expect_owners={'home/user': '1000:1000'})
    assert result['changed'] is True, result
    assert result['owners']['etc/passwd'] == '0/0'
    assert result['owners']['usr/bin/su'] == '0/0'
    assert result['owners']['home/user'] == '1000/1000'
    listing = subprocess.run(['tar', '--numeric-owner', '-tvf', dest, 'etc/passwd', 'usr/bin/su'],
                             capture_output=True, text=True, check=True).stdout
    assert listing.count(' 0/0 ') == 2, listing
    assert oct(os.stat(dest).st_mode & 0o777) == '0o600'
    assert no_temporaries(dest_dir)

    again = run_safe_export(tmp_path, keep_id, dest)
    assert again['changed'] is False

    # Verification that fails: nothing written, no temporaries left.
    wrong = os.path.join(dest_dir, 'wrong.tar')
    failed = run_safe_export(tmp_path, keep_id, wrong, expect_owners={'home/user': '0:0'}, expect_failure=True)
    assert 'failed verification' in failed['msg']
    assert not os.path.exists(wrong)
    assert no_temporaries(dest_dir)


def no_temporaries(dest_dir):
    leftovers = [f for f in os.listdir(dest_dir) if '.postmortem-' in f]
    images = podman('images', '--format', '{{.Repository}}', user=ROOTLESS).stdout
    containers = podman('ps', '--all', '--format', '{{.Image}}', user=ROOTLESS).stdout
    return not leftovers and 'postmortem-safe-export' not in images and 'postmortem-safe-export' not in containers


def run_safe_export(tmp_path, container, dest, expect_owners=None, expect_failure=False):
    """The module through a real play, as the rootless user (become_method su: no sudo here)."""
    # Rootless podman on cgroup v1 cannot pause a container ("this container does not have
    # a cgroup"), so the commit runs unpaused here.
    export_args = {'container': container, 'dest': dest, 'pause': False, 'expect_owners': expect_owners or {}}
    export_task = {
        'homelab.postmortem.podman_safe_export': export_args,
        'become': True, 'become_user': ROOTLESS, 'become_method': 'ansible.builtin.su',
        'register': 'safe_export', 'ignore_errors': True,
    }
    save_task = {'ansible.builtin.copy': {'content': '{{ safe_export | to_json }}',
                                          'dest': str(tmp_path / 'result.json')}}
    # Debian's own Python: the rootless user cannot read the repository's virtualenv.
    play = [{'hosts': 'localhost', 'gather_facts': False, 'vars': {'ansible_python_interpreter': '/usr/bin/python3'},
             'tasks': [export_task, save_task]}]
    playbook = tmp_path / 'safe-export.yml'
    playbook.write_text(json.dumps(play))
    proc = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), '-i', 'localhost,', '-c', 'local', str(playbook)],
                          env=ansible_env(ANSIBLE_SHELL_ALLOW_WORLD_READABLE_TEMP='1'), cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((tmp_path / 'result.json').read_text())
    assert bool(result.get('failed')) is expect_failure, result
    return result


def test_audit_playbook_reports_podman_per_host(names, tmp_path):
    """The fleet path: both podman detections through homelab.postmortem.audit, a bad user is that user's error."""
    mapped = names('pm-audit-mapped')
    podman('create', '--name', mapped, '--uidmap', '0:200000:65536', '--gidmap', '0:200000:65536', IMAGE, 'true')
    run = run_audit(tmp_path, {'all': {'hosts': {'podhost': local_host()}}}, extra_vars={
        'postmortem_checks': ['podman_restart_userns', 'podman_export_idmap'],
        'postmortem_settings': {'podman_export_idmap': {'users': ['no-such-user-pm']}},
    })
    assert run.proc.returncode == 0, run.output
    export = run.finding('podhost', 'podman_export_idmap')
    assert by_name(export, mapped)['status'] == 'at_risk'
    bad_user = [i for i in export['evidence']['instances'] if i['name'] == 'podman of no-such-user-pm']
    assert bad_user and bad_user[0]['status'] == 'error', export
    restart = run.finding('podhost', 'podman_restart_userns')
    assert restart['evidence']['podman_version'] == '4.3.1'
    assert 'no AppArmor in this kernel' in restart['evidence']['apparmor']
