"""Nights of a watched fleet replayed through the real playbook (issue 34): a flaky night never raises a
false "new finding", a run that audited nothing never passes, no bad run destroys the last good report.

The Pis are image audits of card directories on this machine (postmortem_root), so a night's state is
set by editing their files; an "unreachable" host is an ssh host pointed at a closed port on 127.0.0.1
(refused at once, no run waits on an ssh timeout); a "failed" host's interpreter does not exist. Every
night writes its metrics into a textfile directory, and every .prom file passes promtool (conftest).
The runs are seconds apart: how many days a host has been unmeasured is the unit tests' (they set the
clock); here the drift lines, the gate's exit code and the metrics are what each night asserts.
"""
import json
import os
import shutil
import subprocess

from helpers import BUILD, REPO_ROOT, VENV_BIN, ansible_env, free_port, local_host, run_audit

WRAPPER_TEMPLATE = os.path.join(REPO_ROOT, 'roles', 'audit_schedule', 'templates', 'run-audit.sh.j2')
GATE = {'postmortem_checks': ['pi_ir_tx'], 'postmortem_fail_on': 'at_risk', 'postmortem_fail_on_new_only': True,
        'postmortem_fail_on_unaudited': False}


def card(tmp_path, name, overlay='pwm-ir-tx,gpiopin=17'):
    """A Pi's SD card: an at_risk pi_ir_tx (pwm-ir-tx on a 6.18 kernel) unless the overlay says otherwise."""
    root = tmp_path / name
    (root / 'boot' / 'firmware').mkdir(parents=True, exist_ok=True)
    (root / 'lib' / 'modules' / '6.18.3+rpt-rpi-v8').mkdir(parents=True, exist_ok=True)
    (root / 'boot' / 'firmware' / 'config.txt').write_text('dtoverlay=%s\n' % overlay)
    return root


def up(root):
    return local_host(postmortem_root=str(root))


def unreachable():
    """Nothing listens on the port: ssh is refused at once."""
    return {'ansible_connection': 'ssh', 'ansible_host': '127.0.0.1', 'ansible_port': free_port(), 'ansible_user': 'nobody',
            'ansible_ssh_common_args': '-o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=no'}


def failing():
    """The module cannot start: its interpreter does not exist (rc 127)."""
    return local_host(ansible_python_interpreter='/nonexistent/bin/python3')


class Fleet:
    """One report directory and one textfile directory, night after night."""

    def __init__(self, tmp_path, **variables):
        self.tmp_path = tmp_path
        self.reports = tmp_path / 'reports'
        self.textfiles = tmp_path / 'textfile'
        self.textfiles.mkdir(parents=True, exist_ok=True)
        self.variables = variables
        self.nights = 0

    def night(self, hosts, **extra):
        self.nights += 1
        variables = dict(self.variables, postmortem_report_dir=str(self.reports), postmortem_textfile_dir=str(self.textfiles))
        variables.update(extra)
        run = run_audit(self.tmp_path / ('night%d' % self.nights), {'all': {'hosts': hosts}}, variables)
        run.metrics = metrics(self.textfiles / 'postmortem.prom')
        return run

    def history(self):
        with open(str(self.reports / 'postmortem-history.json')) as handle:
            return json.load(handle)


def metrics(path):
    """{'name{labels}': value} of a .prom file (comments left out)."""
    found = {}
    with open(str(path)) as handle:
        for line in handle:
            if line.strip() and not line.startswith('#'):
                name, value = line.rsplit(' ', 1)
                found[name] = float(value)
    return found


def opened(run):
    return dict((k, v) for k, v in run.metrics.items() if k.startswith('homelab_postmortem_finding_opened'))


