"""docker/overlay_recovery.py: the docker_overlay_recover plan, every branch, from findings in the shape
docs/docker_overlay_sandbox.md ("Evidence") gives them, and the containers to start again from a fake
Engine API on a unix socket (tests/hostile_servers.py) answering the inspect shapes recorded from dockerd
20.10 (../shared/reference/docker/container-inspect-c1.json: a plain container, RestartPolicy "no";
container-inspect-web-task.json: a swarm task, RestartPolicy "", label com.docker.swarm.task.id).

What the plan does is this product's rule (docs/docker_overlay_sandbox.md, "The fix"); which containers
dockerd starts again itself is upstream's (overlay_recovery.DAEMON_RESTARTS cites moby). The real run is the
role's Molecule scenario and tests/e2e/test_docker_overlay_real.py on a two-node swarm.
"""
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.docker import api as docker_api
from ansible_collections.homelab.postmortem.plugins.module_utils.docker import overlay_recovery as recovery

from ....helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position


def container(name, status, cause, summary=None, **evidence):
    return {'name': 'container %s on ovs' % name, 'status': status, 'summary': summary or '%s: %s' % (name, cause),
            'evidence': dict({'kind': 'container', 'cause': cause, 'container': name, 'id': name[:12],
                              'network': 'ovs'}, **evidence)}


def failed_starts(status, cause, services, network='ovs'):
    return {'name': 'failed starts on %s' % network, 'status': status, 'summary': 'tasks failed on %s' % network,
            'evidence': {'kind': 'failed_starts', 'cause': cause, 'network': network, 'services': services}}


def finding(status, *instances, summary='the summary', **evidence):
    found = {'id': 'docker_overlay_sandbox', 'status': status, 'summary': summary, 'evidence': dict(evidence)}
    if instances:
        found['evidence']['instances'] = list(instances)
    return found


CUT = container('web', 'affected', 'no_carrier', carrier=False, causes=['no_carrier'])
FINE = container('db', 'ok', 'overlay_up', carrier=True)
UNSEEN = container('api', 'unknown', 'sandbox_unseen', 'api has its carrier, sandbox unseen', carrier=True)
UNREADABLE = container('cache', 'unknown', 'unreadable', 'cache cannot be judged: field State.Pid is a string')
FAILING = failed_starts('at_risk', 'in_affected_range', ['svc1', 'svc2'])


class Reader:
    """read_start_again, counting its calls: the node's containers are read only when something is cut off."""

    def __init__(self, names=('pm-c1',), notes=()):
        self.calls = 0
        self.answer = (list(names), list(notes))

    def __call__(self):
        self.calls += 1
        return self.answer


# --- plan -------------------------------------------------------------------------------------


@pytest.mark.parametrize('found', [
    finding('ok', FINE),
    finding('not_applicable'),
    # Failed starts that cannot be judged (an Engine version that does not parse) are a risk, not a cut.
    finding('unknown', FINE, failed_starts('unknown', 'engine_version_unknown', ['svc1'])),
    finding('at_risk', FINE, FAILING),
])
def test_nothing_cut_off_plans_nothing_and_reads_nothing(found):
    reader = Reader()
    planned = recovery.plan(found, reader, scale_down=['user-svc'], scale_down_failing=True, restart=True)
    result = planned.result(check_mode=False)
    assert reader.calls == 0
    assert (result['restart_required'], result['restart'], result['scale_down'], result['start_again'], result['steps']) == (
        False, False, [], [], [])
    assert result['msg'] == 'nothing: no container on this node is cut off its overlay network (the summary)'


def test_cut_off_without_restart_says_the_containers_stay_cut_off():
    reader = Reader()
    result = recovery.plan(finding('affected', CUT, FINE), reader).result(check_mode=False)
    assert (result['cut_off'], result['restart_required'], result['restart']) == (['web'], True, False)
    assert result['msg'] == 'cut off: web'
    assert result['steps'] == ['NOT restarting dockerd (restart is off): the containers stay cut off']
    assert reader.calls == 1  # check mode shows what would be started again, as before the restart


def test_cut_off_with_restart_plans_every_step_and_check_mode_says_would():
    planned = recovery.plan(finding('affected', CUT, FINE), Reader(['pm-c1', 'side']), restart=True,
                            restart_command=['systemctl', 'restart', 'docker'], probe=True)
    steps = ['restart dockerd: systemctl restart docker', 'wait until the daemon answers and the swarm state is active',
             'start again: pm-c1, side', 'check with the detection and the overlay_ping probe']
    assert planned.result(check_mode=False)['steps'] == steps
    checked = planned.result(check_mode=True)
    assert checked['steps'] == ['would: %s' % step for step in steps]
    assert (checked['restart'], checked['start_again']) == (True, ['pm-c1', 'side'])


