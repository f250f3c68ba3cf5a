# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The recovery of one swarm node whose containers are cut off their overlay network (the
docker_overlay_recover_plan module, driven by the docker_overlay_recover role).

It follows the fix modules' protocol (podman/quadlet_convert.py, ollama/renderer_fix.py):

1. plan: the detection's finding sorted by its codes (docker/overlay_evidence.py), never by names or
   summaries; the services to scale to zero; the running containers dockerd will not start again
   itself, read from the Engine API. Nothing is changed.
2. check mode: the plan's steps, each ``would: ...``.
3. apply: the role's tasks run the steps. The restart is the one step that must wait for the other
   nodes (one node at a time, the play stopped at the first node that does not come back:
   ``throttle`` and ``any_errors_fatal``), which only the play can do.
4. verify: the finding read after the restart, sorted the same way (``verify``).
5. roll back: none. A daemon restart cannot be undone and needs no undoing; the services scaled to
   zero are named in the plan, so they can be scaled back once their failing start is fixed.

What a finding cannot show is never taken as "nothing to do": a node where nothing is proven cut
off and something could not be judged is refused (``PlanRefused``), changing nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import overlay_evidence as codes

DETECTION_ID = 'docker_overlay_sandbox'
# Container names as dockerd allows them (RestrictedNameChars, daemon/names/names.go:6 at v20.10.24 and
# docker-v29.7.2), which covers swarm's service names and ids too: anything else is never put on a docker
# command line, where a leading '-' would be an option.
_DOCKER_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$')
SWARM_TASK_LABEL = 'com.docker.swarm.task.id'
# What dockerd does with a running container when it stops and starts again: it restores those whose
# restart policy says so (daemon/daemon.go:455 and, for containers on swarm-scope networks once the
# cluster is up, l.620 at v20.10.24; l.557 and l.758 at docker-v29.7.2): "always" and "unless-stopped"
# (a shutdown does not count as a manual stop: daemon/kill.go:86-87 at v20.10.24, l.95-96 at
# docker-v29.7.2), "on-failure" only when it exited non-zero, which a process that ends cleanly on
# SIGTERM does not (restartmanager/restartmanager.go:85-95 at v20.10.24,
# daemon/internal/restartmanager/restartmanager.go:81-91 at docker-v29.7.2). So the plan starts the
# ones without a policy and the on-failure ones (starting a running container changes nothing: HTTP
# 304, daemon/start.go:35-36 at v20.10.24).
DAEMON_RESTARTS = ('always', 'unless-stopped')


class PlanRefused(Exception):
    """Nothing may be done on this node; the message says why. Nothing was changed. ``sorting``: the
    finding sorted, when it could be."""

    def __init__(self, message, sorting=None):
        super(PlanRefused, self).__init__(message)
        self.sorting = sorting


class RecoveryFailed(Exception):
    """The node is not back after the recovery; the message names what is still cut off or not judged."""

    def __init__(self, message, sorting):
        super(RecoveryFailed, self).__init__(message)
        self.sorting = sorting


class Sorting(object):
    """A finding sorted for the recovery.

    ``cut_off``: names of the containers the detection calls cut off (``cut_off_unnamed``: how many more,
    left out of the finding by max_instances). ``not_judged``: why some thing could not be judged (the
    instance's summary, or the finding's): whether those containers are cut off is not known.
    ``unconfirmed``: containers whose interface has its carrier while their network's sandbox file
    could not be looked for. ``failing_services``: the services whose tasks on this node failed
    during network setup. Failed starts that cannot be judged are a risk, not a container cut off:
    in none of the lists.
    """

    def __init__(self, status, summary):
        self.status = status
        self.summary = summary
        self.cut_off = []
        self.cut_off_unnamed = 0
        self.not_judged = []
        self.unconfirmed = []
        self.failing_services = []
        self.notes = []

    @property
    def recovery_needed(self):
        return bool(self.cut_off or self.cut_off_unnamed)

    def result(self):
        return {'cut_off': list(self.cut_off), 'not_judged': list(self.not_judged),
                'unconfirmed': list(self.unconfirmed), 'failing_services': list(self.failing_services)}


def _text(value, default=''):
    return value if isinstance(value, str) else default


