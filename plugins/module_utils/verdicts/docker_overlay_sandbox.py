# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_overlay_sandbox's verdict: the code that judges what the detection's first question found.

detections/docker_overlay_sandbox.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import re
import stat

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import docker_overlay_sandbox as DETECTION

# Task errors of a start that failed during network setup: each may have taken a join off the count.
NETWORK_SETUP_ERRORS = re.compile(r'endpoint join|failed to set up container networking|port is already allocated|'
                                  r'driver failed programming external connectivity|network sandbox join failed',
                                  re.IGNORECASE)
PEER_WARNING = 'Peer entry was not in db'
MAX_TASK_CONTAINERS = 200
_LINK_RE = re.compile(r'^\d+:\s+(?P<name>[^:@\s]+)(?:@\S+)?:\s+<(?P<flags>[^>]*)>(?P<rest>.*)$')


def _path_problem(path, exc):
    if exc.errno == errno.ELOOP:
        return '%s is a loop of symbolic links' % path
    if exc.errno == errno.ENOENT:
        return '%s does not exist' % path
    if exc.errno in (errno.EACCES, errno.EPERM):
        return '%s cannot be read: permission denied' % path
    return '%s cannot be read: %s' % (path, exc.strerror or exc)


def _kind(mode):
    return 'a symbolic link' if stat.S_ISLNK(mode) else hostio.file_kind(mode)


def sandbox_files(netns_dir, network_id):
    """(sandbox files of a network, None) or (None, why they cannot be looked for).

    A sandbox is ``<epoch>-<id>`` cut to 12 characters, any epoch (1-, 2-, 10-...). Nothing is
    opened: the directory is checked with stat (a named pipe or a link loop where it should be
    is a reason, never an empty directory, so never "the sandbox is gone") and each candidate
    with lstat, which must be a regular file (a sandbox is a file dockerd created, then
    bind-mounted its namespace on: os.Create at osl/namespace_linux.go:347 in the vendored
    libnetwork at v20.10.24 and daemon/libnetwork/osl/namespace_linux.go:215 at docker-v29.0.0,
    os.OpenFile with O_CREATE at l.227 of v29.7.2).
    """
    try:
        # Followed: the directory is reached through links (/var/run -> /run).
        mode = os.stat(netns_dir).st_mode
    except OSError as exc:
        return None, _path_problem(netns_dir, exc)
    except ValueError as exc:  # a NUL byte in a path a setting gave
        return None, '%s cannot be used: %s' % (netns_dir, exc)
    if not stat.S_ISDIR(mode):
        return None, '%s is %s, not a directory' % (netns_dir, _kind(mode))
    try:
        names = os.listdir(netns_dir)
    except OSError as exc:
        return None, _path_problem(netns_dir, exc)
    found = []
    for name in names:
        epoch, _sep, rest = name.partition('-')
        if not (epoch.isdigit() and epoch.isascii() and rest and len(name) <= 12 and network_id.startswith(rest)
                and (len(name) == 12 or rest == network_id)):
            continue
        path = os.path.join(netns_dir, name)
        try:
            mode = os.lstat(path).st_mode
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                continue  # removed since the listing
            return None, _path_problem(path, exc)
        if not stat.S_ISREG(mode):
            return None, 'the sandbox %s is %s, not a namespace file' % (path, _kind(mode))
        found.append(path)
    return sorted(found), None


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
    version = api.get_object('/version')
    info = api.get_object('/info')
    engine = version.get('Version')
    api_version = version.get('ApiVersion')
    number = hostio.version_tuple(engine) if isinstance(engine, str) else None
    shown = engine if isinstance(engine, str) else None
    if shown is not None and len(shown) > 64:
        shown = shown[:64] + '...'
    problem = None
    if number is None:
        # Neither in nor outside the range: failed starts on such an Engine are unknown, never ok.
        problem = ('the Engine version %s is not a version this audit can compare' % (
            repr(shown) if shown is not None else 'field (%s)' % docker_api.describe(engine)))
    first = hostio.version_tuple(settings['affected_from'])
    fixed = hostio.version_tuple(settings['fixed_in']) if settings.get('fixed_in') else None
    found = {
        'engine_version': shown,
        'api_version': api_version if isinstance(api_version, str) and len(api_version) <= 64 else None,
        'in_affected_range': hostio.version_in_range(number, first, fixed) if number else None,
        'affected_range': '>= %s%s' % (settings['affected_from'], (', < %s' % settings['fixed_in']) if settings.get('fixed_in') else ''),
        'swarm': None, 'node_id': None, 'manager': False,
    }
    if problem:
        found['engine_version_problem'] = problem
    try:
        swarm = docker_api.typed(info, 'Swarm', 'object', 'GET /info') or {}
        found.update(swarm=docker_api.typed(swarm, 'LocalNodeState', 'string', 'GET /info', label='Swarm.LocalNodeState'),
                     node_id=docker_api.typed(swarm, 'NodeID', 'string', 'GET /info', label='Swarm.NodeID') or None,
                     manager=bool(docker_api.typed(swarm, 'ControlAvailable', 'boolean', 'GET /info',
                                                   label='Swarm.ControlAvailable')))
    except docker_api.DockerProblem as exc:
        found['swarm_problem'] = str(exc)
    return found