def test_a_host_unreachable_for_one_night_and_for_three_raises_nothing_new(tmp_path):
    """The issue's fleet: pi1 and pi2 carry the same known at_risk finding, the gate fails only on new
    findings. pi2 goes away for one night, comes back, goes away for three, comes back: no night after
    opens anything, fails the gate or sets finding_opened; the unmeasured nights say so."""
    pi1, pi2 = card(tmp_path, 'pi1'), card(tmp_path, 'pi2')
    fleet = Fleet(tmp_path, **GATE)
    first = fleet.night({'pi1': up(pi1), 'pi2': up(pi2)}, postmortem_fail_on='never')
    assert first.proc.returncode == 0, first.output
    known = fleet.night({'pi1': up(pi1), 'pi2': up(pi2)})
    assert known.proc.returncode == 0 and 'Gate: passed (nothing new at or above at_risk).' in known.output, known.output
    measured_at = known.metrics['homelab_postmortem_last_measured_timestamp_seconds{host="pi2"}']
    for away_nights in (1, 3):
        for _night in range(away_nights):
            away = fleet.night({'pi1': up(pi1), 'pi2': unreachable()})
            assert away.proc.returncode == 0, away.output
            assert ': 1 unmeasured.' in away.output, away.output
            assert '  not measured: pi2 ' in away.output
            away_report = away.report  # read now: the next night replaces the file
            assert away_report['hosts'][1]['drift'] == {'pi_ir_tx': 'unmeasured'}
            assert away.metrics['homelab_postmortem_host_audited{host="pi2",state="unreachable"}'] == 0
            # The metric keeps the time of the last run that measured pi2.
            assert away.metrics['homelab_postmortem_last_measured_timestamp_seconds{host="pi2"}'] == measured_at
            assert fleet.history()['last_audit']['hosts']['pi2'] == 'r'  # the measured letter, never 'U'
        back = fleet.night({'pi1': up(pi1), 'pi2': up(pi2)})
        assert back.proc.returncode == 0, back.output
        assert 'Since %s: nothing changed.' % away_report['generated_at'] in back.output, back.output
        assert 'Gate: passed (nothing new at or above at_risk).' in back.output
        assert not opened(back) and back.metrics['homelab_postmortem_drift_findings{change="opened"}'] == 0
        assert back.report['hosts'][1].get('drift') is None
        measured_at = back.metrics['homelab_postmortem_last_measured_timestamp_seconds{host="pi2"}']
        assert measured_at > 0 and 'pi2' not in (fleet.history()['last_audit'].get('host_unmeasured') or {})


def test_a_check_unknown_for_one_night_then_measured_again_is_no_new_finding(tmp_path):
    """The kernel's modules moved away for a night (pi_ir_tx cannot compare the kernel: unknown)."""
    pi1 = card(tmp_path, 'pi1')
    fleet = Fleet(tmp_path, **GATE)
    assert fleet.night({'pi1': up(pi1)}, postmortem_fail_on='never').proc.returncode == 0
    modules = pi1 / 'lib' / 'modules'
    shutil.move(str(modules), str(tmp_path / 'modules-away'))
    blind = fleet.night({'pi1': up(pi1)})
    assert blind.proc.returncode == 0, blind.output
    assert blind.report['hosts'][0]['findings']['pi_ir_tx']['status'] == 'unknown'
    assert ': 1 unmeasured.' in blind.output and '  not measured: pi1/pi_ir_tx since this run' in blind.output
    assert blind.report['hosts'][0]['unmeasured'] == {'pi_ir_tx': blind.report['generated_at']}
    shutil.move(str(tmp_path / 'modules-away'), str(modules))
    again = fleet.night({'pi1': up(pi1)})
    assert again.proc.returncode == 0, again.output
    assert ': nothing changed.' in again.output and not opened(again)