def sort_finding(finding):
    """The Sorting of a docker_overlay_sandbox finding; PlanRefused when it is not one."""
    if not isinstance(finding, dict) or finding.get('id') != DETECTION_ID:
        raise PlanRefused('the finding given is not a %s finding (id %r); nothing was changed'
                          % (DETECTION_ID, finding.get('id') if isinstance(finding, dict) else finding))
    evidence = finding.get('evidence') if isinstance(finding.get('evidence'), dict) else {}
    instances = evidence.get('instances') if isinstance(evidence.get('instances'), list) else []
    sorting = Sorting(_text(finding.get('status'), '(none)'), _text(finding.get('summary'), '(no summary)'))
    if sorting.status == 'error' or (sorting.status == 'unknown' and not instances):
        sorting.not_judged.append(sorting.summary)
    for item in instances:
        _sort_instance(sorting, item)
    _sort_omitted(sorting, evidence.get('instances_omitted'))
    if sorting.status == 'affected' and not (sorting.recovery_needed or sorting.not_judged):
        sorting.not_judged.append('the finding is affected, but no container in it is: %s' % sorting.summary)
    return sorting


def _sort_instance(sorting, item):
    if not isinstance(item, dict) or not isinstance(item.get('evidence'), dict):
        sorting.not_judged.append('an instance of the finding is not an object (%s)' % _text(item, type(item).__name__)[:100])
        return
    status, evidence, summary = item.get('status'), item['evidence'], _text(item.get('summary'), '(no summary)')
    kind, cause = evidence.get('kind'), evidence.get('cause')
    if kind == codes.FAILED_STARTS:
        for service in evidence.get('services') or []:
            if not _is_docker_name(service):
                sorting.notes.append('service %r named by the finding is not a Docker name or id; it is not scaled'
                                     % (service,))
            elif service not in sorting.failing_services:
                sorting.failing_services.append(service)
        return
    if status not in ('affected', 'unknown'):
        return
    if kind == codes.CONTAINER and status == 'affected':
        sorting.cut_off.append(_text(evidence.get('container')) or _text(evidence.get('id')) or '(unnamed)')
    elif kind == codes.CONTAINER and cause == codes.SANDBOX_UNSEEN:
        sorting.unconfirmed.append(summary)
    elif kind in (codes.CONTAINER, codes.NETWORK):
        sorting.not_judged.append(summary)
    else:
        # A kind this plan does not know may hide a container cut off: never "nothing to do".
        sorting.not_judged.append('%s (an instance of kind %r, which this plan does not know)' % (summary, kind))


def _sort_omitted(sorting, omitted):
    """Instances max_instances left out: only their statuses are known."""
    by_status = omitted.get('by_status') if isinstance(omitted, dict) else None
    if not isinstance(by_status, dict):
        return
    affected, unknown = by_status.get('affected'), by_status.get('unknown')
    if isinstance(affected, int) and affected > 0:
        sorting.cut_off_unnamed = affected
    if isinstance(unknown, int) and unknown > 0:
        sorting.not_judged.append('%d unknown instance(s) were left out of the finding (max_instances); raise '
                                  'max_instances to see them' % unknown)


def _is_docker_name(value):
    return isinstance(value, str) and bool(_DOCKER_NAME.match(value))


def containers_to_start_again(api):
    """(names, notes): the running containers dockerd does not start again itself when it starts (above).

    Swarm tasks are left to swarm's agent, which starts or replaces its own: started by hand one would run
    beside swarm, and a task of a service just scaled to zero would be back. A container run with --rm is
    gone after the restart (dockerd removes it when it restores it: daemon/daemon.go:459 at v20.10.24, l.561
    at docker-v29.7.2): named in the notes, to be run again by hand. A DockerProblem when the containers
    cannot be read: without the list, a restart would leave some of them stopped.
    """
    where = 'GET /containers/json'
    names, notes = [], []
    for entry in api.get_list('/containers/json', {'filters': json.dumps({'status': ['running']})}):
        if not isinstance(entry, dict):
            raise docker_api.DockerProblem('Docker API %s: an entry is %s, not an object' % (where, docker_api.describe(entry)))
        path = api.object_path('containers', docker_api.typed(entry, 'Id', 'string', where, required=True)) + '/json'
        try:
            detail = api.get_object(path)
        except docker_api.DockerProblem as exc:
            if exc.status == 404:
                continue  # removed since the listing
            raise
        name, policy, auto_remove, task = _container_facts(detail, 'GET ' + path)
        if task or policy in DAEMON_RESTARTS:
            continue
        if auto_remove:
            notes.append('container %s runs with --rm: the restart removes it; run it again by hand' % (name,))
        elif _is_docker_name(name):
            names.append(name)
        else:
            notes.append('container %r is not started again: its name is not a Docker name' % (name,))
    return sorted(names), notes


