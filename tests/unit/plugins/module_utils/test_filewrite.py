"""filewrite.write_all: all files or none. Failures are induced by a path that cannot be created and
by a rename the kernel refuses (EROFS, as a read-only filesystem answers), and a filesystem without
owners (ENOSYS/EPERM from chmod, as fusefat and vfat answer); the real read-only filesystem is in
tests/e2e/test_ssh_fleet.py, the real FAT one in tests/e2e/test_pi_ir_tx_fat.py."""
import errno
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import filewrite


class Failed(Exception):
    pass


class Module:
    def __init__(self):
        self.failed = None

    def selinux_enabled(self):
        return False

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise Failed(kwargs['msg'])


def files(tmp_path):
    first, second = tmp_path / 'a' / 'config.txt', tmp_path / 'b' / 'unit.service'
    for path, text in ((first, 'old a\n'), (second, 'old b\n')):
        path.parent.mkdir()
        path.write_text(text)
    first.chmod(0o600)
    return first, second


def leftovers(tmp_path):
    return sorted(p.name for p in tmp_path.rglob('*') if p.name.endswith('.postmortem.tmp'))


def test_every_file_replaced_backed_up_and_mode_kept(tmp_path):
    first, second = files(tmp_path)
    backups = filewrite.write_all(Module(), [(str(first), 'old a\n', 'new a\n'), (str(second), 'old b\n', 'new b\n'),
                                             (str(tmp_path / 'c' / 'drop-in.conf'), None, 'new c\n')], True)
    assert (first.read_text(), second.read_text(), (tmp_path / 'c' / 'drop-in.conf').read_text()) == ('new a\n', 'new b\n', 'new c\n')
    assert oct(first.stat().st_mode & 0o777) == '0o600'
    assert [open(b).read() for b in backups] == ['old a\n', 'old b\n'] and all(b.endswith('.bak') and ':' not in os.path.basename(b) for b in backups)
    assert leftovers(tmp_path) == []


def test_a_file_that_cannot_be_staged_changes_nothing(tmp_path):
    first, _second = files(tmp_path)
    (tmp_path / 'blocker').write_text('a file where a directory should be')
    module = Module()
    with pytest.raises(Failed):
        filewrite.write_all(module, [(str(first), 'old a\n', 'new a\n'), (str(tmp_path / 'blocker' / 'x.conf'), None, 'x')], True)
    assert first.read_text() == 'old a\n'
    assert 'nothing was changed' in module.failed['msg'] and leftovers(tmp_path) == []
    assert module.failed['backups'] == []  # nothing was backed up before the failure


def write_two_refusing(tmp_path, monkeypatch, refuse):
    """write_all over two files while os.rename answers EROFS whenever refuse(destination, call number)."""
    first, second = files(tmp_path)
    rename, calls = os.rename, []

    def refusing_rename(src, dst):
        calls.append(dst)
        if refuse(dst, len(calls)):
            raise OSError(errno.EROFS, 'Read-only file system')
        return rename(src, dst)
    monkeypatch.setattr(os, 'rename', refusing_rename)
    module = Module()
    with pytest.raises(Failed):
        filewrite.write_all(module, [(str(first), 'old a\n', 'new a\n'), (str(second), 'old b\n', 'new b\n')], True)
    return first, second, module


def test_a_refused_replacement_puts_the_earlier_files_back(tmp_path, monkeypatch):
    first, second, module = write_two_refusing(tmp_path, monkeypatch, lambda dst, _call: dst == str(tmp_path / 'b' / 'unit.service'))
    assert (first.read_text(), second.read_text()) == ('old a\n', 'old b\n')
    assert oct(first.stat().st_mode & 0o777) == '0o600'
    msg = module.failed['msg']
    assert msg.startswith('could not replace %s: Read-only file system' % second)
    assert '%s put back as it was; nothing is changed' % first in msg and 'backups: ' in msg
    assert module.failed['restored'] == [str(first)] and leftovers(tmp_path) == []


def test_a_file_that_cannot_be_put_back_is_named_with_its_backup(tmp_path, monkeypatch):
    first, _second, module = write_two_refusing(tmp_path, monkeypatch, lambda _dst, call: call > 1)
    assert first.read_text() == 'new a\n'
    assert 'could NOT be put back; the backups are %s' % module.failed['backups'][0] in module.failed['msg']
    assert open(module.failed['backups'][0]).read() == 'old a\n'