def test_nothing_to_start_again_is_said():
    result = recovery.plan(finding('affected', CUT), Reader([]), restart=True).result(check_mode=False)
    assert 'start again: none' in result['steps'] and 'check with the detection' in result['steps']


@pytest.mark.parametrize('found,reason', [
    (finding('unknown', FINE, UNREADABLE), 'cache cannot be judged: field State.Pid is a string'),
    (finding('unknown', {'name': 'network ovs', 'status': 'unknown', 'summary': 'network ovs cannot be judged: x.',
                         'evidence': {'kind': 'network', 'cause': 'unreadable', 'network': 'ovs'}}),
     'network ovs cannot be judged: x.'),
    (finding('unknown', summary='Docker API GET /version did not answer within 10 s'),
     'Docker API GET /version did not answer within 10 s'),
    (finding('error', summary='Docker API GET /networks answered a string'), 'Docker API GET /networks answered a string'),
    (finding('unknown', container('x', 'unknown', 'interfaces_unreadable', 'x: its interfaces cannot be read')),
     'x: its interfaces cannot be read'),
    # A kind this plan does not know may hide a container cut off.
    (finding('affected', {'name': 'n', 'status': 'affected', 'summary': 'new', 'evidence': {'kind': 'volume'}}),
     "new (an instance of kind 'volume', which this plan does not know)"),
    (finding('affected', {'name': 'n', 'status': 'affected', 'summary': 'old', 'evidence': {}}),
     "old (an instance of kind None, which this plan does not know)"),
    (finding('ok', FINE, instances_omitted={'count': 3, 'by_status': {'unknown': 3}, 'limit': 1}),
     '3 unknown instance(s) were left out of the finding (max_instances)'),
    (finding('unknown', '(cut: evidence larger than 2097152 characters)'), 'an instance of the finding is not an object'),
    (finding('affected', FINE), 'the finding is affected, but no container in it is: the summary'),
])
def test_not_judged_with_nothing_cut_off_stops_and_changes_nothing(found, reason):
    reader = Reader()
    with pytest.raises(recovery.PlanRefused) as refused:
        recovery.plan(found, reader, scale_down=['user-svc'], restart=True)
    assert str(refused.value).startswith('docker_overlay_sandbox is %s here and nothing is proven cut off: ' % found['status'])
    assert reason in str(refused.value)
    assert reader.calls == 0


def test_a_cut_off_container_is_recovered_even_when_another_cannot_be_judged():
    result = recovery.plan(finding('affected', CUT, UNREADABLE), Reader(), restart=True).result(check_mode=False)
    assert (result['cut_off'], result['not_judged'], result['restart']) == (
        ['web'], ['cache cannot be judged: field State.Pid is a string'], True)


def test_a_container_confirmed_only_by_its_carrier_is_unconfirmed_not_refused():
    result = recovery.plan(finding('unknown', UNSEEN, FINE), Reader(), restart=True).result(check_mode=False)
    assert (result['unconfirmed'], result['not_judged'], result['restart_required']) == (
        ['api has its carrier, sandbox unseen'], [], False)


def test_cut_off_beyond_max_instances_still_needs_the_restart():
    found = finding('affected', FINE, instances_omitted={'count': 2, 'by_status': {'affected': 2}, 'limit': 1})
    result = recovery.plan(found, Reader(), restart=True).result(check_mode=False)
    assert (result['restart_required'], result['cut_off']) == (True, [])
    assert result['msg'] == 'cut off: 2 more left out of the finding (max_instances)'


# --- which services are scaled down ------------------------------------------------------------


@pytest.mark.parametrize('scale_down,switch,expected', [
    ([], False, []),
    (['user-svc'], False, ['user-svc']),                      # the user's list only: the switch is off
    ([], True, ['svc1', 'svc2']),                             # the services the detection names
    (['svc2', 'user-svc'], True, ['svc2', 'user-svc', 'svc1']),  # both, each once, the user's first
])
def test_services_scaled_down_are_the_users_and_with_the_switch_the_failing_ones(scale_down, switch, expected):
    found = finding('affected', CUT, FAILING, failed_starts('ok', 'outside_affected_range', ['svc1'], network='other'))
    result = recovery.plan(found, Reader(), scale_down=scale_down, scale_down_failing=switch,
                           restart=True).result(check_mode=True)
    assert result['scale_down'] == expected
    assert result['failing_services'] == ['svc1', 'svc2']
    assert result['steps'][:len(expected)] == ['would: scale service %s to 0' % s for s in expected]