def test_a_finding_fixed_while_its_host_was_unreachable_closes_when_measured_and_its_return_reopens(tmp_path):
    pi1 = card(tmp_path, 'pi1')
    fleet = Fleet(tmp_path, **GATE)
    assert fleet.night({'pi1': up(pi1)}, postmortem_fail_on='never').proc.returncode == 0
    away = fleet.night({'pi1': unreachable()}, postmortem_fail_on_no_hosts=False)
    assert away.proc.returncode == 0 and 'NOTHING WAS AUDITED' in away.output, away.output
    card(tmp_path, 'pi1', 'gpio-ir-tx,gpio_pin=17')  # fixed meanwhile
    fixed = fleet.night({'pi1': up(pi1)})
    assert fixed.proc.returncode == 0 and ': 1 closed.' in fixed.output, fixed.output
    assert fixed.report['hosts'][0]['drift'] == {'pi_ir_tx': 'closed'}
    card(tmp_path, 'pi1')
    broken = fleet.night({'pi1': up(pi1)})
    assert broken.proc.returncode != 0
    assert ': 1 reopened.' in broken.output and 'now open: pi1/pi_ir_tx (reopened)' in broken.output
    assert 'Gate: FAILED: 1 new finding(s) at or above at_risk.' in broken.output
    assert opened(broken) == {'homelab_postmortem_finding_opened{host="pi1",check="pi_ir_tx"}': 1.0}
    # The gate fails on the controller: the recap counts it against localhost, never the audited host.
    recap = broken.recap()
    assert recap['localhost']['failed'] == 1 and recap['pi1']['failed'] == 0, recap


def test_a_renamed_host_is_a_new_host_with_its_findings_opened(tmp_path):
    pi2 = card(tmp_path, 'pi2')
    fleet = Fleet(tmp_path, **GATE)
    assert fleet.night({'pi2': up(pi2)}, postmortem_fail_on='never').proc.returncode == 0
    renamed = fleet.night({'pi2-kitchen': up(pi2)})
    assert renamed.proc.returncode != 0
    assert ': 1 opened, 1 new host(s), 1 host(s) not in this run.' in renamed.output, renamed.output
    assert 'homelab_postmortem_drift_hosts{change="vanished"}' in renamed.metrics
    assert not [k for k in renamed.metrics if 'host="pi2"' in k]  # the old name left the metrics at once


def test_nothing_audited_fails_whatever_the_cause_and_never_destroys_the_last_good_report(tmp_path):
    """All unreachable, all failed, none matched: each fails under the default gate, writes nothing_audited 1
    into the report and the textfile directory, and keeps the last good report beside its own."""
    pi1 = card(tmp_path, 'pi1')
    fleet = Fleet(tmp_path)
    good = fleet.night({'pi1': up(pi1)})
    assert good.proc.returncode == 0, good.output
    good_at = good.report['generated_at']  # read now: the next night replaces the file
    kept = fleet.reports / 'postmortem-last-good.json'
    for label, hosts, extra, why in (
            ('all unreachable', {'pi1': unreachable(), 'pi2': unreachable()}, {},
             'none of the 2 host(s) could be audited (2 unreachable)'),
            ('all failed', {'pi1': failing(), 'pi2': failing()}, {}, 'none of the 2 host(s) could be audited (2 failed)'),
            ('none matched', {'pi1': up(pi1)}, {'postmortem_hosts': 'web*'}, "no host matched 'web*'")):
        bad = fleet.night(hosts, **extra)
        assert bad.proc.returncode != 0, (label, bad.output)
        assert 'NOTHING WAS AUDITED: %s' % why in bad.output, (label, bad.output)
        assert 'Gate: FAILED: nothing was audited (postmortem_fail_on_no_hosts: true).' in bad.output
        assert bad.report['nothing_audited'].startswith(why) and bad.report['last_good']['generated_at'] == good_at
        for prom in (fleet.textfiles / 'postmortem.prom', fleet.reports / 'postmortem.prom'):
            assert metrics(prom)['homelab_postmortem_nothing_audited'] == 1, (label, prom)
        with open(str(kept)) as handle:
            assert json.load(handle)['generated_at'] == good_at, label
        assert 'The last good report (%s, 1 host(s)) is kept as:' % good_at in bad.output
        assert '  %s' % (fleet.reports / 'postmortem-last-good.html') in bad.output
        # Why, per host: each host's reason is in the summary.
        if 'matched' not in label:
            assert ('Connection refused' if 'unreachable' in label else '/nonexistent/bin/python3') in bad.output
            recap = bad.recap()
            assert recap['localhost']['failed'] == 1 and recap['pi1']['failed'] == 0, recap
    assert sorted(p for p in os.listdir(str(fleet.reports)) if 'last-good' in p) == [
        'postmortem-last-good-junit.xml', 'postmortem-last-good.html', 'postmortem-last-good.json']
    again = fleet.night({'pi1': up(pi1)})
    assert again.proc.returncode == 0, again.output
    # A good run is the last good report now: no older copy is left to be taken for it.
    assert not [p for p in os.listdir(str(fleet.reports)) if 'last-good' in p]
    assert metrics(fleet.textfiles / 'postmortem.prom')['homelab_postmortem_nothing_audited'] == 0