def _failed_setup_tasks(api, engine):
    """({network id: [task evidence]}, [why some could not be read]) for this node's tasks that
    failed during network setup.

    Managers list the node's tasks (/tasks); a worker cannot, so there the task
    containers the node kept (label com.docker.swarm.task.id) are inspected instead.
    A task or container whose fields have the wrong type is named in the second list:
    skipping it silently could hide a failed start.
    """
    found, problems = {}, []
    if engine['manager']:
        where = 'GET /tasks'
        for task in api.get_list('/tasks', {'filters': json.dumps({'node': [engine['node_id']]})}):
            try:
                if not isinstance(task, dict):
                    raise docker_api.DockerProblem('Docker API %s: a task is %s, not an object' % (where, docker_api.describe(task)))
                status = docker_api.typed(task, 'Status', 'object', where) or {}
                targets = []
                for attachment in docker_api.typed(task, 'NetworksAttachments', 'list', where) or []:
                    network = docker_api.typed(attachment, 'Network', 'object', where, label='NetworksAttachments[].Network')
                    targets.append(docker_api.typed(network or {}, 'ID', 'string', where, label='NetworksAttachments[].Network.ID'))
                spec = docker_api.typed(task, 'Spec', 'object', where) or {}
                for network in docker_api.typed(spec, 'Networks', 'list', where, label='Spec.Networks') or []:
                    targets.append(docker_api.typed(network, 'Target', 'string', where, label='Spec.Networks[].Target'))
                _add_failure(found, docker_api.typed(status, 'State', 'string', where, label='Status.State'),
                             docker_api.typed(status, 'Err', 'string', where, label='Status.Err'), targets,
                             {'task': docker_api.typed(task, 'ID', 'string', where),
                              'service': docker_api.typed(task, 'ServiceID', 'string', where),
                              'at': docker_api.typed(status, 'Timestamp', 'string', where, label='Status.Timestamp')})
            except docker_api.DockerProblem as exc:
                problems.append(str(exc))
        return found, problems
    listed = api.get_list('/containers/json', {'all': '1', 'filters': json.dumps({'label': ['com.docker.swarm.task.id'],
                                                                                  'status': ['created', 'exited']})})
    for entry in listed[:MAX_TASK_CONTAINERS]:
        try:
            cid = docker_api.typed(entry, 'Id', 'string', 'GET /containers/json', required=True)
            path = api.object_path('containers', cid) + '/json'
            where = 'GET ' + path
            try:
                detail = api.get_object(path)
            except docker_api.DockerProblem as exc:
                if exc.status == 404:
                    continue  # removed meanwhile
                raise
            state = docker_api.typed(detail, 'State', 'object', where) or {}
            config = docker_api.typed(detail, 'Config', 'object', where) or {}
            labels = docker_api.typed(config, 'Labels', 'object', where, label='Config.Labels') or {}
            settings = docker_api.typed(detail, 'NetworkSettings', 'object', where) or {}
            networks = docker_api.typed(settings, 'Networks', 'object', where, label='NetworkSettings.Networks') or {}
            targets = [docker_api.typed(n, 'NetworkID', 'string', where, label='NetworkSettings.Networks[].NetworkID')
                       for n in networks.values()]
            _add_failure(found, 'failed', docker_api.typed(state, 'Error', 'string', where, label='State.Error'), targets,
                         {'task': docker_api.typed(labels, 'com.docker.swarm.task.id', 'string', where),
                          'service': docker_api.typed(labels, 'com.docker.swarm.service.id', 'string', where),
                          'at': docker_api.typed(state, 'FinishedAt', 'string', where, label='State.FinishedAt')})
        except docker_api.DockerProblem as exc:
            if exc.finding_status == 'unknown':
                raise  # the daemon stopped answering in time: every further request would wait as long
            problems.append(str(exc))
    return found, problems


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


