"""filewrite.write_all: all files or none. Failures are induced by a path that cannot be created and
by a rename the kernel refuses (EROFS, as a read-only filesystem answers); the real read-only
filesystem is in tests/e2e/test_ssh_fleet.py."""
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
    assert [open(b).read() for b in backups] == ['old a\n', 'old b\n'] and all(b.endswith('~') for b in backups)
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
