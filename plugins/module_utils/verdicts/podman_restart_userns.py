# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""podman_restart_userns's verdict: the code that judges what the detection's first question found.

detections/podman_restart_userns.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding


def _not_stopped_reason(container):
    """Why podman rightly left an exited container down, or None."""
    if container.restart_policy == 'on-failure' and container.exit_code == 0:
        return 'exited 0 under on-failure, so the policy did not apply'
    if (container.restart_policy == 'on-failure' and container.restart_retries
            and container.restart_count >= container.restart_retries):
        return 'on-failure:%d retries are spent (%d restarts)' % (container.restart_retries, container.restart_count)
    return None


def _stopped_instance(cli, container, evidence, pattern, podman_version):
    name = 'container %s' % container.name
    declined = _not_stopped_reason(container)
    if declined:
        return instance(name, 'ok', '%s: %s.' % (name, declined), evidence)
    stopped_by_user, source = podman.stopped_by_user(container, podman_version)
    if stopped_by_user is not None:
        evidence['stopped_by_user'] = stopped_by_user
        evidence['stopped_by_user_source'] = source
        if stopped_by_user:
            return instance(name, 'ok', '%s: stopped by a person; the policy rightly left it.' % name, evidence)
        outcome = 'restart_failed'
    else:
        try:
            # Only the last run matters; --since keeps a long journal from being read whole.
            since = container.started_at if (container.started_at or '').startswith(('1', '2')) else None
            events = cli.events(container.id, since=since)
        except podman.PodmanProblem as exc:
            return instance(name, 'unknown', '%s: exited under restart policy %s; its events could not be read (%s).'
                            % (name, container.policy_text, exc), evidence)
        outcome = podman.last_exit_outcome(events)
        evidence['events_since_last_start'] = _recent(events)
        evidence['stopped_by_user_source'] = 'podman events (%s)' % source
        if outcome is None:
            return instance(name, 'unknown', '%s: exited under restart policy %s, but the event log has no record of '
                            'its exit (rotated?) and %s; cannot tell whether a person stopped it.'
                            % (name, container.policy_text, source), evidence)
        if outcome == 'stopped_by_person':
            return instance(name, 'ok', '%s: stopped by a person (stop/kill event); the policy rightly left it.' % name, evidence)
        if outcome == 'cleanup_declined':
            return instance(name, 'ok', "%s: podman's cleanup ran after the last exit and did not restart it "
                            '(a person stopped it, or the policy did not apply).' % name, evidence)
    evidence['outcome'] = outcome
    cause = ('it matches the AppArmor pattern (rootful, mapped, confined)' if pattern
             else 'podman\'s restart path did not finish (the cleanup process failed)')
    summary = ('%s is STUCK: restart policy %s, %s since %s with exit code %s after %d restart(s), and nobody '
               'stopped it; %s.' % (name, container.policy_text, container.status, container.finished_at or '?',
                                    container.exit_code, container.restart_count, cause))
    return instance(name, 'affected', summary, evidence)


def _recent(events, keep=12):
    return ['%s %s' % (status, time) for status, time in events[-keep:]]


def _container_instance(cli, container, host):
    evidence = container.evidence()
    evidence['podman_version'] = host['podman_version']
    evidence['apparmor'] = host['apparmor']
    pattern = container.own_mapping and container.apparmor_confined and host['apparmor_enabled']
    evidence['matches_apparmor_pattern'] = bool(pattern)
    name = 'container %s' % container.name
    # "created" with restarts behind it: podman began a restart (init) and never started the
    # container; measured on podman 4.3.1 with a rootful --uidmap container (events: died,
    # restart, init, cleanup), as stuck as an exited one.
    if container.status in podman.STOPPED_STATES or (container.status == 'created' and container.restart_count):
        return _stopped_instance(cli, container, evidence, pattern, host['podman_version'])
    if container.status != 'running':
        return instance(name, 'ok', '%s is %s; nothing to restart.' % (name, container.status), evidence)
    if container.quadlet_unit:
        return instance(name, 'ok', '%s: systemd unit %s runs it, podman\'s restart path is not used.'
                        % (name, container.quadlet_unit), evidence)
    if not container.own_mapping:
        return instance(name, 'ok', '%s has no ID mapping of its own.' % name, evidence)
    if not host['apparmor_enabled']:
        return instance(name, 'ok', '%s is mapped and restarts, but %s; it becomes AT RISK if AppArmor is enabled.'
                        % (name, host['apparmor']), evidence)
    if not container.apparmor_confined:
        return instance(name, 'ok', '%s runs unconfined (apparmor=%s); the restart path works, at the cost of confinement.'
                        % (name, container.apparmor_profile or 'none'), evidence)
    if host['fixed']:
        return instance(name, 'ok', '%s: podman %s is at or past the fixed release %s.'
                        % (name, host['podman_version'], host['fixed_in']), evidence)
    return instance(name, 'at_risk', '%s is AT RISK: rootful, mapped (%s), confined by %s, restart policy %s, on an '
                    'AppArmor host; it will stay down after its next exit.'
                    % (name, ', '.join(container.uid_map) or container.userns_mode, container.apparmor_profile,
                       container.policy_text), evidence)


def judge(ctx, detection, settings, cli, containers, enabled, apparmor_text, evidence):
    facts = cli.facts()
    fixed_in = settings.get('fixed_in')
    version = hostio.version_tuple(facts['version'] or '')
    host = {
        'podman_version': facts['version'],
        'apparmor_enabled': enabled,
        'apparmor': apparmor_text,
        'fixed_in': fixed_in,
        'fixed': bool(fixed_in and version and version >= hostio.version_tuple(str(fixed_in))),
    }
    evidence.update({
        'podman_version': facts['version'],
        'podman_apparmor_enabled': facts['apparmor_enabled'],
        'event_logger': facts['event_logger'],
        'podman_facts': facts['sources'],
    })
    with_policy = [c for c in containers if c.restarts]
    evidence['containers_with_restart_policy'] = len(with_policy)
    instances = [_container_instance(cli, c, host) for c in with_policy]
    if not instances:
        return make_finding(detection, 'ok' if containers else 'not_applicable',
                            'No rootful container has a restart policy (%d container(s)).' % len(containers),
                            evidence=evidence)
    stuck = [i for i in instances if i['status'] == 'affected']
    risky = [i for i in instances if i['status'] == 'at_risk']
    unknown = [i for i in instances if i['status'] == 'unknown']
    parts = []
    if stuck:
        parts.append('%d STUCK (%s)' % (len(stuck), ', '.join(i['name'].split(' ', 1)[1] for i in stuck)))
    if risky:
        parts.append('%d AT RISK (%s)' % (len(risky), ', '.join(i['name'].split(' ', 1)[1] for i in risky)))
    if unknown:
        parts.append('%d unknown' % len(unknown))
    if parts:
        summary = '%s of %d rootful container(s) with a restart policy.' % ('; '.join(parts), len(instances))
    else:
        summary = 'All %d rootful container(s) with a restart policy are running or were rightly left down.' % len(instances)
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
