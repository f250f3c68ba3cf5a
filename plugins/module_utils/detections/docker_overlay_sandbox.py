# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_overlay_sandbox: running containers cut off their swarm overlay network.

The overlay driver counts the endpoints joined to each network on a node and
destroys the network's sandbox at zero. Since Engine 29.0.0 a container start
that fails after the driver's Join is rolled back with two Leaves, so every
failed start (a taken host port, a bad endpoint option) takes one join too
many; healthy containers lose the network while ``docker ps`` says running.
The state is the failure: whatever the Engine version, a running container
whose overlay interface has no carrier, or whose network's sandbox is gone, is
cut off. Read-only: the Engine API over its socket, the sandbox files, and the
interface flags read inside each container's own network namespace.

Where the sandboxes are is the daemon's own answer: the directory of each
running container's sandbox key. An exec root that is only assumed (the
setting, dockerd's command line and config file, the default) never makes a
container cut off: a sandbox missing there is unknown, not gone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, make_remediation

ID = 'docker_overlay_sandbox'
GROUP = 'docker'
APPLIES = {'image': False, 'binary': None,
           'root': "the daemon's socket and the containers' network namespaces are root's"}
TITLE = 'A failing swarm task cuts healthy containers off their overlay network while docker ps says running'
REFERENCES = [
    'https://github.com/moby/moby/pull/50945 (rollback with sbLeave: a second Leave on failure, first in v29.0.0)',
    'moby/moby daemon/libnetwork/endpoint.go Endpoint.sbJoin; drivers/overlay/ov_network.go leaveSandbox',
    'moby/moby#53834 (the report; not found upstream, no fix released)',
]
REMEDIATION = make_remediation(
    role='homelab.postmortem.docker_overlay_recover',
    role_vars={'docker_overlay_recover_restart': True},
    manual=[
        'Fix the failing start first: docker service ps SERVICE --no-trunc shows the error; scale the service '
        'to 0 (docker service scale SERVICE=0) while you fix it.',
        'Then restart the daemon on each affected node, one node at a time (systemctl restart docker), and '
        'start the containers without a restart policy that were running (docker start NAME).',
        'Check again: the sandbox <exec-root>/netns/<epoch>-<network id> exists and eth0 in each container has a carrier.',
    ],
    disruption='restart',
)
PROBES = ('overlay_ping',)
SETTINGS = {
    'socket': {'type': 'str', 'default': 'unix:///var/run/docker.sock',
               'description': "The daemon's API socket (DOCKER_HOST form, unix only)."},
    'exec_root': {'type': 'str', 'default': None,
                  'description': "The daemon's exec root, used only where a container's sandbox key does not show it "
                                 "(NetworkSettings.SandboxKey is <exec-root>/netns/<id>); unset: as dockerd resolves it "
                                 "(--exec-root, else \"exec-root\" in its config file, else its default)."},
    'api_timeout': {'type': 'int', 'default': 10, 'min': 1, 'max': 300,
                    'description': 'Seconds one Engine API request may take.'},
    'affected_from': {'type': 'version', 'default': '29.0.0',
                      'description': 'First Engine version whose failed starts take a join too many (moby PR #50945).'},
    'fixed_in': {'type': 'version', 'default': None,
                 'description': 'First Engine version with the fix; unset while upstream has none.'},
    'journal_unit': {'type': 'str', 'default': 'docker.service',
                     'description': 'Unit whose journal is searched for "Peer entry was not in db" warnings.'},
    'probe_max_containers': {'type': 'int', 'default': 20, 'min': 1, 'max': 500,
                             'description': 'Containers the overlay_ping probe sends one ping from.'},
}

_SELF = sys.modules[__name__]

# Task errors of a start that failed during network setup: each may have taken a join off the count.
NETWORK_SETUP_ERRORS = re.compile(r'endpoint join|failed to set up container networking|port is already allocated|'
                                  r'driver failed programming external connectivity|network sandbox join failed',
                                  re.IGNORECASE)
PEER_WARNING = 'Peer entry was not in db'
MAX_TASK_CONTAINERS = 200
_LINK_RE = re.compile(r'^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$')


