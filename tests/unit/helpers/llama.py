"""Fake /proc entries of llama-server processes and the audit context over them."""
import os

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext


def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())


def proc(tmp_path, pid, argv, environ=None, cgroup='0::/user.slice/session-1.scope\n'):
    base = str(tmp_path / 'proc' / str(pid))
    put(os.path.join(base, 'cmdline'), b'\x00'.join(a.encode() for a in argv) + b'\x00')
    put(os.path.join(base, 'environ'), b'\x00'.join(('%s=%s' % kv).encode() for kv in (environ or {}).items()))
    put(os.path.join(base, 'cgroup'), cgroup)


def ctx(tmp_path, systemctl=None, settings=None):
    os.makedirs(str(tmp_path / 'proc'), exist_ok=True)
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        return systemctl(cmd) if systemctl else (127, '', 'no systemctl')

    context = AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                           kernel_release='6.18.0', run_command=run_command,
                           which=lambda name: '/usr/bin/systemctl' if systemctl else None, settings=settings or {})
    context.calls = calls
    return context


def by_pid(result):
    return dict((i['evidence'].get('pid'), i) for i in result['evidence']['instances'])
