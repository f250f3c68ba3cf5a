# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_overlay_sandbox's verdict: the code that judges what the detection's first question found.

detections/docker_overlay_sandbox.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import dockerd
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import netns as docker_netns
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import overlay_evidence as codes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding

# Task errors of a start that failed during network setup: each may have taken a join off the count.
NETWORK_SETUP_ERRORS = re.compile(r'endpoint join|failed to set up container networking|port is already allocated|'
                                  r'driver failed programming external connectivity|network sandbox join failed',
                                  re.IGNORECASE)
PEER_WARNING = 'Peer entry was not in db'
MAX_TASK_CONTAINERS = 200


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
        for task in api.get_list('/tasks', {'filters': json.dumps({'node': [engine['node_id']]})}):
            try:
                _add_failed_task(found, task)
            except docker_api.DockerProblem as exc:
                problems.append(str(exc))
        return found, problems
    listed = api.get_list('/containers/json', {'all': '1', 'filters': json.dumps({'label': ['com.docker.swarm.task.id'],
                                                                                  'status': ['created', 'exited']})})
    for entry in listed[:MAX_TASK_CONTAINERS]:
        try:
            _add_failed_task_container(found, api, entry)
        except docker_api.DockerProblem as exc:
            if exc.finding_status == 'unknown':
                raise  # the daemon stopped answering in time: every further request would wait as long
            problems.append(str(exc))
    return found, problems


def _add_failed_task(found, task):
    """One task of GET /tasks, into ``found`` when it failed during network setup."""
    where = 'GET /tasks'
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


def _add_failed_task_container(found, api, entry):
    """One task container a worker kept, into ``found`` when its start failed during network setup."""
    cid = docker_api.typed(entry, 'Id', 'string', 'GET /containers/json', required=True)
    path = api.object_path('containers', cid) + '/json'
    where = 'GET ' + path
    try:
        detail = api.get_object(path)
    except docker_api.DockerProblem as exc:
        if exc.status == 404:
            return  # removed meanwhile
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


def _judged(name, status, cause, summary, evidence):
    """An instance with its cause code (docker/overlay_evidence.py): what a fix reads instead of the summary."""
    evidence['cause'] = cause
    return instance(name, status, summary, evidence)


def _left_or_unknown(name, problem, evidence, what):
    """A container that could not be read: 404 means it left (nothing to judge), anything else is unknown."""
    if problem.status == 404:
        return _judged(name, 'ok', 'left', '%s left while it was read (%s).' % (name, problem), evidence)
    return _judged(name, 'unknown', 'unreadable', '%s: %s could not be read: %s.' % (name, what, problem), evidence)


class _Node(object):
    """What every container of one daemon is judged with; ``probes_left``: pings overlay_ping may still send."""

    def __init__(self, ctx, api, assumed, engine, failed, probes_left):
        self.ctx = ctx
        self.api = api
        self.assumed = assumed
        self.engine = engine
        self.failed = failed
        self.probes_left = probes_left

    def take_probe(self):
        if 'overlay_ping' not in self.ctx.probes or self.probes_left <= 0:
            return False
        self.probes_left -= 1
        return True


def _endpoint_mac(network, cid, entry, evidence):
    """The MAC of a container's endpoint on ``network`` (its address into ``evidence``); DockerProblem when unreadable."""
    where = 'GET /networks/%s' % network['Id'][:12]
    if not isinstance(entry, dict):
        raise docker_api.DockerProblem('Docker API %s: field Containers[%s] is %s, not an object'
                                       % (where, cid[:12], docker_api.describe(entry)))
    docker_api.typed(entry, 'Name', 'string', where, label='Containers[%s].Name' % cid[:12])
    evidence['ip'] = docker_api.typed(entry, 'IPv4Address', 'string', where, label='Containers[%s].IPv4Address' % cid[:12])
    evidence['mac'] = docker_api.typed(entry, 'MacAddress', 'string', where, required=True,
                                       label='Containers[%s].MacAddress' % cid[:12])
    return evidence['mac']


