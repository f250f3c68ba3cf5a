# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""podman_export_idmap: ``podman export`` of a container with its own ID mapping shifts every owner.

The export code tars the container's storage as it sits on disk, with no ID
mapping, so a container created with --userns=keep-id, --uidmap or
--userns=auto comes out with every owner pushed through its mapping (root's
files as 1/1 or 200000/200000). Exit code 0, nothing on stderr. ``podman cp
ctr:/ -`` does the same. ``podman commit`` maps owners back.

Without the probe, containers whose mapping moves an ID (or whose mapping inspect does not show) are
``at_risk``; a mapping that maps every ID to itself (a rootful ``--userns=keep-id`` container gets the host's
own, 0:0:4294967295) shifts nothing and is ``ok``. The opt-in
``export_owners`` probe streams ``podman export`` into a tar reader (nothing
is written to disk) and reads the owners of files that are root's in every
image.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.detection import Detection
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import cli as podman
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, make_remediation, worst_instance


def _container_instance(cli, container, settings, probe_budget):
    name = 'container %s (%s)' % (container.name, cli.label)
    evidence = container.evidence()
    evidence['user'] = cli.label
    if not container.own_mapping:
        return instance(name, 'ok', '%s has no ID mapping of its own; its export keeps the owners.' % name, evidence)
    mapping = ', '.join(container.uid_map) or container.userns_mode
    shift, why = container.mapping_shift()
    evidence['mapping'] = shift
    evidence['mapping_reason'] = why
    if shift == 'identity':
        # The export writes the owners as they are on disk, host IDs; with nothing moved they are the container's.
        return instance(name, 'ok', '%s has its own user namespace, but %s: podman export writes the owners the '
                        'container sees.' % (name, why), evidence)
    if not probe_budget:
        if probe_budget is None:
            how = 'run the export_owners probe to measure it'
        else:
            how = 'not probed: probe_max_containers reached'
        if shift == 'unknown':
            return instance(name, 'at_risk', '%s has its own mapping (%s) and %s, so whether it shifts owners is not '
                            'known; podman export and podman cp ctr:/ - write shifted owners if it does (%s).'
                            % (name, mapping, why, how), evidence)
        return instance(name, 'at_risk', '%s has its own mapping and %s: podman export and podman cp ctr:/ - '
                        'write shifted owners (%s).' % (name, why, how), evidence)
    probe_budget.pop()
    # Imported here, when a probe runs: probes are opt-in, and every module the audit imports is
    # compiled from the payload on every host, every run.
    from ansible_collections.homelab.postmortem.plugins.module_utils.podman import export as podman_export
    try:
        found, read = podman_export.owners_of_command(
            cli.stream_command(['export', container.id]), settings['probe_timeout'], settings['probe_max_bytes'],
            runner=cli.ctx.runner)
    except (podman.PodmanProblem, podman_export.StreamProblem) as exc:
        evidence['probe'] = 'failed: %s' % exc
        return instance(name, 'unknown', '%s: the export_owners probe failed: %s' % (name, exc), evidence)
    owners = dict((path, '%d/%d' % (o['uid'], o['gid'])) for path, o in sorted(found.items()))
    wrong = podman_export.shifted(found)
    evidence['probe'] = {'owners': owners, 'bytes_read': read, 'written_to_disk': False}
    if not owners:
        return instance(name, 'unknown', '%s: the export has none of %s, so its owners cannot be checked.'
                        % (name, ', '.join(podman_export.ROOT_OWNED)), evidence)
    if wrong:
        return instance(name, 'affected', '%s: podman export wrote %s (should be 0/0); every owner in its exports '
                        'is shifted by the mapping %s.'
                        % (name, ', '.join('%s as %d/%d' % (p, o['uid'], o['gid']) for p, o in sorted(wrong.items())),
                           mapping), evidence)
    evidence['note'] = 'podman cp ctr:/ - was not measured; upstream did not fix it with the export fix.'
    return instance(name, 'ok', '%s: podman export kept the owners (%s).'
                    % (name, ', '.join('%s %s' % kv for kv in sorted(owners.items()))), evidence)