def _container_facts(detail, where):
    """(name, restart policy, auto-remove, whether it is a swarm task) of one container's inspect."""
    name = docker_api.typed(detail, 'Name', 'string', where, required=True).lstrip('/')
    host_config = docker_api.typed(detail, 'HostConfig', 'object', where) or {}
    policy = docker_api.typed(host_config, 'RestartPolicy', 'object', where, label='HostConfig.RestartPolicy') or {}
    auto_remove = docker_api.typed(host_config, 'AutoRemove', 'boolean', where, label='HostConfig.AutoRemove')
    config = docker_api.typed(detail, 'Config', 'object', where) or {}
    labels = docker_api.typed(config, 'Labels', 'object', where, label='Config.Labels') or {}
    return (name, docker_api.typed(policy, 'Name', 'string', where, label='HostConfig.RestartPolicy.Name') or '',
            bool(auto_remove), SWARM_TASK_LABEL in labels)


class Plan(object):
    """What the role does on this node, as data (``scale_down``, ``restart``, ``start_again``) and as
    steps for a person."""

    def __init__(self, sorting, scale_down, restart, start_again, restart_command, probe, notes):
        self.sorting = sorting
        self.scale_down = scale_down
        self.restart = restart
        self.start_again = start_again
        self.restart_command = restart_command
        self.probe = probe
        self.notes = notes

    def what(self):
        """One line: what is the matter with this node."""
        sorting = self.sorting
        if not sorting.recovery_needed:
            return 'nothing: no container on this node is cut off its overlay network (%s)' % sorting.summary
        named = ', '.join(sorting.cut_off)
        if sorting.cut_off_unnamed:
            more = '%d more left out of the finding (max_instances)' % sorting.cut_off_unnamed
            named = '%s and %s' % (named, more) if named else more
        return 'cut off: %s' % named

    def steps(self, check_mode):
        """The steps in order; in check mode each is ``would: ...``."""
        if not self.sorting.recovery_needed:
            return []
        steps = ['scale service %s to 0' % service for service in self.scale_down]
        if self.restart:
            steps += ['restart dockerd: %s' % ' '.join(self.restart_command),
                      'wait until the daemon answers and the swarm state is active',
                      'start again: %s' % (', '.join(self.start_again) or 'none'),
                      'check with the detection%s' % (' and the overlay_ping probe' if self.probe else '')]
        else:
            steps.append('NOT restarting dockerd (restart is off): the containers stay cut off')
        return ['would: %s' % step for step in steps] if check_mode else steps

    def result(self, check_mode):
        found = self.sorting.result()
        found.update(restart_required=self.sorting.recovery_needed, restart=self.restart,
                     scale_down=list(self.scale_down), start_again=list(self.start_again),
                     steps=self.steps(check_mode), notes=self.sorting.notes + self.notes, msg=self.what())
        return found


def plan(finding, read_start_again, scale_down=(), scale_down_failing=False, restart=False,
         restart_command=('systemctl', 'restart', 'docker'), probe=False):
    """The Plan for one node; PlanRefused when nothing is proven cut off and something could not be judged.

    ``read_start_again()``: (names, notes) of the containers to start again after the restart
    (``containers_to_start_again`` on the node's daemon), asked only when something is cut off.
    ``scale_down``: the user's services; ``scale_down_failing`` adds the ones the finding names.
    """
    sorting = sort_finding(finding)
    if not sorting.recovery_needed and sorting.not_judged:
        raise PlanRefused('%s is %s here and nothing is proven cut off: %s'
                          % (DETECTION_ID, sorting.status, '; '.join(sorting.not_judged)), sorting)
    if not sorting.recovery_needed:
        return Plan(sorting, [], False, [], list(restart_command), probe, [])
    wrong = [name for name in scale_down if not _is_docker_name(name)]
    if wrong:
        raise PlanRefused('scale_down: %s is not a Docker service name or id; nothing was changed'
                          % ', '.join(repr(name) for name in wrong), sorting)
    services = []
    for service in list(scale_down) + (sorting.failing_services if scale_down_failing else []):
        if service not in services:
            services.append(service)
    start_again, notes = read_start_again()
    return Plan(sorting, services, bool(restart), start_again, list(restart_command), probe, notes)


def verify(finding):
    """The Sorting of the finding read after the restart; RecoveryFailed when a container is still cut off
    or one cannot be judged. One whose carrier is back while its sandbox file cannot be seen from here
    passes, in ``unconfirmed``: a failure that came on every run on such a node would teach nobody anything."""
    sorting = sort_finding(finding)
    if sorting.recovery_needed or sorting.not_judged:
        reasons = sorting.not_judged if not sorting.recovery_needed else [sorting.summary] + sorting.not_judged
        raise RecoveryFailed('Still %s after the recovery: %s' % (sorting.status, '; '.join(reasons)), sorting)
    return sorting
