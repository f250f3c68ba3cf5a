"""podman_restart_userns and podman_export_idmap against real podman 5.4.2.

Debian 12 has podman 4.3.1; Debian 13's podman 5.4.2 needs a newer libc than this host's, so it runs
where it was built for: in the postmortem-podman13 image (scripts/setup-podman.sh), privileged, with
the host's cgroup tree and tmpfs storage (as roles/podman_quadlet/molecule/default does). The
detections run there too, from this tree's installed collection (build/collections, mounted
read-only, with ansible-core's module_utils from this virtualenv), with the container's own podman,
/proc and /sys: real podman, real containers, real inspect output.

What it shows (containers/podman, libpod/define/container_inspect.go:321 @ v5.4.2: ``StoppedByUser bool
`json:"StoppedByUser,omitempty"``` - podman leaves the field out when it is false):
- a container that exited under --restart always after one restart, its restart path gone (the
  make_stuck trick of test_podman_real.py) and no event log (events_logger = "none"), has no
  StoppedByUser in its inspect output and is STUCK (affected); one a person stopped has
  "StoppedByUser": true and is ok;
- a rootful --userns=keep-id container gets the host's identity mapping (0:0:4294967295,
  pkg/util/utils.go GetKeepIDMapping @ v5.4.2 l.217-226), its export shows root's files as 0/0, and
  podman_export_idmap says ok; a --uidmap 0:200000:65536 one stays at_risk.
"""
import json
import os
import subprocess

import ansible
import pytest

from helpers import BUILD, read_env_file

pytestmark = pytest.mark.needs_root('nested rootful podman in a privileged container needs root; make test runs as root')

ENV = read_env_file('podman.env')

SCENARIO = r'''
set -e
podman import -q --change 'CMD ["/bin/sh"]' /opt/tiny.tar localhost/postmortem-tiny:1 >/dev/null
# The stuck one: created through a copy of podman that is gone after its first restart, so conmon's
# "podman container cleanup" of the next exit never runs (died, restart, init, start, died).
cp /usr/bin/podman /tmp/podman-once
/tmp/podman-once run -d --name rtest-stuck --network none --restart always \
    --uidmap 0:200000:65536 --gidmap 0:200000:65536 localhost/postmortem-tiny:1 sh -c 'sleep 2; exit 1' >/dev/null
for i in $(seq 60); do
    [ "$(podman inspect rtest-stuck --format '{{.RestartCount}}')" -ge 1 ] && break; sleep 0.5
done
rm /tmp/podman-once
podman run -d --name rtest-stopped --network none --restart always localhost/postmortem-tiny:1 sleep 1000 >/dev/null
podman stop -t 0 rtest-stopped >/dev/null
podman run -d --name rtest-keepid --network none --userns=keep-id localhost/postmortem-tiny:1 sleep 1000 >/dev/null
for i in $(seq 60); do
    case "$(podman inspect rtest-stuck --format '{{.State.Status}}')" in exited|stopped) break;; esac; sleep 0.5
done
sleep 1
echo "== version"; podman --version
echo "== inspect"; podman container inspect rtest-stuck rtest-stopped rtest-keepid
echo "== export"; podman export rtest-keepid | tar tvf - bin/busybox
echo "== findings"
PYTHONPATH=/opt/collections:/opt/ansible-core python3 -c '
import json
from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
findings, _ = registry.run(AuditContext(), registry.select(["podman_restart_userns", "podman_export_idmap"]))
print(json.dumps(findings))
'
'''


def _sections(output):
    parts, name = {}, None
    for line in output.splitlines():
        if line.startswith('== '):
            name = line[3:]
            parts[name] = []
        elif name:
            parts[name].append(line)
    return dict((k, '\n'.join(v)) for k, v in parts.items())


@pytest.fixture(scope='module')
def podman5(tmp_path_factory):
    conf = tmp_path_factory.mktemp('podman5') / 'containers.conf'
    with open(os.path.join(BUILD, 'containers.conf')) as handle:
        host_conf = handle.read()
    # No event log: only the inspect output can say whether a person stopped a container.
    conf.write_text(host_conf.replace('[engine]\n', '[engine]\nevents_logger = "none"\n'))
    assert 'events_logger = "none"' in conf.read_text()
    cmd = ['podman', 'run', '--rm', '--privileged', '--cgroupns=host', '--network', 'none',
           '-e', 'PODMAN_IGNORE_CGROUPSV1_WARNING=1',
           '-v', '/sys/fs/cgroup:/sys/fs/cgroup:rw',
           '-v', '%s:/etc/containers/containers.conf:ro' % conf,
           '-v', '%s:/opt/tiny.tar:ro' % ENV['POSTMORTEM_TINY_TAR'],
           '-v', '%s:/opt/collections:ro' % os.path.join(BUILD, 'collections'),
           '-v', '%s:/opt/ansible-core/ansible:ro' % os.path.dirname(ansible.__file__),
           '--tmpfs', '/var/lib/containers:rw,size=1g',
           ENV['POSTMORTEM_PODMAN13_IMAGE'], 'sh', '-c', SCENARIO]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False,
                          env=dict(os.environ, CONTAINERS_CONF=os.path.join(BUILD, 'containers.conf')))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    parts = _sections(proc.stdout)
    return {'version': parts['version'].strip(), 'inspect': dict((c['Name'], c) for c in json.loads(parts['inspect'])),
            'export': parts['export'], 'findings': json.loads(parts['findings'])}


def _instance(finding, name):
    found = [i for i in finding['evidence']['instances'] if i['evidence'].get('name') == name]
    assert found, json.dumps(finding)[:3000]
    return found[0]


def test_podman_5_omits_a_false_stopped_by_user_and_the_stuck_container_is_affected(podman5):
    assert podman5['version'] == 'podman version 5.4.2'
    stuck_state = podman5['inspect']['rtest-stuck']['State']
    assert 'StoppedByUser' not in stuck_state and podman5['inspect']['rtest-stuck']['RestartCount'] == 1
    assert podman5['inspect']['rtest-stopped']['State']['StoppedByUser'] is True
    finding = podman5['findings']['podman_restart_userns']
    stuck = _instance(finding, 'rtest-stuck')
    assert stuck['status'] == 'affected', stuck['summary']
    assert stuck['evidence']['stopped_by_user'] is False
    assert 'omits State.StoppedByUser, which podman 5.4.2 does when it is false' in stuck['evidence']['stopped_by_user_source']
    stopped = _instance(finding, 'rtest-stopped')
    assert stopped['status'] == 'ok' and 'stopped by a person' in stopped['summary']
    assert finding['evidence']['event_logger'] == 'none'


def test_rootful_keep_id_is_the_identity_mapping_and_exports_unshifted(podman5):
    keep_id = podman5['inspect']['rtest-keepid']['HostConfig']
    assert keep_id['IDMappings'] == {'UidMap': ['0:0:4294967295'], 'GidMap': ['0:0:4294967295']}
    assert ' 0/0 ' in podman5['export'], podman5['export']
    finding = podman5['findings']['podman_export_idmap']
    assert _instance(finding, 'rtest-keepid')['status'] == 'ok'
    assert _instance(finding, 'rtest-keepid')['evidence']['mapping'] == 'identity'
    assert _instance(finding, 'rtest-stuck')['status'] == 'at_risk'