def sandbox_files(netns_dir, network_id):
    """Sandbox files of a network: <epoch>-<id> cut to 12 characters, any epoch (1-, 2-, 10-...)."""
    try:
        names = os.listdir(netns_dir)
    except OSError:
        return None
    found = []
    for name in names:
        epoch, _sep, rest = name.partition('-')
        if epoch.isdigit() and epoch.isascii() and rest and len(name) <= 12 and network_id.startswith(rest) \
                and (len(name) == 12 or rest == network_id):
            found.append(os.path.join(netns_dir, name))
    return sorted(found)


def read_links(ctx, pid):
    """{mac: (name, flags, state)} of the interfaces inside process ``pid``'s network namespace."""
    nsenter, ip = ctx.which('nsenter'), ctx.which('ip')
    if not nsenter or not ip:
        raise HostInputError('nsenter or ip is not installed; interfaces inside containers cannot be read',
                             finding_status='unknown')
    rc, out, err = ctx.run_command([nsenter, '--target', str(pid), '--net', ip, '-o', 'link', 'show'])
    if rc != 0:
        return None, (err or out).strip()[:200] or 'nsenter failed (rc %d)' % rc
    links = {}
    for line in out.splitlines():
        match = _LINK_RE.match(line.strip())
        mac = re.search(r'link/ether\s+([0-9a-f:]{17})', line)
        if match and mac:
            state = re.search(r'\bstate\s+(\S+)', match.group('rest'))
            links[mac.group(1).lower()] = (match.group('name'), match.group('flags').split(','),
                                           state.group(1) if state else None)
    return links, None


def _ping(ctx, pid, address):
    nsenter = ctx.which('nsenter')
    ping = ctx.which('ping')
    cmd = [nsenter, '--target', str(pid), '--net'] + ([ping] if ping else [ctx.which('busybox') or 'busybox', 'ping'])
    rc, out, err = ctx.run_command(cmd + ['-c', '1', '-W', '2', address])
    return rc == 0, (out + err).strip().splitlines()[-1:] or ['']


def _engine(api, settings):
    version = api.get('/version') or {}
    info = api.get('/info') or {}
    if not isinstance(version, dict) or not isinstance(info, dict):
        raise docker_api.DockerProblem('Docker API /version or /info did not answer an object')
    engine = version.get('Version') if isinstance(version.get('Version'), str) else None
    number = hostio.version_tuple(engine or '')
    first = hostio.version_tuple(settings['affected_from'])
    fixed = hostio.version_tuple(settings['fixed_in']) if settings.get('fixed_in') else None
    swarm = info.get('Swarm') if isinstance(info.get('Swarm'), dict) else {}
    return {
        'engine_version': engine,
        'api_version': version.get('ApiVersion'),
        'in_affected_range': bool(number) and hostio.version_in_range(number, first, fixed),
        'affected_range': '>= %s%s' % (settings['affected_from'], (', < %s' % settings['fixed_in']) if settings.get('fixed_in') else ''),
        'swarm': swarm.get('LocalNodeState'),
        'node_id': swarm.get('NodeID') or None,
        'manager': bool(swarm.get('ControlAvailable')),
    }


def _failed_setup_tasks(api, engine):
    """{network id: [task evidence]} for this node's tasks that failed during network setup.

    Managers list the node's tasks (/tasks); a worker cannot, so there the task
    containers the node kept (label com.docker.swarm.task.id) are inspected instead.
    """
    found = {}
    if engine['manager']:
        tasks = api.get('/tasks', {'filters': json.dumps({'node': [engine['node_id']]})}) or []
        for task in tasks if isinstance(tasks, list) else []:
            status = task.get('Status') if isinstance(task, dict) and isinstance(task.get('Status'), dict) else {}
            targets = [a.get('Network', {}).get('ID') for a in task.get('NetworksAttachments') or [] if isinstance(a, dict)]
            targets += [n.get('Target') for n in (task.get('Spec') or {}).get('Networks') or [] if isinstance(n, dict)]
            _add_failure(found, status.get('State'), status.get('Err'), targets,
                         {'task': task.get('ID'), 'service': task.get('ServiceID'), 'at': status.get('Timestamp')})
        return found
    listed = api.get('/containers/json', {'all': '1', 'filters': json.dumps({'label': ['com.docker.swarm.task.id'],
                                                                             'status': ['created', 'exited']})}) or []
    for entry in (listed if isinstance(listed, list) else [])[:MAX_TASK_CONTAINERS]:
        try:
            detail = api.get(api.object_path('containers', entry.get('Id')) + '/json')
        except docker_api.DockerProblem:
            continue  # removed meanwhile
        state = detail.get('State') or {}
        labels = (detail.get('Config') or {}).get('Labels') or {}
        networks = ((detail.get('NetworkSettings') or {}).get('Networks') or {}).values()
        _add_failure(found, 'failed', state.get('Error'), [n.get('NetworkID') for n in networks if isinstance(n, dict)],
                     {'task': labels.get('com.docker.swarm.task.id'), 'service': labels.get('com.docker.swarm.service.id'),
                      'at': state.get('FinishedAt')})
    return found