def test_a_service_name_that_is_not_a_docker_name_is_never_scaled():
    found = finding('affected', CUT, failed_starts('at_risk', 'in_affected_range', ['svc1', '--all', 7]))
    result = recovery.plan(found, Reader(), scale_down_failing=True).result(check_mode=False)
    assert result['scale_down'] == ['svc1']
    assert result['notes'] == ["service '--all' named by the finding is not a Docker name or id; it is not scaled",
                               'service 7 named by the finding is not a Docker name or id; it is not scaled']
    with pytest.raises(recovery.PlanRefused, match="scale_down: '-x' is not a Docker service name"):
        recovery.plan(found, Reader(), scale_down=['-x'])


def test_a_finding_of_another_detection_is_refused():
    with pytest.raises(recovery.PlanRefused, match="not a docker_overlay_sandbox finding \\(id 'pi_ir_tx'\\)"):
        recovery.plan(dict(finding('ok'), id='pi_ir_tx'), Reader())


# --- verify ----------------------------------------------------------------------------------------


def test_verify_passes_a_recovered_node_and_names_what_only_its_carrier_confirms():
    assert recovery.verify(finding('ok', FINE)).unconfirmed == []
    assert recovery.verify(finding('unknown', UNSEEN, FINE)).unconfirmed == ['api has its carrier, sandbox unseen']


@pytest.mark.parametrize('found,message', [
    (finding('affected', CUT, UNREADABLE, summary='1 running container(s) cut off'),
     'Still affected after the recovery: 1 running container(s) cut off; cache cannot be judged: field State.Pid is a string'),
    (finding('unknown', UNREADABLE), 'Still unknown after the recovery: cache cannot be judged: field State.Pid is a string'),
    (finding('unknown', summary='Docker API GET /version did not answer within 10 s'),
     'Still unknown after the recovery: Docker API GET /version did not answer within 10 s'),
])
def test_verify_fails_on_a_container_still_cut_off_or_not_judged(found, message):
    with pytest.raises(recovery.RecoveryFailed) as failed:
        recovery.verify(found)
    assert str(failed.value) == message


# --- the containers to start again -----------------------------------------------------------------


def inspect(name, policy, task=False, auto_remove=False):
    """The fields read, as dockerd 20.10 gives them (../shared/reference/docker/container-inspect-*.json)."""
    labels = {'com.docker.swarm.task.id': 'pu6oy027ukifnvg3pubeltne2', 'com.docker.swarm.service.name': 'web'} if task else {}
    return (200, {'Name': '/' + name, 'State': {'Running': True},
                  'HostConfig': {'RestartPolicy': {'Name': policy, 'MaximumRetryCount': 0}, 'AutoRemove': auto_remove},
                  'Config': {'Labels': labels}})


def daemon(tmp_path, containers):
    table = {'/containers/json': (200, [{'Id': cid} for cid in sorted(containers)])}
    table.update(('/containers/%s/json' % cid, reply) for cid, reply in containers.items())
    return hs.MisbehavingServer(hs.routes(table), unix_path=str(tmp_path / 'docker.sock'))


def test_containers_dockerd_does_not_start_again_are_started_by_the_plan(tmp_path):
    """dockerd restores always and unless-stopped containers itself, on-failure ones only after a non-zero
    exit (moby restartmanager.go, cited at overlay_recovery.DAEMON_RESTARTS); swarm starts its own tasks."""
    with daemon(tmp_path, {'a1': inspect('pm-c1', 'no'), 'a2': inspect('pm-c3', 'always'), 'a3': inspect('keep', 'unless-stopped'),
                           'a4': inspect('onfail', 'on-failure'), 'a5': inspect('web.1.pu6oy', '', task=True),
                           'a6': inspect('empty', ''), 'a7': inspect('temp', 'no', auto_remove=True),
                           'a8': (404, {'message': 'No such container: a8'})}) as server:
        names, notes = recovery.containers_to_start_again(docker_api.DockerApi(server.unix_path, 2))
    assert names == ['empty', 'onfail', 'pm-c1']
    assert notes == ['container temp runs with --rm: the restart removes it; run it again by hand']


@pytest.mark.parametrize('reply,reason', [
    (inspect('x', 7), 'field HostConfig.RestartPolicy.Name is a number'),
    ((200, {'Name': 5}), 'field Name is a number'),
    ((500, {'message': 'boom'}), 'failed with HTTP 500: boom'),
])
def test_containers_that_cannot_be_read_stop_the_plan(tmp_path, reply, reason):
    with daemon(tmp_path, {'a1': reply}) as server:
        with pytest.raises(docker_api.DockerProblem, match=reason):
            recovery.containers_to_start_again(docker_api.DockerApi(server.unix_path, 2))