def _user_instances(ctx, cli, settings):
    try:
        # podman ps first: a user without containers needs nothing else asked.
        containers = cli.containers()
        facts = cli.facts() if containers else None
    except podman.PodmanProblem as exc:
        return [instance('podman of %s' % cli.label, 'error', str(exc))], None
    budget = None
    if 'export_owners' in ctx.probes:
        budget = [True] * max(0, int(settings['probe_max_containers']))
    found = [_container_instance(cli, c, settings, budget) for c in containers]
    summary = {'user': cli.label, 'podman_version': facts['version'] if facts else None,
               'rootless': facts['rootless'] if facts else None,
               'podman_facts': facts['sources'] if facts else 'not read: no container',
               'containers': len(containers), 'mapped': sum(1 for c in containers if c.own_mapping),
               'shifting': sum(1 for c in containers if c.own_mapping and c.mapping_shift()[0] != 'identity')}
    return found, summary


def _judge_each_user(ctx, detection, settings):
    # Its first question (podman ps, per user) is asked inside the per-user loop: the question is the whole
    # detection, and there is no verdict to load.
    clis = podman.users_to_check(ctx, settings.get('users'))
    instances, users = [], []
    for cli in clis:
        if cli.user and not ctx.is_root:
            instances.append(instance('podman of %s' % cli.user, 'unknown',
                                      "Reading %s's containers needs root (become: true)." % cli.user))
            continue
        found, summary = _user_instances(ctx, cli, settings)
        instances.extend(found)
        if summary:
            users.append(summary)
    evidence = {'users': users, 'probe': 'export_owners' in ctx.probes}
    if not any(u['containers'] for u in users) and all(i['status'] == 'ok' for i in instances):
        return make_finding(detection, 'not_applicable', 'No containers for %s.' % ', '.join(c.label for c in clis),
                            evidence=evidence)
    counts = {}
    for i in instances:
        counts[i['status']] = counts.get(i['status'], 0) + 1
    if counts.get('affected'):
        summary = '%d container(s) export with shifted owners (measured)' % counts['affected']
    elif counts.get('at_risk'):
        summary = ('%d container(s) have an ID mapping that moves IDs (or one inspect does not show); their exports and '
                   'podman cp write shifted owners' % counts['at_risk'])
    elif counts.get('error') or counts.get('unknown'):
        # Say what went wrong, not that nothing did.
        summary = worst_instance(instances, among=('error', 'unknown'))['summary'].rstrip('.')
    else:
        summary = 'No container of %s exports shifted owners' % ', '.join(c.label for c in clis)
    others = ', '.join('%d %s' % (n, s) for s, n in sorted(counts.items()) if s not in ('affected', 'at_risk'))
    summary += ' (%d checked%s).' % (len(instances), '; ' + others if others else '')
    evidence['mapped_containers'] = sum(u['mapped'] for u in users)
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)


DETECTION = Detection(
    'podman_export_idmap',
    group='podman',
    title='podman export and podman cp of an ID-mapped container write every owner shifted, exit 0',
    # The module user's own containers need no root; other users' (setting users) do.
    applies={'image': False, 'binary': 'podman', 'root': None},
    references=[
        'https://github.com/containers/podman/issues/29856',
        'https://github.com/containers/podman/pull/29899',
    ],
    remediation=make_remediation(
        module='homelab.postmortem.podman_safe_export',
        manual=[
            'Export through a commit: homelab.postmortem.podman_safe_export (commit, create a plain container '
            'from the image, export that, check the owners, remove the temporaries).',
            'By hand: podman commit CTR tmp-export; c=$(podman create tmp-export); podman export "$c" > CTR.tar; '
            'podman rm "$c"; podman rmi tmp-export.',
            'Check any archive before trusting it: tar tvf CTR.tar etc/passwd must show 0/0.',
            'An archive already made this way cannot be fixed by adding an offset; export it again through a commit.',
        ],
        disruption='none',
    ),
    probes=('export_owners',),
    settings={
        'users': {'type': 'list', 'elements': 'str', 'default': [],
                  'description': 'Users whose rootless containers are checked besides the one the module runs as (needs root).'},
        'probe_max_containers': {'type': 'int', 'default': 5, 'min': 0, 'max': 1000,
                                 'description': 'Containers the export_owners probe exports per user.'},
        'probe_timeout': {'type': 'int', 'default': 60, 'min': 1, 'max': 3600,
                          'description': 'Seconds one probe export may take.'},
        'probe_max_bytes': {'type': 'int', 'default': 512 * 1024 * 1024, 'min': 1024, 'max': 64 * 1024 * 1024 * 1024,
                            'description': 'Bytes of one export the probe reads at most.'},
    },
    question=_judge_each_user,
)