def _container_state(detail, where):
    """{running, status, pid, policy, key} of one container's inspect; DockerProblem for a field of the wrong kind."""
    state = docker_api.typed(detail, 'State', 'object', where, required=True)
    running = docker_api.typed(state, 'Running', 'boolean', where, required=True, label='State.Running')
    found = {'running': running,
             'status': docker_api.typed(state, 'Status', 'string', where, label='State.Status'),
             'pid': docker_api.typed(state, 'Pid', 'integer', where, required=running, label='State.Pid')}
    host_config = docker_api.typed(detail, 'HostConfig', 'object', where) or {}
    policy = docker_api.typed(host_config, 'RestartPolicy', 'object', where, label='HostConfig.RestartPolicy') or {}
    found['policy'] = docker_api.typed(policy, 'Name', 'string', where, label='HostConfig.RestartPolicy.Name')
    settings = docker_api.typed(detail, 'NetworkSettings', 'object', where) or {}
    found['key'] = docker_api.typed(settings, 'SandboxKey', 'string', where, label='NetworkSettings.SandboxKey')
    if running and found['pid'] <= 0:
        raise docker_api.DockerProblem('Docker API %s: State.Running is true but State.Pid is %d' % (where, found['pid']))
    return found


def _container_instance(node, network, cid, entry, ping_to):
    label = _entry_name(entry, cid)
    name = 'container %s on %s' % (label, network['Name'])
    evidence = {'kind': codes.CONTAINER, 'container': label, 'id': cid[:12], 'network': network['Name']}
    try:
        mac = _endpoint_mac(network, cid, entry, evidence)
    except docker_api.DockerProblem as exc:
        return _judged(name, 'unknown', 'unreadable', '%s cannot be judged: %s.' % (name, exc), evidence)
    path = node.api.object_path('containers', cid) + '/json'
    try:
        detail = node.api.get_object(path)
    except docker_api.DockerProblem as exc:
        if exc.finding_status == 'unknown':
            raise  # the daemon stopped answering in time: every further request would wait as long
        return _left_or_unknown(name, exc, evidence, 'its inspect')
    try:
        state = _container_state(detail, 'GET ' + path)
    except docker_api.DockerProblem as exc:
        # Whether it is cut off cannot be told from an answer like this: never "ok", never "affected".
        return _judged(name, 'unknown', 'unreadable', '%s cannot be judged: %s.' % (name, exc), evidence)
    evidence['state'] = state['status']
    if not state['running']:
        return _judged(name, 'ok', 'not_running',
                       '%s is %s; only running containers can be cut off.' % (name, state['status'] or 'not running'),
                       evidence)
    evidence['restart_policy'] = state['policy'] or 'no'
    state.update(mac=mac, ping_to=ping_to)
    return _interface_instance(node, network, name, evidence, state)


def _sandbox_signs(node, network, key, evidence):
    """({'sandbox_gone': words} or {}, why the network's sandbox could not be looked for or None)."""
    netns_dir, confirmed, where = docker_netns.sandbox_dir(key, node.assumed)
    sandbox, problem = docker_netns.sandbox_files(netns_dir, network['Id'])
    evidence.update(sandbox=sandbox or None, netns_dir=netns_dir, netns_dir_from=where, netns_dir_confirmed=confirmed)
    if problem:
        unsure = '%s (%s)' % (problem, where)
    elif sandbox:
        return {}, None
    elif confirmed:
        return {'sandbox_gone': "the network's sandbox is gone"}, None
    else:
        # Only the daemon's own key says where sandboxes are; a miss where one was assumed proves nothing.
        unsure = 'none in %s, and %s' % (netns_dir, where)
    evidence['sandbox_unknown'] = unsure
    return {}, unsure