def _sandbox_dir(key, assumed):
    """(netns dir, confirmed, where it comes from) for one container's sandboxes.

    The daemon names every sandbox under one base path, <exec-root>/netns: the container's
    (NetworkSettings.SandboxKey = sb.Key(): daemon/container_operations.go:1178 at v20.10.24, l.1151 at
    docker-v29.0.0, l.1182 at v29.7.2) and the overlay network's (drivers/overlay/ov_network.go:752 of the
    vendored libnetwork at v20.10.24, l.593 at 29.0.0, l.580 at 29.7.2); both are osl.GenerateKey, which is
    basePath() + "/" + id (osl/namespace_linux.go:192 at v20.10.24, l.101 at 29.0.0, l.102 at 29.7.2), and
    basePath() is filepath.Join(<exec-root>, "netns") (osl/namespace_linux.go:68-69 at v20.10.24,
    daemon/libnetwork/osl/namespace_linux.go:42-51 at 29.0.0, l.43-52 at 29.7.2). So the directory of a
    sandbox key that has that form and is there, a regular file as dockerd creates it, is where the
    network's sandbox must be. A key of any other form or kind confirms nothing.
    """
    why = None
    if not key:
        why = 'the daemon reports no sandbox key for it'
    elif not key.startswith('/') or os.path.normpath(key) != key or os.path.basename(os.path.dirname(key)) != 'netns':
        why = 'its sandbox key %r is not of the form <exec-root>/netns/<id> dockerd gives' % key[:200]
    else:
        try:
            mode = os.lstat(key).st_mode
            if stat.S_ISREG(mode):
                return os.path.dirname(key), True, 'the directory of its sandbox key %s' % key
            why = 'its sandbox key %s is %s, not a namespace file' % (key, _kind(mode))
        except OSError as exc:
            why = ('its sandbox key %s is not there as seen from here' % key if exc.errno == errno.ENOENT
                   else 'its sandbox key: %s' % _path_problem(key, exc))
        except ValueError as exc:
            why = 'its sandbox key cannot be used: %s' % exc
    return assumed['netns_dir'], False, '%s; the exec root is assumed (%s)' % (why, assumed['from'])


def _left_or_unknown(name, problem, evidence, what):
    """A container that could not be read: 404 means it left (nothing to judge), anything else is unknown."""
    if problem.status == 404:
        return instance(name, 'ok', '%s left while it was read (%s).' % (name, problem), evidence)
    return instance(name, 'unknown', '%s: %s could not be read: %s.' % (name, what, problem), evidence)