def _add_failure(found, state, error, targets, entry):
    error = str(error or '')
    if state not in ('failed', 'rejected') or not NETWORK_SETUP_ERRORS.search(error):
        return
    # The cause is at the end of swarm's long error chains ("... Bind for 0.0.0.0:8080 failed: port is
    # already allocated"): keep both ends.
    entry = dict(entry, state=state, error=error if len(error) <= 400 else error[:150] + ' ... ' + error[-250:])
    for network in set(t for t in targets if t) or set(['(none)']):
        found.setdefault(network, []).append(entry)


def _peer_warnings(ctx, unit):
    if not unit:
        return None, 'not read (setting journal_unit is empty)'
    lines, problem = hostio.read_journal(ctx.run_command, ctx.which('journalctl'), unit, 20000)
    if problem:
        return None, problem
    return sum(1 for line in lines if PEER_WARNING in line), 'journal of %s (last 20000 lines)' % unit


def _sandbox_dir(detail, assumed):
    """(netns dir, confirmed, where it comes from) for one container's sandboxes.

    The daemon names every sandbox under one base path, <exec-root>/netns: the container's
    (NetworkSettings.SandboxKey = sb.Key(): daemon/container_operations.go:1178 at v20.10.24, l.1151 at
    docker-v29.0.0, l.1182 at v29.7.2) and the overlay network's (drivers/overlay/ov_network.go:752 of the
    vendored libnetwork at v20.10.24, l.593 at 29.0.0, l.580 at 29.7.2); both are osl.GenerateKey, which is
    basePath() + "/" + id (osl/namespace_linux.go:192 at v20.10.24, l.101 at 29.0.0, l.102 at 29.7.2). So
    the directory of a sandbox key whose file is there is where the network's sandbox must be.
    """
    settings = detail.get('NetworkSettings') if isinstance(detail.get('NetworkSettings'), dict) else {}
    key = settings.get('SandboxKey')
    if isinstance(key, str) and key.startswith('/') and os.path.exists(key):
        return os.path.dirname(key), True, 'the directory of its sandbox key %s' % key
    why = ('its sandbox key %s is not there as seen from here' % key if isinstance(key, str) and key
           else 'the daemon reports no sandbox key for it')
    return assumed['netns_dir'], False, '%s; the exec root is assumed (%s)' % (why, assumed['from'])


