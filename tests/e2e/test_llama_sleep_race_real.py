"""llama_sleep_race against real llama-server processes on this machine."""
import time

from helpers import http_json, local_host, run_audit, wait_sleeping


def instance_for(finding, pid):
    matches = [i for i in finding['evidence']['instances'] if i['evidence'].get('pid') == pid]
    assert matches, 'pid %d not in %s' % (pid, [i['name'] for i in finding['evidence']['instances']])
    return matches[0]


def test_sleep_on_is_at_risk_and_sleep_off_is_ok(tmp_path, llama_server):
    sleepy = llama_server('--sleep-idle-seconds', '2')
    awake = llama_server()
    # The positive case is real: this server does go to sleep.
    assert wait_sleeping(sleepy.port)

    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_checks': ['llama_sleep_race']})
    assert run.proc.returncode == 0, run.output
    finding = run.finding('localhost', 'llama_sleep_race')
    assert finding['status'] == 'at_risk'

    risky = instance_for(finding, sleepy.pid)
    assert risky['status'] == 'at_risk'
    assert risky['evidence']['sleep_idle_seconds'] == 2
    assert risky['evidence']['source'] == 'argv[12] --sleep-idle-seconds 2'
    # Started by this test, not by systemd: nothing would restart it after a crash.
    assert risky['evidence']['supervisor']['unit'] is None
    assert risky['evidence']['supervisor']['crash_restarted'] is False
    assert 'NOT restarted' in risky['summary']

    fine = instance_for(finding, awake.pid)
    assert fine['status'] == 'ok' and fine['evidence']['sleep_idle_seconds'] == -1
    # The audit never talks to the server: the sleeping one is still asleep.
    assert http_json('http://127.0.0.1:%d/props' % sleepy.port)['is_sleeping'] is True


def test_sleep_environment_variable_is_not_read_by_llama_server(tmp_path, llama_server):
    """Measured: LLAMA_ARG_SLEEP_IDLE_SECONDS does not turn sleep on, so it is not a finding."""
    server = llama_server(env={'LLAMA_ARG_SLEEP_IDLE_SECONDS': '1'})
    time.sleep(3)
    assert http_json('http://127.0.0.1:%d/props' % server.port)['is_sleeping'] is False

    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}},
                    {'postmortem_checks': ['llama_sleep_race']})
    assert run.proc.returncode == 0, run.output
    entry = instance_for(run.finding('localhost', 'llama_sleep_race'), server.pid)
    assert entry['status'] == 'ok'
    assert 'does not read it' in entry['evidence']['note']
    assert entry['evidence']['source'] == 'default'