def _container_instance(ctx, api, network, cid, entry, assumed, peers_ip, probe):
    where = 'GET /networks/%s' % network['Id'][:12]
    label = _entry_name(entry, cid)
    name = 'container %s on %s' % (label, network['Name'])
    evidence = {'container': label, 'id': cid[:12], 'network': network['Name']}
    try:
        if not isinstance(entry, dict):
            raise docker_api.DockerProblem('Docker API %s: field Containers[%s] is %s, not an object'
                                           % (where, cid[:12], docker_api.describe(entry)))
        docker_api.typed(entry, 'Name', 'string', where, label='Containers[%s].Name' % cid[:12])
        evidence['ip'] = docker_api.typed(entry, 'IPv4Address', 'string', where, label='Containers[%s].IPv4Address' % cid[:12])
        mac = docker_api.typed(entry, 'MacAddress', 'string', where, required=True, label='Containers[%s].MacAddress' % cid[:12])
        evidence['mac'] = mac
    except docker_api.DockerProblem as exc:
        return instance(name, 'unknown', '%s cannot be judged: %s.' % (name, exc), evidence)
    path = api.object_path('containers', cid) + '/json'
    where = 'GET ' + path
    try:
        detail = api.get_object(path)
    except docker_api.DockerProblem as exc:
        if exc.finding_status == 'unknown':
            raise  # the daemon stopped answering in time: every further request would wait as long
        return _left_or_unknown(name, exc, evidence, 'its inspect')
    try:
        state = docker_api.typed(detail, 'State', 'object', where, required=True)
        running = docker_api.typed(state, 'Running', 'boolean', where, required=True, label='State.Running')
        status = docker_api.typed(state, 'Status', 'string', where, label='State.Status')
        pid = docker_api.typed(state, 'Pid', 'integer', where, required=running, label='State.Pid')
        host_config = docker_api.typed(detail, 'HostConfig', 'object', where) or {}
        policy = docker_api.typed(host_config, 'RestartPolicy', 'object', where, label='HostConfig.RestartPolicy') or {}
        policy_name = docker_api.typed(policy, 'Name', 'string', where, label='HostConfig.RestartPolicy.Name')
        settings = docker_api.typed(detail, 'NetworkSettings', 'object', where) or {}
        key = docker_api.typed(settings, 'SandboxKey', 'string', where, label='NetworkSettings.SandboxKey')
        if running and pid <= 0:
            raise docker_api.DockerProblem('Docker API %s: State.Running is true but State.Pid is %d' % (where, pid))
    except docker_api.DockerProblem as exc:
        # Whether it is cut off cannot be told from an answer like this: never "ok", never "affected".
        return instance(name, 'unknown', '%s cannot be judged: %s.' % (name, exc), evidence)
    evidence['state'] = status
    if not running:
        return instance(name, 'ok', '%s is %s; only running containers can be cut off.' % (name, status or 'not running'),
                        evidence)
    evidence['restart_policy'] = policy_name or 'no'
    netns_dir, confirmed, where = _sandbox_dir(key, assumed)
    sandbox, sandbox_problem = sandbox_files(netns_dir, network['Id'])
    evidence.update(sandbox=sandbox or None, netns_dir=netns_dir, netns_dir_from=where, netns_dir_confirmed=confirmed)
    links, problem = read_links(ctx, pid)
    if links is None:
        if os.path.exists(os.path.join(ctx.proc_root, str(pid))):
            return instance(name, 'unknown', '%s: its interfaces cannot be read (%s).' % (name, problem), evidence)
        return instance(name, 'ok', '%s exited while it was read (%s).' % (name, problem), evidence)
    link = links.get(mac.lower())
    if link:
        evidence.update(interface=link[0], flags=link[1], link_state=link[2])
    carrier = bool(link) and 'NO-CARRIER' not in link[1] and 'LOWER_UP' in link[1]
    evidence['carrier'] = carrier
    if probe and peers_ip:
        evidence['ping'] = {'to': peers_ip}
        evidence['ping']['ok'], evidence['ping']['last_line'] = _ping(ctx, pid, peers_ip)
    cut, unsure = [], None
    if sandbox_problem:
        unsure = "%s (%s)" % (sandbox_problem, where)
    elif not sandbox and confirmed:
        cut.append("the network's sandbox is gone")
    elif not sandbox:
        # Only the daemon's own key says where sandboxes are; a miss where one was assumed proves nothing.
        unsure = 'none in %s, and %s' % (netns_dir, where)
    if unsure:
        evidence['sandbox_unknown'] = unsure
    if not link:
        cut.append('no interface with its MAC %s' % mac)
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
    path = api.object_path('networks', network['Id'])
    try:
        detail = api.get_object(path)
        containers = docker_api.typed(detail, 'Containers', 'object', 'GET ' + path) or {}
    except docker_api.DockerProblem as exc:
        if exc.finding_status == 'unknown':
            raise
        summary = {'network': network['Name'], 'id': network['Id'], 'problem': str(exc)}
        return [instance('network %s' % network['Name'], 'unknown',
                         'network %s cannot be judged: %s.' % (network['Name'], exc), summary)], summary
    local = dict((cid, e) for cid, e in containers.items() if not cid.startswith('lb-'))
    lb = [e for cid, e in containers.items() if cid.startswith('lb-') and isinstance(e, dict)]
    found = []
    for cid, entry in sorted(local.items(), key=lambda item: (_entry_name(item[1], item[0]), item[0])):
        peer = _address(lb[0]) if lb else None
        peer = peer or next((_address(e) for c, e in local.items() if c != cid and _address(e)), None)
        probe = 'overlay_ping' in ctx.probes and budget[0] > 0
        if probe:
            budget[0] -= 1
        found.append(_container_instance(ctx, api, network, cid, entry, assumed, peer, probe))
    confirmed = [i['evidence']['netns_dir'] for i in found if i['evidence'].get('netns_dir_confirmed')]
    netns_dir = confirmed[0] if confirmed else assumed['netns_dir']
    sandbox, sandbox_problem = sandbox_files(netns_dir, network['Id'])
    failures = failed.get(network['Id'], [])
    if failures:
        name = 'failed starts on %s' % network['Name']
        evidence = {'network': network['Name'], 'failed_network_setup_tasks': len(failures), 'tasks': failures[:10],
                    'engine_version': engine['engine_version'], 'affected_range': engine['affected_range']}
        if engine['in_affected_range'] is None:
            found.append(instance(name, 'unknown', '%d task(s) on this node failed during network setup on %s, and %s: '
                                  'whether each took a join too many cannot be told.'
                                  % (len(failures), network['Name'], engine['engine_version_problem']), evidence))
        elif engine['in_affected_range']:
            found.append(instance(name, 'at_risk', '%d task(s) on this node failed during network setup on %s; on Engine '
                                  '%s each takes one join too many, and the network is cut off when the count reaches '
                                  'zero.' % (len(failures), network['Name'], engine['engine_version']), evidence))
        else:
            found.append(instance(name, 'ok', '%d task(s) failed during network setup on %s; Engine %s rolls a failed '
                                  'start back with one Leave, outside the affected range (%s).'
                                  % (len(failures), network['Name'], engine['engine_version'], engine['affected_range']),
                                  evidence))
    summary = {'network': network['Name'], 'id': network['Id'], 'local_containers': len(local),
               'netns_dir': netns_dir, 'netns_dir_confirmed': bool(confirmed),
               'sandbox': sandbox, 'failed_network_setup_tasks': len(failures)}
    if sandbox_problem:
        summary['sandbox_problem'] = sandbox_problem
    return found, summary