def _interface_instance(node, network, name, evidence, state):
    """A running container judged by its network's sandbox, its interface's carrier and, probed, a ping."""
    cut, unsure = _sandbox_signs(node, network, state['key'], evidence)
    links, problem = docker_netns.read_links(node.ctx, state['pid'])
    if links is None:
        if os.path.exists(os.path.join(node.ctx.proc_root, str(state['pid']))):
            return _judged(name, 'unknown', 'interfaces_unreadable',
                           '%s: its interfaces cannot be read (%s).' % (name, problem), evidence)
        return _judged(name, 'ok', 'exited', '%s exited while it was read (%s).' % (name, problem), evidence)
    link = links.get(state['mac'].lower())
    if link:
        evidence.update(interface=link[0], flags=link[1], link_state=link[2])
    evidence['carrier'] = carrier = bool(link) and 'NO-CARRIER' not in link[1] and 'LOWER_UP' in link[1]
    peer = state['ping_to']
    if peer:
        evidence['ping'] = {'to': peer}
        evidence['ping']['ok'], evidence['ping']['last_line'] = docker_netns.ping(node.ctx, state['pid'], peer)
    if not link:
        cut['no_interface'] = 'no interface with its MAC %s' % state['mac']
    elif not carrier:
        cut['no_carrier'] = '%s has no carrier (%s)' % (link[0], ','.join(link[1]))
    if peer and not evidence['ping']['ok']:
        cut['no_ping_answer'] = 'a ping to %s got no answer' % peer
    if cut:
        signs = [sign for sign in codes.CUT_OFF_SIGNS if sign in cut]
        evidence['causes'] = signs
        return _judged(name, 'affected', signs[0], '%s is running but cut off: %s.' % (name, '; '.join(cut[s] for s in signs)),
                       evidence)
    summary = '%s has its overlay interface %s with a carrier' % (name, link[0])
    if peer:
        summary += ' and answered a ping to %s' % peer
    if unsure:
        return _judged(name, 'unknown', codes.SANDBOX_UNSEEN,
                       "%s, but its network's sandbox could not be looked for: %s." % (summary, unsure), evidence)
    return _judged(name, 'ok', 'overlay_up', summary + '.', evidence)


def _network_instances(node, network):
    path = node.api.object_path('networks', network['Id'])
    try:
        detail = node.api.get_object(path)
        containers = docker_api.typed(detail, 'Containers', 'object', 'GET ' + path) or {}
    except docker_api.DockerProblem as exc:
        if exc.finding_status == 'unknown':
            raise
        summary = {'network': network['Name'], 'id': network['Id'], 'problem': str(exc)}
        return [_judged('network %s' % network['Name'], 'unknown', 'unreadable',
                        'network %s cannot be judged: %s.' % (network['Name'], exc), dict(summary, kind=codes.NETWORK))], summary
    local = dict((cid, e) for cid, e in containers.items() if not cid.startswith('lb-'))
    lb = [e for cid, e in containers.items() if cid.startswith('lb-') and isinstance(e, dict)]
    found = []
    for cid, entry in sorted(local.items(), key=lambda item: (_entry_name(item[1], item[0]), item[0])):
        peer = _address(lb[0]) if lb else None
        peer = peer or next((_address(e) for c, e in local.items() if c != cid and _address(e)), None)
        found.append(_container_instance(node, network, cid, entry, peer if node.take_probe() else None))
    confirmed = [i['evidence']['netns_dir'] for i in found if i['evidence'].get('netns_dir_confirmed')]
    netns_dir = confirmed[0] if confirmed else node.assumed['netns_dir']
    sandbox, sandbox_problem = docker_netns.sandbox_files(netns_dir, network['Id'])
    failures = node.failed.get(network['Id'], [])
    if failures:
        found.append(_failed_starts(network, failures, node.engine))
    summary = {'network': network['Name'], 'id': network['Id'], 'local_containers': len(local),
               'netns_dir': netns_dir, 'netns_dir_confirmed': bool(confirmed),
               'sandbox': sandbox, 'failed_network_setup_tasks': len(failures)}
    if sandbox_problem:
        summary['sandbox_problem'] = sandbox_problem
    return found, summary


