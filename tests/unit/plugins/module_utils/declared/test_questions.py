"""The questions a declared check asks a host (module_utils/declared/questions.py), against real
files, FIFOs, commands, a loopback HTTP server and this machine's /proc; /proc/net and process
tables from fixtures where the point is the parsing (the rows' layout is the kernel's,
Documentation/networking/proc_net_tcp.rst)."""
import os
import socket
import sys
import time

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.declared import questions, spec
from ansible_collections.homelab.postmortem.plugins.module_utils.runner import CommandRunner

from ....helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
import hostile_servers as hs  # noqa: E402  pylint: disable=wrong-import-position


def _q(kind, **options):
    options.update(name='q', kind=kind)
    normalized, problems = spec.normalize_question(options)
    assert not problems, problems
    return normalized


def _ask(ctx, kind, **options):
    with ctx.runner.budget(30):
        return questions.ask(ctx, _q(kind, **options), questions.Shared())


def test_file_stat_and_every_content_parser(tmp_path):
    (tmp_path / 'a.json').write_text('{"ok": true, "n": [1, 2]}')
    (tmp_path / 'a.ini').write_text('top = 1\n[Service]\nRestart=no\n# c\nRestart = always\n[Unit]\nName: x\n')
    (tmp_path / 'a.env').write_text('# comment\nexport A="one two"\nB=\'2\'\nnot a pair\nC=3=4\n')
    (tmp_path / 'a.txt').write_text('\ufeffone\ntwo\n')
    ctx = AuditContext()
    answer = _ask(ctx, 'file', path=str(tmp_path / 'a.json'), content='json')
    assert answer['exists'] and answer['type'] == 'file' and answer['content'] == {'ok': True, 'n': [1, 2]}
    assert answer['mode'] == '%04o' % (os.stat(tmp_path / 'a.json').st_mode & 0o7777) and answer['error'] is None
    assert abs(answer['mtime'] - os.stat(tmp_path / 'a.json').st_mtime) < 1e-6
    assert _ask(ctx, 'file', path=str(tmp_path / 'a.ini'), content='ini')['content'] == \
        {'': {'top': '1'}, 'Service': {'Restart': 'always'}, 'Unit': {'Name': 'x'}}
    assert _ask(ctx, 'file', path=str(tmp_path / 'a.env'), content='keyvalue')['content'] == \
        {'A': 'one two', 'B': '2', 'C': '3=4'}
    assert _ask(ctx, 'file', path=str(tmp_path / 'a.txt'), content='lines')['content'] == ['one', 'two']
    missing = _ask(ctx, 'file', path=str(tmp_path / 'nope'), content='text')
    assert (missing['exists'], missing['content'], missing['error']) == (False, None, None)
    os.symlink(str(tmp_path / 'gone'), str(tmp_path / 'dangling'))
    dangling = _ask(ctx, 'file', path=str(tmp_path / 'dangling'))
    assert (dangling['exists'], dangling['link_target']) == (False, str(tmp_path / 'gone'))


def test_file_reads_that_would_block_or_never_end_are_refused_unread(tmp_path):
    os.mkfifo(str(tmp_path / 'fifo'))
    big = tmp_path / 'sparse'
    with open(str(big), 'wb') as handle:
        # A 10 GB file that costs nothing on disk, like /proc/kcore (a "regular file" of 128 TiB): refused
        # by its size before a byte is read.
        handle.truncate(10 * 1024 ** 3)
    (tmp_path / 'bin').write_bytes(b'a\x00b')
    ctx = AuditContext()
    started = time.monotonic()
    fifo = _ask(ctx, 'file', path=str(tmp_path / 'fifo'), content='text')
    assert fifo['error'] == '%s: is a fifo, not a regular file; its content was not read' % (tmp_path / 'fifo')
    sparse = _ask(ctx, 'file', path=str(big), content='text')
    assert sparse['error'] == '%s: is larger than 65536 bytes; refusing to parse it' % big
    directory = _ask(ctx, 'file', path=str(tmp_path), content='text')
    assert directory['error'].endswith('is a directory, not a regular file; its content was not read')
    assert 'contains NUL bytes' in _ask(ctx, 'file', path=str(tmp_path / 'bin'), content='text')['error']
    assert time.monotonic() - started < 2


def test_an_image_audit_reads_under_root_and_never_leaves_it(tmp_path):
    (tmp_path / 'etc').mkdir()
    (tmp_path / 'etc' / 'fstab').write_text('UUID=1 /data ext4 defaults 0 2\n')
    os.symlink('/etc/fstab', str(tmp_path / 'etc' / 'link'))
    ctx = AuditContext(root=str(tmp_path))
    assert _ask(ctx, 'file', path='/etc/fstab', content='lines')['content'] == ['UUID=1 /data ext4 defaults 0 2']
    assert _ask(ctx, 'file', path='/etc/link', content='lines')['content'] == ['UUID=1 /data ext4 defaults 0 2']
    assert 'leaves the image root' in _ask(ctx, 'file', path='/../../etc/passwd')['error']


