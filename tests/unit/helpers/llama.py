"""Fake /proc entries of llama-server processes and the audit context over them."""
import os

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext


def put(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data if isinstance(data, bytes) else data.encode())


def proc(tmp_path, pid, argv, environ=None, cgroup='0::/user.slice/session-1.scope\n', root='/', cwd=None, uid=0,
         ppid=1, exe=None):
    """A fake /proc/PID: cmdline, environ, cgroup, stat (ppid), status (uid), and the process's view of
    the file system (``root``: /proc/PID/root, the host's own by default; ``cwd``), and /proc/PID/exe
    (``exe``; by default /usr/bin/<argv[0]'s name>, which need not exist: ctx() answers its --version)."""
    base = str(tmp_path / 'proc' / str(pid))
    put(os.path.join(base, 'cmdline'), b'\x00'.join(a.encode() for a in argv) + b'\x00')
    put(os.path.join(base, 'environ'), b'\x00'.join(('%s=%s' % kv).encode() for kv in (environ or {}).items()))
    put(os.path.join(base, 'cgroup'), cgroup)
    put(os.path.join(base, 'stat'), '%d (%s) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n'
        % (pid, os.path.basename(argv[0])[:15], ppid))
    if uid is not None:
        put(os.path.join(base, 'status'), 'Name:\tx\nUid:\t%d\t%d\t%d\t%d\n' % (uid, uid, uid, uid))
    os.symlink(str(root), os.path.join(base, 'root'))
    os.symlink(exe or '/usr/bin/' + os.path.basename(argv[0]), os.path.join(base, 'exe'))
    if cwd:
        os.symlink(str(cwd), os.path.join(base, 'cwd'))


VERSION = 'version: 0.6.0 (build %d, commit 0123abc)\nbuilt with GNU 12.2.0 for Linux x86_64\n'


def ctx(tmp_path, systemctl=None, settings=None, build=11434):
    """An audit context over tmp_path/proc. Commands go to ``systemctl(cmd)``; without it, a server's
    `--version` answers as a llama-server of ``build`` does (on stderr; None: no answer)."""
    os.makedirs(str(tmp_path / 'proc'), exist_ok=True)
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        if systemctl:
            return systemctl(cmd)
        if cmd[-1] == '--version' and build is not None:
            return 0, '', VERSION % build
        return 127, '', 'no systemctl'

    context = AuditContext(root='/', live=True, proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'),
                           kernel_release='6.18.0', run_command=run_command,
                           which=lambda name: '/usr/bin/systemctl' if systemctl else None, settings=settings or {})
    context.calls = calls
    return context


def by_pid(result):
    return dict((i['evidence'].get('pid'), i) for i in result['evidence']['instances'])