def render_wrapper(tmp_path, inventory, report_dir, archive_dir):
    """audit_schedule's run-audit, rendered from the role's template by Ansible itself, around this
    checkout's virtualenv and installed collection."""
    wrapper = tmp_path / 'run-audit'
    variables = {
        'audit_schedule_name': 'homelab-postmortem-audit', 'audit_schedule_timeout': 600, 'audit_schedule_keep': 5,
        '_audit_schedule_venv': os.path.dirname(VENV_BIN), '_audit_schedule_collections': os.path.join(BUILD, 'collections'),
        '_audit_schedule_vars_file': str(tmp_path / 'audit-vars.json'), '_audit_schedule_lock': str(tmp_path / 'audit.lock'),
        '_audit_schedule_report_dir': str(report_dir), '_audit_schedule_archive_dir': str(archive_dir),
        '_audit_schedule_inventories': [str(inventory)], 'audit_schedule_playbook_args': [], 'audit_schedule_environment': {},
        'ansible_python_interpreter': os.path.join(VENV_BIN, 'python')}
    (tmp_path / 'audit-vars.json').write_text(json.dumps({'postmortem_checks': ['pi_ir_tx'], 'postmortem_report_dir': str(report_dir)}))
    playbook = tmp_path / 'render.yml'
    playbook.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [
        {'ansible.builtin.template': {'src': WRAPPER_TEMPLATE, 'dest': str(wrapper), 'mode': '0755'}}]}]))
    rendered = subprocess.run([os.path.join(VENV_BIN, 'ansible-playbook'), str(playbook), '-i', 'localhost,', '-c', 'local',
                               '-e', json.dumps(variables)], env=ansible_env(), capture_output=True, text=True, timeout=120,
                              check=False)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    return wrapper


def test_audit_schedules_archive_keeps_the_last_good_report_and_leaves_a_remediation_report_out(tmp_path):
    reports, archive = tmp_path / 'report', tmp_path / 'archive'
    archive.mkdir()  # the role makes it
    inventory = tmp_path / 'inventory.json'
    wrapper = render_wrapper(tmp_path, inventory, reports, archive)

    def night(hosts):
        inventory.write_text(json.dumps({'all': {'hosts': hosts}}))
        return subprocess.run(['bash', str(wrapper)], env=ansible_env(), capture_output=True, text=True, timeout=600, check=False)

    good = night({'pi1': up(card(tmp_path, 'pi1'))})
    assert good.returncode == 0 and 'archived the reports as' in good.stdout, good.stdout + good.stderr
    with open(str(reports / 'postmortem.json')) as handle:
        good_at = json.load(handle)['generated_at']
    (reports / 'postmortem-remediate.json').write_text('{"kind": "remediation"}')  # a remediation run's, by hand
    bad = night({'pi1': unreachable()})
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert 'this run audited no host: the last good report is kept as %s' % (reports / 'postmortem-last-good.html') in bad.stdout
    newest = archive / sorted(os.listdir(str(archive)))[-1]
    copied = sorted(os.listdir(str(newest)))
    assert 'postmortem-remediate.json' not in copied and 'postmortem-last-good.html' in copied, copied
    with open(str(newest / 'postmortem-last-good.json')) as handle:
        assert json.load(handle)['generated_at'] == good_at
    with open(str(newest / 'postmortem.json')) as handle:
        assert json.load(handle)['nothing_audited'].startswith('none of the 1 host(s) could be audited (1 unreachable)')