def test_a_failure_goes_to_the_callers_fail_when_given(tmp_path, monkeypatch):
    """fix_protocol hands its own fail (it raises, so a roll back in progress goes on): write_all calls it with
    what it did, not the module's fail_json."""
    first, _second = files(tmp_path)

    def read_only(*_args):
        raise OSError(errno.EROFS, 'Read-only file system')
    monkeypatch.setattr(os, 'rename', read_only)
    module, called = Module(), []

    def fail(**fields):
        called.append(fields)
        raise Failed()
    with pytest.raises(Failed):
        filewrite.write_all(module, [(str(first), 'old a\n', 'new a\n')], True, fail=fail)
    assert module.failed is None and len(called) == 1 and called[0]['msg'].startswith('could not replace %s' % first)
    assert (called[0]['restored'], called[0]['not_restored'], called[0]['backups']) == ([], [], [])
    assert first.read_text() == 'old a\n'


def test_backup_names_sort_by_time_and_never_collide(tmp_path):
    path = tmp_path / 'config.txt'
    path.write_text('x')
    first = filewrite.backup_path(str(path), now=0)
    assert os.path.basename(first) == 'config.txt.19700101T000000Z.bak'
    open(first, 'w').close()
    second = filewrite.backup_path(str(path), now=0)
    assert os.path.basename(second) == 'config.txt.19700101T000000Z-2.bak'
    later = filewrite.backup_path(str(path), now=86400)
    assert sorted([later, first]) == [first, later]
    for name in (first, second, later):
        # FAT (vfat long names) refuses these; a Pi's /boot/firmware is FAT.
        assert not set(os.path.basename(name)) & set('"*/:<>?\\|')


def refuse_metadata(monkeypatch, errno_value, fstype):
    """chmod and chown answer errno_value, on a filesystem of type fstype."""
    def refused(*_args, **_kwargs):
        raise OSError(errno_value, os.strerror(errno_value))
    monkeypatch.setattr(os, 'chmod', refused)
    monkeypatch.setattr(os, 'chown', refused)
    monkeypatch.setattr(os, 'utime', refused)
    monkeypatch.setattr(filewrite, 'filesystem_type', lambda _path: fstype)


@pytest.mark.parametrize('errno_value', [errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP])
def test_a_filesystem_without_owners_is_written_and_backed_up(tmp_path, monkeypatch, errno_value):
    first, _second = files(tmp_path)
    refuse_metadata(monkeypatch, errno_value, 'fuse.fusefat')
    backups = filewrite.write_all(Module(), [(str(first), 'old a\n', 'new a\n')], True)
    assert first.read_text() == 'new a\n' and [open(b).read() for b in backups] == ['old a\n']
    assert leftovers(tmp_path) == []


def test_a_refused_chmod_elsewhere_fails_and_leaves_no_staged_file(tmp_path, monkeypatch):
    """On a filesystem that keeps modes, a mode that cannot be kept is a failure, not a silent change;
    the staged file (created before the chmod) is removed too."""
    first, _second = files(tmp_path)
    refuse_metadata(monkeypatch, errno.EPERM, 'ext4')
    module = Module()
    with pytest.raises(Failed):
        filewrite.write_all(module, [(str(first), 'old a\n', 'new a\n')], True)
    assert first.read_text() == 'old a\n' and leftovers(tmp_path) == []
    assert 'nothing was changed' in module.failed['msg']


def test_a_failed_backup_leaves_no_partial_copy(tmp_path, monkeypatch):
    first, _second = files(tmp_path)
    fsync = os.fsync

    def full_disk(fd):
        if os.readlink('/proc/self/fd/%d' % fd).endswith('.bak'):
            raise OSError(errno.ENOSPC, 'No space left on device')
        return fsync(fd)
    monkeypatch.setattr(os, 'fsync', full_disk)
    module = Module()
    with pytest.raises(Failed):
        filewrite.write_all(module, [(str(first), 'old a\n', 'new a\n')], True)
    assert module.failed['msg'].startswith('could not back up %s: No space left on device' % first)
    assert first.read_text() == 'old a\n' and leftovers(tmp_path) == []
    assert not list(tmp_path.rglob('*.bak'))


def test_a_fifo_in_a_files_place_is_refused_at_once_and_copies_nothing(tmp_path):
    """A FIFO without a writer: plain open() would wait for one forever; the backup must not."""
    fifo = tmp_path / 'config.txt'
    os.mkfifo(str(fifo))
    with pytest.raises(OSError) as raised:
        filewrite.backup_file(str(fifo))
    assert raised.value.errno == errno.EINVAL and 'is not a regular file' in str(raised.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['config.txt']


def test_filesystem_type_reads_the_longest_mount_point(tmp_path):
    assert filewrite.filesystem_type('/proc/self') == 'proc'
    assert filewrite.filesystem_type(str(tmp_path)) is not None