def _entry_name(entry, cid):
    name = entry.get('Name') if isinstance(entry, dict) else None
    return name if isinstance(name, str) and name else cid[:12]


def _address(entry):
    """The address part of an endpoint's IPv4Address ("10.0.1.2/24"), when it is a string."""
    address = entry.get('IPv4Address') if isinstance(entry, dict) else None
    return address.split('/')[0] or None if isinstance(address, str) else None


def _overlay_networks(api):
    """([{Id, Name}] of the overlay networks other than ingress, [unknown instances for entries that
    cannot be read]): a network whose entry has the wrong types is unknown, not skipped."""
    where = 'GET /networks'
    networks, unreadable = [], []
    for position, item in enumerate(api.get_list('/networks', {'filters': json.dumps({'driver': ['overlay']})})):
        ident = item.get('Id') if isinstance(item, dict) else None
        label = ident[:12] if isinstance(ident, str) and ident else '#%d' % (position + 1)
        try:
            if not isinstance(item, dict):
                raise docker_api.DockerProblem('Docker API %s: entry %s is %s, not an object'
                                               % (where, label, docker_api.describe(item)))
            ident = docker_api.typed(item, 'Id', 'string', where, required=True)
            name = docker_api.typed(item, 'Name', 'string', where, required=True)
            ingress = docker_api.typed(item, 'Ingress', 'boolean', where)
        except docker_api.DockerProblem as exc:
            unreadable.append(instance('network %s' % label, 'unknown', 'network %s cannot be judged: %s.' % (label, exc),
                                       {'network': label}))
            continue
        if not ingress:
            networks.append({'Id': ident, 'Name': name})
    return networks, unreadable


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