def _container_instance(ctx, api, network, cid, entry, assumed, peers_ip, probe):
    name = 'container %s on %s' % (entry.get('Name') or cid[:12], network['Name'])
    evidence = {'container': entry.get('Name'), 'id': cid[:12], 'network': network['Name'],
                'ip': entry.get('IPv4Address'), 'mac': entry.get('MacAddress')}
    try:
        detail = api.get(api.object_path('containers', cid) + '/json')
    except docker_api.DockerProblem as exc:
        return instance(name, 'ok', '%s left while it was read (%s).' % (name, exc), evidence)
    state = detail.get('State') if isinstance(detail, dict) and isinstance(detail.get('State'), dict) else {}
    evidence['state'] = state.get('Status')
    if not state.get('Running') or not isinstance(state.get('Pid'), int) or state.get('Pid') <= 0:
        return instance(name, 'ok', '%s is %s; only running containers can be cut off.' % (name, state.get('Status')), evidence)
    evidence['restart_policy'] = ((detail.get('HostConfig') or {}).get('RestartPolicy') or {}).get('Name') or 'no'
    netns_dir, confirmed, where = _sandbox_dir(detail, assumed)
    sandbox = sandbox_files(netns_dir, network['Id'])
    evidence.update(sandbox=sandbox or None, netns_dir=netns_dir, netns_dir_from=where, netns_dir_confirmed=confirmed)
    links, problem = read_links(ctx, state['Pid'])
    if links is None:
        return instance(name, 'ok', '%s exited while it was read (%s).' % (name, problem), evidence)
    link = links.get(str(entry.get('MacAddress') or '').lower())
    if link:
        evidence.update(interface=link[0], flags=link[1], link_state=link[2])
    carrier = bool(link) and 'NO-CARRIER' not in link[1] and 'LOWER_UP' in link[1]
    evidence['carrier'] = carrier
    if probe and peers_ip:
        evidence['ping'] = {'to': peers_ip}
        evidence['ping']['ok'], evidence['ping']['last_line'] = _ping(ctx, state['Pid'], peers_ip)
    cut, unsure = [], None
    if sandbox is None:
        unsure = '%s cannot be listed (%s)' % (netns_dir, where)
    elif not sandbox and confirmed:
        cut.append("the network's sandbox is gone")
    elif not sandbox:
        # Only the daemon's own key says where sandboxes are; a miss where one was assumed proves nothing.
        unsure = 'none in %s, and %s' % (netns_dir, where)
    if unsure:
        evidence['sandbox_unknown'] = unsure
    if not link:
        cut.append('no interface with its MAC %s' % entry.get('MacAddress'))
    elif not carrier:
        cut.append('%s has no carrier (%s)' % (link[0], ','.join(link[1])))
    if evidence.get('ping') and not evidence['ping']['ok']:
        cut.append('a ping to %s got no answer' % peers_ip)
    if cut:
        return instance(name, 'affected', '%s is running but cut off: %s.' % (name, '; '.join(cut)), evidence)
    summary = '%s has its overlay interface %s with a carrier' % (name, link[0])
    if evidence.get('ping'):
        summary += ' and answered a ping to %s' % peers_ip
    if unsure:
        return instance(name, 'unknown', "%s, but its network's sandbox could not be looked for: %s." % (summary, unsure),
                        evidence)
    return instance(name, 'ok', summary + '.', evidence)


def _network_instances(ctx, api, network, assumed, failed, engine, budget):
    detail = api.get(api.object_path('networks', network['Id']))
    containers = detail.get('Containers') if isinstance(detail, dict) and isinstance(detail.get('Containers'), dict) else {}
    local = dict((cid, e) for cid, e in containers.items() if not cid.startswith('lb-') and isinstance(e, dict))
    lb = [e for cid, e in containers.items() if cid.startswith('lb-') and isinstance(e, dict)]
    found = []
    for cid, entry in sorted(local.items(), key=lambda item: str(item[1].get('Name'))):
        peer = (lb[0].get('IPv4Address') if lb else None) or next(
            (e.get('IPv4Address') for c, e in local.items() if c != cid and e.get('IPv4Address')), None)
        probe = 'overlay_ping' in ctx.probes and budget[0] > 0
        if probe:
            budget[0] -= 1
        found.append(_container_instance(ctx, api, network, cid, entry, assumed, (peer or '').split('/')[0] or None, probe))
    confirmed = [i['evidence']['netns_dir'] for i in found if i['evidence'].get('netns_dir_confirmed')]
    netns_dir = confirmed[0] if confirmed else assumed['netns_dir']
    sandbox = sandbox_files(netns_dir, network['Id'])
    failures = failed.get(network['Id'], [])
    if failures:
        name = 'failed starts on %s' % network['Name']
        evidence = {'network': network['Name'], 'failed_network_setup_tasks': len(failures), 'tasks': failures[:10],
                    'engine_version': engine['engine_version'], 'affected_range': engine['affected_range']}
        if engine['in_affected_range']:
            found.append(instance(name, 'at_risk', '%d task(s) on this node failed during network setup on %s; on Engine '
                                  '%s each takes one join too many, and the network is cut off when the count reaches '
                                  'zero.' % (len(failures), network['Name'], engine['engine_version']), evidence))
        else:
            found.append(instance(name, 'ok', '%d task(s) failed during network setup on %s; Engine %s rolls a failed '
                                  'start back with one Leave, outside the affected range (%s).'
                                  % (len(failures), network['Name'], engine['engine_version'], engine['affected_range']),
                                  evidence))
    return found, {'network': network['Name'], 'id': network['Id'], 'local_containers': len(local),
                   'netns_dir': netns_dir, 'netns_dir_confirmed': bool(confirmed),
                   'sandbox': sandbox, 'failed_network_setup_tasks': len(failures)}


