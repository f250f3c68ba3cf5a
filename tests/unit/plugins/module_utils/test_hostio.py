import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data)
    return str(path)


def test_read_text_refuses_binary_huge_missing_and_directories(tmp_path):
    with pytest.raises(hostio.ReadProblem) as exc:
        hostio.read_text(write(str(tmp_path / 'bin'), b'abc\x00def'))
    assert exc.value.kind == 'binary'
    with pytest.raises(hostio.ReadProblem) as exc:
        hostio.read_text(write(str(tmp_path / 'latin1'), b'caf\xe9\n'))
    assert exc.value.kind == 'binary' and 'not UTF-8' in exc.value.reason
    with pytest.raises(hostio.ReadProblem) as exc:
        hostio.read_text(write(str(tmp_path / 'big'), b'#' * (hostio.MAX_CONFIG_BYTES + 1)))
    assert exc.value.kind == 'too_large'
    with pytest.raises(hostio.ReadProblem) as exc:
        hostio.read_text(str(tmp_path / 'absent'))
    assert exc.value.kind == 'missing'
    with pytest.raises(hostio.ReadProblem) as exc:
        hostio.read_text(str(tmp_path))
    assert exc.value.kind == 'unreadable'
    # Exactly at the limit is fine: the limit refuses, it does not truncate.
    assert len(hostio.read_text(write(str(tmp_path / 'edge'), b'#' * hostio.MAX_CONFIG_BYTES))) == hostio.MAX_CONFIG_BYTES


@pytest.mark.parametrize('text,expected', [
    ('6.18.34+rpt-rpi-v8', (6, 18, 34)),
    ('6.12.111', (6, 12, 111)),
    ('v6.18', (6, 18)),
    ('6.18.44-fc-v782', (6, 18, 44)),
    ('rpi-6.18', None),
    ('', None),
])
def test_version_tuple(text, expected):
    assert hostio.version_tuple(text) == expected


@pytest.mark.parametrize('version,first,fixed,expected', [
    ((6, 18, 34), (6, 18), None, True),
    ((6, 18), (6, 18), None, True),
    ((6, 17, 99), (6, 18), None, False),
    ((6, 18, 59), (6, 18), (6, 18, 60), True),
    ((6, 18, 60), (6, 18), (6, 18, 60), False),
    ((7, 0), (6, 18), None, True),
])
def test_version_in_range(version, first, fixed, expected):
    assert hostio.version_in_range(version, first, fixed) is expected


@pytest.mark.parametrize('lines,expected', [
    (['0::/system.slice/llama.service'], ('llama.service', 'system')),
    (['12:pids:/system.slice/x.service', '1:name=systemd:/system.slice/llama-a.service'], ('llama-a.service', 'system')),
    (['0::/user.slice/user-1000.slice/user@1000.service/app.slice/llama.service'], ('llama.service', 'user:1000')),
    (['9:name=systemd:/libpod_parent/libpod-abc/system.slice/llm.service'], ('llm.service', 'system')),
    (['0::/user.slice/user-1000.slice/session-3.scope'], (None, None)),
    # Recorded inside a podman container with systemd on this cgroup v1 hybrid host:
    # the unified line does not carry systemd's placement, name=systemd does.
    (['9:name=systemd:/libpod_parent/libpod-ffc6/system.slice/sl.service', '8:pids:/libpod_parent/libpod-ffc6',
      '0::/libpod_parent/libpod-ffc6'], ('sl.service', 'system')),
    (['0::/'], (None, None)),
    ([], (None, None)),
])
def test_systemd_unit_from_cgroup(lines, expected):
    assert hostio.systemd_unit_from_cgroup(lines) == expected


def fake_proc(root, pid, argv, environ=None, cgroup=None):
    base = os.path.join(str(root), str(pid))
    write(os.path.join(base, 'cmdline'), b'\x00'.join(a.encode() for a in argv) + b'\x00')
    if environ is not None:
        write(os.path.join(base, 'environ'), b'\x00'.join(('%s=%s' % kv).encode() for kv in environ.items()))
    if cgroup is not None:
        write(os.path.join(base, 'cgroup'), cgroup.encode())
    return base


def test_list_processes_skips_kernel_threads_vanished_pids_and_others(tmp_path):
    fake_proc(tmp_path, 10, ['/usr/bin/llama-server', '-m', 'x.gguf'])
    fake_proc(tmp_path, 11, ['bash'])
    os.makedirs(str(tmp_path / '12'))  # exited between listdir and read: no cmdline
    write(str(tmp_path / '13' / 'cmdline'), b'')  # kernel thread
    write(str(tmp_path / 'self' / 'cmdline'), b'x')
    processes, problems = hostio.list_processes(str(tmp_path), lambda name: name == 'llama-server')
    assert [p.pid for p in processes] == [10]
    assert processes[0].argv == ['/usr/bin/llama-server', '-m', 'x.gguf']
    assert problems == []


def test_environ_problem_is_recorded_not_raised(tmp_path):
    fake_proc(tmp_path, 20, ['llama-server'])
    os.makedirs(str(tmp_path / '20' / 'environ'))  # unreadable as a file
    processes = hostio.list_processes(str(tmp_path), lambda name: True)[0]
    assert processes[0].environ() is None
    assert 'cannot be read' in processes[0].environ_problem


def test_systemd_show_parses_and_reports_failures():
    calls = []

    def run(cmd):
        calls.append(cmd)
        return 0, 'Restart=no\nNRestarts=0\nDropInPaths=\n', ''

    assert hostio.systemd_show(run, '/bin/systemctl', 'a.service', ['Restart', 'NRestarts'])['Restart'] == 'no'
    assert calls[0] == ['/bin/systemctl', 'show', 'a.service', '--no-pager', '-p', 'Restart', '-p', 'NRestarts']
    hostio.systemd_show(run, '/bin/systemctl', 'b.service', ['Restart'], scope='user:1000')
    assert calls[1][:3] == ['/bin/systemctl', '--user', '--machine=1000@']

    def failing(cmd):
        return 1, '', 'System has not been booted with systemd as init system (PID 1). Can\'t operate.\n'

    with pytest.raises(hostio.ReadProblem, match='not been booted with systemd'):
        hostio.systemd_show(failing, '/bin/systemctl', 'a.service', ['Restart'])