def _failed_starts(network, failures, engine):
    name = 'failed starts on %s' % network['Name']
    services = []
    for task in failures:
        if task.get('service') and task['service'] not in services:
            services.append(task['service'])
    evidence = {'kind': codes.FAILED_STARTS, 'network': network['Name'], 'network_id': network['Id'],
                'services': services, 'failed_network_setup_tasks': len(failures), 'tasks': failures[:10],
                'engine_version': engine['engine_version'], 'affected_range': engine['affected_range']}
    if engine['in_affected_range'] is None:
        return _judged(name, 'unknown', 'engine_version_unknown',
                       '%d task(s) on this node failed during network setup on %s, and %s: whether each took a join '
                       'too many cannot be told.' % (len(failures), network['Name'], engine['engine_version_problem']),
                       evidence)
    if engine['in_affected_range']:
        return _judged(name, 'at_risk', 'in_affected_range',
                       '%d task(s) on this node failed during network setup on %s; on Engine %s each takes one join too '
                       'many, and the network is cut off when the count reaches zero.'
                       % (len(failures), network['Name'], engine['engine_version']), evidence)
    return _judged(name, 'ok', 'outside_affected_range',
                   '%d task(s) failed during network setup on %s; Engine %s rolls a failed start back with one Leave, '
                   'outside the affected range (%s).'
                   % (len(failures), network['Name'], engine['engine_version'], engine['affected_range']), evidence)


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
            unreadable.append(_judged('network %s' % label, 'unknown', 'unreadable',
                                      'network %s cannot be judged: %s.' % (label, exc),
                                      {'kind': codes.NETWORK, 'network': label}))
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


def judge(ctx, detection, settings):
    path = docker_api.socket_path(settings['socket'])
    if not os.path.exists(path):
        return make_finding(detection, 'not_applicable', 'No Docker daemon socket at %s.' % path)
    api = docker_api.DockerApi(path, settings['api_timeout'])
    engine = _engine(api, settings)
    assumed = _assumed_exec_root(ctx, settings, path)
    networks, unreadable = _overlay_networks(api)
    evidence = dict(engine, socket=path, probe='overlay_ping' in ctx.probes)
    if not networks and not unreadable:
        _exec_root_evidence(evidence, assumed, [])
        return make_finding(detection, 'not_applicable', 'No overlay network on this daemon (swarm %s).' % engine['swarm'],
                            evidence=evidence)
    instances, per_network = list(unreadable), []
    failed = {}
    if engine.get('swarm_problem'):
        instances.append(_judged('failed starts on this node', 'unknown', 'swarm_unreadable',
                                 'Failed starts cannot be looked for: %s.' % engine['swarm_problem'],
                                 {'kind': codes.FAILED_STARTS, 'problem': engine['swarm_problem']}))
    elif engine['swarm'] == 'active':
        try:
            failed, problems = _failed_setup_tasks(api, engine)
        except docker_api.DockerProblem as exc:
            if exc.finding_status == 'unknown':
                raise
            problems = [str(exc)]
        if problems:
            instances.append(_judged('failed starts on this node', 'unknown', 'tasks_unreadable',
                                     '%d task(s) of this node could not be read, so failed starts may be missing: %s.'
                                     % (len(problems), problems[0]),
                                     {'kind': codes.FAILED_STARTS, 'unreadable_tasks': len(problems),
                                      'problems': problems[:10]}))
    evidence['peer_entry_warnings'], evidence['peer_entry_warnings_from'] = _peer_warnings(ctx, settings['journal_unit'])
    node = _Node(ctx, api, assumed, engine, failed, settings['probe_max_containers'])
    for network in sorted(networks, key=lambda n: (n['Name'], n['Id'])):
        found, summary = _network_instances(node, network)
        instances.extend(found)
        per_network.append(summary)
    evidence['networks'] = per_network
    _exec_root_evidence(evidence, assumed, [n for n in per_network if 'netns_dir' in n])
    if not instances:
        return make_finding(detection, 'not_applicable', 'No container on this node is attached to an overlay network.',
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
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