def _assumed_exec_root(ctx, settings, socket):
    """Where the exec root is taken to be when no sandbox key shows it: the setting, else as dockerd resolved it."""
    if settings.get('exec_root'):
        assumed = {'exec_root': settings['exec_root'], 'from': 'setting exec_root', 'notes': []}
    else:
        found = dockerd.exec_root_for_socket(ctx, socket)
        assumed = dict((k, found[k]) for k in ('exec_root', 'from', 'config_file', 'dockerd_pid', 'notes'))
    assumed['netns_dir'] = os.path.join(assumed['exec_root'], 'netns')
    return assumed


def _exec_root_evidence(evidence, assumed, per_network):
    confirmed = [n['netns_dir'] for n in per_network if n['netns_dir_confirmed']]
    evidence['exec_root_assumed'] = dict((k, v) for k, v in assumed.items() if k != 'netns_dir')
    if confirmed:
        evidence.update(exec_root=os.path.dirname(confirmed[0]), netns_dir=confirmed[0],
                        exec_root_from="the running containers' sandbox keys (NetworkSettings.SandboxKey)")
        if os.path.realpath(confirmed[0]) != os.path.realpath(assumed['netns_dir']):
            evidence['exec_root_note'] = ('the sandbox keys put the exec root at %s, not at %s (%s); the keys are '
                                          "the daemon's own answer" % (evidence['exec_root'], assumed['exec_root'],
                                                                       assumed['from']))
    else:
        evidence.update(exec_root=assumed['exec_root'], netns_dir=assumed['netns_dir'],
                        exec_root_from='%s; no running container showed it by its sandbox key' % assumed['from'])


def absent(ctx):
    """Why there is no daemon to judge (asked before root is required; the socket's directory is world-readable)."""
    path = docker_api.socket_path(ctx.settings_for(_SELF)['socket'])
    return None if os.path.lexists(path) else 'No Docker daemon socket at %s.' % path


def detect(ctx):
    settings = ctx.settings_for(_SELF)
    path = docker_api.socket_path(settings['socket'])
    if not os.path.exists(path):
        return make_finding(_SELF, 'not_applicable', 'No Docker daemon socket at %s.' % path)
    api = docker_api.DockerApi(path, settings['api_timeout'])
    engine = _engine(api, settings)
    assumed = _assumed_exec_root(ctx, settings, path)
    networks = api.get('/networks', {'filters': json.dumps({'driver': ['overlay']})}) or []
    networks = [n for n in networks if isinstance(n, dict) and isinstance(n.get('Id'), str) and not n.get('Ingress')]
    evidence = dict(engine, socket=path, probe='overlay_ping' in ctx.probes)
    if not networks:
        _exec_root_evidence(evidence, assumed, [])
        return make_finding(_SELF, 'not_applicable', 'No overlay network on this daemon (swarm %s).' % engine['swarm'],
                            evidence=evidence)
    failed = _failed_setup_tasks(api, engine) if engine['swarm'] == 'active' else {}
    evidence['peer_entry_warnings'], evidence['peer_entry_warnings_from'] = _peer_warnings(ctx, settings['journal_unit'])
    instances, per_network = [], []
    budget = [settings['probe_max_containers']]
    for network in sorted(networks, key=lambda n: str(n.get('Name'))):
        found, summary = _network_instances(ctx, api, network, assumed, failed, engine, budget)
        instances.extend(found)
        per_network.append(summary)
    evidence['networks'] = per_network
    _exec_root_evidence(evidence, assumed, per_network)
    if not instances:
        return make_finding(_SELF, 'not_applicable', 'No container on this node is attached to an overlay network.',
                            evidence=evidence)
    cut = [i for i in instances if i['status'] == 'affected']
    risky = [i for i in instances if i['status'] == 'at_risk']
    unsure = [i for i in instances if i['status'] == 'unknown']
    if cut:
        summary = '%d running container(s) cut off their overlay network (%s); docker ps still says running.' % (
            len(cut), ', '.join(i['evidence']['container'] or i['evidence']['id'] for i in cut))
    elif risky:
        summary = risky[0]['summary']
    elif unsure:
        summary = "%d running container(s) whose network's sandbox could not be looked for (%s): %s." % (
            len(unsure), ', '.join(i['evidence']['container'] or i['evidence']['id'] for i in unsure),
            unsure[0]['evidence']['sandbox_unknown'])
    else:
        summary = 'Every running container on %d overlay network(s) has its sandbox and a carrier.' % len(per_network)
    return make_finding(_SELF, 'ok', summary, evidence=evidence, instances=instances)
