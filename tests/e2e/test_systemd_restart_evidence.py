"""llama_sleep_race's Restart= evidence from a real systemd (PID 1 in a podman container).

Real llama-server processes run as systemd services inside the container; the
audit reaches the container through the containers.podman connection plugin,
so the module runs there as it would on a managed host.
"""
import os
import time

from conftest import podman
from helpers import run_audit

MODEL = '/models/gemma3-270m-q4_k_m.gguf'
UNITS = {
    # unit: (extra ExecStart args, [Service] lines, drop-in lines)
    'llama-norestart.service': ('--port 8091 --sleep-idle-seconds 30', 'Restart=no', None),
    'llama-restart.service': ('--port 8092 --sleep-idle-seconds 30', 'Restart=on-failure', None),
    'llama-dropin.service': ('--port 8093 --sleep-idle-seconds 30', 'Restart=no', 'Restart=always'),
    'llama-nosleep.service': ('--port 8094', 'Restart=no', None),
}


def install_units(container):
    script = []
    for unit, (args, service, dropin) in UNITS.items():
        script.append("printf '%%s\\n' '[Unit]' 'Description=%s' '[Service]' "
                      "'ExecStart=/opt/llama/llama-server -m %s -c 512 -np 1 --no-repack %s' '%s' > /etc/systemd/system/%s"
                      % (unit, MODEL, args, service, unit))
        if dropin:
            script.append("mkdir -p /etc/systemd/system/%s.d && printf '%%s\\n' '[Service]' '%s' > /etc/systemd/system/%s.d/restart.conf"
                          % (unit, dropin, unit))
    script.append('systemctl daemon-reload')
    script.append('systemctl start %s' % ' '.join(UNITS))
    podman('exec', container, 'sh', '-c', ' && '.join(script))
    deadline = time.time() + 60
    while time.time() < deadline:
        states = podman('exec', container, 'systemctl', 'is-active', *UNITS, check=False).stdout.split()
        if states == ['active'] * len(UNITS):
            return
        time.sleep(0.5)
    status = podman('exec', container, 'systemctl', 'status', '--no-pager', *UNITS, check=False).stdout
    raise AssertionError('units did not start: %s' % status)


def test_restart_setting_of_the_owning_unit_is_evidence(tmp_path, systemd_container):
    install_units(systemd_container)
    inventory = {'all': {'hosts': {'box': {
        'ansible_connection': 'containers.podman.podman',
        'ansible_host': systemd_container,
        'ansible_python_interpreter': '/usr/bin/python3',
    }}}}
    run = run_audit(tmp_path, inventory, {'postmortem_checks': ['llama_sleep_race']})
    assert run.proc.returncode == 0, run.output
    finding = run.finding('box', 'llama_sleep_race')
    assert finding['status'] == 'at_risk'
    by_unit = dict((i['evidence'].get('supervisor', {}).get('unit') or i['evidence']['argv'][-1], i)
                   for i in finding['evidence']['instances'])

    norestart = by_unit['llama-norestart.service']['evidence']['supervisor']
    assert (norestart['restart'], norestart['crash_restarted']) == ('no', False)
    assert norestart['fragment_path'] == '/etc/systemd/system/llama-norestart.service'

    restart = by_unit['llama-restart.service']['evidence']['supervisor']
    assert (restart['restart'], restart['crash_restarted']) == ('on-failure', True)

    dropin = by_unit['llama-dropin.service']['evidence']['supervisor']
    assert (dropin['restart'], dropin['crash_restarted']) == ('always', True)
    assert dropin['drop_ins'] == ['/etc/systemd/system/llama-dropin.service.d/restart.conf']

    # No sleep flag: ok, and no supervisor lookup is needed.
    nosleep = [i for i in finding['evidence']['instances'] if '--sleep-idle-seconds' not in i['evidence']['argv']]
    assert [i['status'] for i in nosleep] == ['ok'], nosleep
    assert '2 would stay down' not in finding['summary'] and '1 would stay down after a crash' in finding['summary']
    assert os.path.basename(by_unit['llama-norestart.service']['evidence']['argv'][0]) == 'llama-server'