def test_glob_is_bounded_and_hides_dot_files(tmp_path):
    for name in ('a.tar', 'b.tar', '.hidden.tar', 'c.txt'):
        (tmp_path / 'backups' / 'x').mkdir(parents=True, exist_ok=True)
        (tmp_path / 'backups' / 'x' / name).write_text(name)
    ctx = AuditContext()
    answer = _ask(ctx, 'glob', pattern=str(tmp_path / 'backups' / '*' / '*.tar'))
    assert [m['path'] for m in answer['matches']] == [str(tmp_path / 'backups/x/a.tar'), str(tmp_path / 'backups/x/b.tar')]
    assert answer['matches'][0]['size'] == 5 and not answer['truncated']
    capped = _ask(ctx, 'glob', pattern=str(tmp_path / 'backups/x/*'), max_matches=1)
    assert (capped['count'], capped['truncated']) == (1, True)
    assert _ask(ctx, 'glob', pattern=str(tmp_path / 'nothing' / '*'))['matches'] == []


def test_glob_over_too_many_names_stops_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(questions, 'MAX_GLOB_SCANNED', 50)
    for number in range(60):
        (tmp_path / ('f%d' % number)).write_text('')
    assert 'looked at more than 50 names' in _ask(AuditContext(), 'glob', pattern=str(tmp_path / '*'))['error']


def test_command_answers_rc_output_and_missing_programs():
    ctx = AuditContext()
    answer = _ask(ctx, 'command', argv=[sys.executable, '-c', 'import sys; print("{\\"a\\": 1}"); sys.exit(3)'],
                  parse='json')
    assert (answer['found'], answer['rc'], answer['stdout'], answer['error']) == (True, 3, {'a': 1}, None)
    lines = _ask(ctx, 'command', argv=['printf', 'one\\ntwo\\n'], parse='lines')
    assert lines['stdout'] == ['one', 'two'] and lines['program'].endswith('/printf')
    missing = _ask(ctx, 'command', argv=['no-such-program-here'])
    assert (missing['found'], missing['rc'], missing['error']) == (False, None, None)


def test_command_that_hangs_or_floods_is_the_questions_error():
    ctx = AuditContext(runner=CommandRunner(timeout=30))
    started = time.monotonic()
    hung = _ask(ctx, 'command', argv=['sleep', '60'], timeout=1)
    assert hung['error'] == 'sleep 60 did not finish within 1 s (command_timeout)' and hung['error_status'] == 'unknown'
    assert time.monotonic() - started < 5
    flood = _ask(ctx, 'command', argv=['yes'], max_bytes=1024)
    assert flood['error'] == 'yes printed more than 1 KiB; stopped reading it'
    not_json = _ask(ctx, 'command', argv=['echo', 'not json'], parse='json')
    assert not_json['error'].startswith('the output of echo is not JSON')


def test_http_answers_status_and_body_and_nothing_listening():
    ctx = AuditContext()
    with hs.MisbehavingServer(hs.routes({'/health': (503, {'status': 'ok', 'db': 'down'})})) as server:
        answer = _ask(ctx, 'http', url=server.url + '/health')
    assert (answer['reachable'], answer['status'], answer['body']) == (True, 503, {'status': 'ok', 'db': 'down'})
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    closed = _ask(ctx, 'http', url='http://127.0.0.1:%d/' % port)
    assert (closed['reachable'], closed['error']) == (False, None) and 'nothing accepts connections' in closed['reason']


def test_http_that_trickles_floods_or_is_not_json_is_bounded():
    ctx = AuditContext()
    started = time.monotonic()
    with hs.MisbehavingServer(hs.trickle_body(b'{"status": "ok"}' * 100, interval=0.3)) as server:
        slow = _ask(ctx, 'http', url=server.url + '/', timeout=1)
    assert 'did not answer within 1.0 s' in slow['error'] and slow['error_status'] == 'unknown'
    with hs.MisbehavingServer(hs.flood()) as server:
        flood = _ask(ctx, 'http', url=server.url + '/', max_bytes=1024)
    assert flood['error'].endswith('answered more than 1024 bytes')
    with hs.MisbehavingServer(hs.answer(b'<html>ok</html>', content_type='text/html')) as server:
        html = _ask(ctx, 'http', url=server.url + '/')
        text = _ask(ctx, 'http', url=server.url + '/', parse='text')
    assert 'is not JSON' in html['error'] and text['body'] == '<html>ok</html>'
    assert time.monotonic() - started < 10


PROC_NET_TCP = '''  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0
'''
PROC_NET_TCP6 = '''  sl  local_address                         remote_address                        st tx_queue rx_queue
   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000
   1: 0000000000000000FFFF00000100007F:0051 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000
'''