def judge(ctx):
    settings = ctx.settings_for(DETECTION)
    path = docker_api.socket_path(settings['socket'])
    if not os.path.exists(path):
        return make_finding(DETECTION, 'not_applicable', 'No Docker daemon socket at %s.' % path)
    api = docker_api.DockerApi(path, settings['api_timeout'])
    engine = _engine(api, settings)
    assumed = _assumed_exec_root(ctx, settings, path)
    networks, unreadable = _overlay_networks(api)
    evidence = dict(engine, socket=path, probe='overlay_ping' in ctx.probes)
    if not networks and not unreadable:
        _exec_root_evidence(evidence, assumed, [])
        return make_finding(DETECTION, 'not_applicable', 'No overlay network on this daemon (swarm %s).' % engine['swarm'],
                            evidence=evidence)
    instances, per_network = list(unreadable), []
    failed = {}
    if engine.get('swarm_problem'):
        instances.append(instance('failed starts on this node', 'unknown', 'Failed starts cannot be looked for: %s.'
                                  % engine['swarm_problem'], {'problem': engine['swarm_problem']}))
    elif engine['swarm'] == 'active':
        try:
            failed, problems = _failed_setup_tasks(api, engine)
        except docker_api.DockerProblem as exc:
            if exc.finding_status == 'unknown':
                raise
            problems = [str(exc)]
        if problems:
            instances.append(instance('failed starts on this node', 'unknown', '%d task(s) of this node could not be read, '
                                      'so failed starts may be missing: %s.' % (len(problems), problems[0]),
                                      {'unreadable_tasks': len(problems), 'problems': problems[:10]}))
    evidence['peer_entry_warnings'], evidence['peer_entry_warnings_from'] = _peer_warnings(ctx, settings['journal_unit'])
    budget = [settings['probe_max_containers']]
    for network in sorted(networks, key=lambda n: (n['Name'], n['Id'])):
        found, summary = _network_instances(ctx, api, network, assumed, failed, engine, budget)
        instances.extend(found)
        per_network.append(summary)
    evidence['networks'] = per_network
    _exec_root_evidence(evidence, assumed, [n for n in per_network if 'netns_dir' in n])
    if not instances:
        return make_finding(DETECTION, 'not_applicable', 'No container on this node is attached to an overlay network.',
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
        summary = '%d of %d thing(s) looked at could not be judged (%s); the first: %s' % (
            len(unsure), len(instances), ', '.join(i['name'] for i in unsure[:5]) + (' ...' if len(unsure) > 5 else ''),
            unsure[0]['summary'])
    else:
        summary = 'Every running container on %d overlay network(s) has its sandbox and a carrier.' % len(per_network)
    return make_finding(DETECTION, 'ok', summary, evidence=evidence, instances=instances)