def test_listening_reads_proc_net(tmp_path):
    (tmp_path / 'net').mkdir()
    (tmp_path / 'net' / 'tcp').write_text(PROC_NET_TCP)
    (tmp_path / 'net' / 'tcp6').write_text(PROC_NET_TCP6)
    ctx = AuditContext(proc_root=str(tmp_path))
    answer = _ask(ctx, 'listening')
    assert answer['sockets'] == [
        {'protocol': 'tcp', 'address': '127.0.0.1', 'port': 8080}, {'protocol': 'tcp', 'address': '0.0.0.0', 'port': 22},
        {'protocol': 'tcp6', 'address': '::1', 'port': 80}, {'protocol': 'tcp6', 'address': '::ffff:127.0.0.1', 'port': 81}]
    assert _ask(ctx, 'listening', port=8080)['ports'] == [8080]
    assert _ask(ctx, 'listening', protocol='udp')['sockets'] == []  # no udp tables here: nothing bound


def test_listening_sees_a_real_listener():
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        answer = _ask(AuditContext(), 'listening', port=port)
    assert answer['sockets'] == [{'protocol': 'tcp', 'address': '127.0.0.1', 'port': port}]


def test_processes_match_the_program_name_and_read_asked_environment(tmp_path):
    proc = tmp_path / 'proc'
    for pid, argv, environ in ((10, b'/usr/bin/restic\x00backup\x00', b'RESTIC_REPOSITORY=/srv/r\x00SECRET=x\x00'),
                               (11, b'/usr/bin/python3\x00restic\x00', b''), (12, b'restic\x00', None)):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / 'cmdline').write_bytes(argv)
        (proc / str(pid) / 'cgroup').write_text('0::/system.slice/backup.service\n')
        if environ is not None:
            (proc / str(pid) / 'environ').write_bytes(environ)
    answer = _ask(AuditContext(proc_root=str(proc)), 'processes', program='restic', environment=['RESTIC_REPOSITORY'])
    assert [p['pid'] for p in answer['processes']] == [10, 12]
    assert answer['processes'][0]['environment'] == {'RESTIC_REPOSITORY': '/srv/r'}  # only what was asked
    assert answer['processes'][0]['unit'] == 'backup.service'
    assert answer['processes'][1]['environment'] is None and 'does not exist' in answer['processes'][1]['environment_problem']


def test_systemd_without_systemd_is_data_not_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(questions, 'SYSTEMD_RUNTIME_DIR', str(tmp_path / 'no-systemd'))
    answer = _ask(AuditContext(), 'systemd', unit='backup.timer')
    assert answer['available'] is False and 'systemd is not running' in answer['reason'] and answer['error'] is None
    assert answer['ActiveState'] is None and answer['unit'] == 'backup.timer'


def test_systemd_show_blocks_per_unit_in_one_command(monkeypatch, tmp_path):
    """Parsing of systemctl show's output for several units: one block each, an empty line between
    (systemctl(1), show: "the properties of the specified units ... separated by an empty line")."""
    monkeypatch.setattr(questions, 'SYSTEMD_RUNTIME_DIR', str(tmp_path))
    calls = []

    class Runner(CommandRunner):
        def run(self, cmd, timeout=None, env=None, max_output=None):
            calls.append((cmd, env))
            return 0, 'Id=a.service\nActiveState=active\nResult=success\n\nId=b.timer\nActiveState=inactive\n', ''
    ctx = AuditContext(runner=Runner(), which=lambda name: '/bin/systemctl')
    shared = questions.Shared(['a.service', 'b.timer'], ['ActiveState', 'Result'])
    with ctx.runner.budget(30):
        one = questions.ask(ctx, _q('systemd', unit='a.service', properties=['ActiveState', 'Result']), shared)
        many = questions.ask(ctx, _q('systemd', units=['a.service', 'b.timer'], properties=['ActiveState']), shared)
    assert (one['ActiveState'], one['Result']) == ('active', 'success')
    assert [u['ActiveState'] for u in many['units']] == ['active', 'inactive']
    assert len(calls) == 1 and calls[0][1] == {'TZ': 'UTC'} and calls[0][0][-3:] == ['--', 'a.service', 'b.timer']


def test_the_same_command_runs_once_per_run_and_a_failed_one_again():
    calls = []

    class Runner(CommandRunner):
        def run(self, cmd, timeout=None, env=None, max_output=None):
            calls.append(cmd)
            return super(Runner, self).run(cmd, timeout, env, max_output)
    ctx = AuditContext(runner=Runner())
    shared = questions.Shared()
    with ctx.runner.budget(30):
        first = questions.ask(ctx, _q('command', argv=['echo', 'x']), shared)
        again = questions.ask(ctx, _q('command', argv=['echo', 'x'], parse='lines'), shared)
        other = questions.ask(ctx, _q('command', argv=['echo', 'y']), shared)
        hung = [questions.ask(ctx, _q('command', argv=['sleep', '5'], timeout=1), shared) for _n in range(2)]
    assert (first['stdout'], again['stdout'], other['stdout']) == ('x\n', ['x'], 'y\n')
    assert [c[1:] for c in calls] == [['x'], ['y'], ['5'], ['5']]
    assert all(h['error_status'] == 'unknown' for h in hung)
