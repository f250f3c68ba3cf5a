"""The fix protocol (module_utils/fix_protocol.py) on a small file fix: check mode writes nothing and
shows the exact diff, a change is read back, a change that does not hold is put back, a failure says
what is left, and a second run changes nothing."""
import errno
import os

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils import fix_protocol, hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

from ...helpers.hostile import mounted, needs_root


class Exited(Exception):
    def __init__(self, failed, result):
        super(Exited, self).__init__(result.get('msg'))
        self.failed = failed
        self.result = result


class FakeModule(object):
    """What fix_protocol.run and filewrite.write_all ask of an AnsibleModule."""

    def __init__(self, check_mode=False):
        self.check_mode = check_mode
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)

    @staticmethod
    def selinux_enabled():
        return False

    @staticmethod
    def exit_json(**result):
        raise Exited(False, result)

    @staticmethod
    def fail_json(**result):
        raise Exited(True, result)


def run(fix, check_mode=False):
    module = FakeModule(check_mode)
    with pytest.raises(Exited) as exited:
        fix_protocol.run(module, fix)
    return exited.value.failed, exited.value.result


def read(path):
    with open(str(path)) as handle:
        return handle.read()


class SetLine(fix_protocol.Fix):
    """Make ``path`` read ``text``; remove ``stale`` when it exists. Only plan() is its own."""

    def __init__(self, path, text, stale=None):
        self.path = str(path)
        self.text = text
        self.stale = str(stale) if stale else None

    def plan(self):
        before = read(self.path) if os.path.exists(self.path) else None
        writes = [(self.path, before, self.text)]
        if self.stale and os.path.exists(self.stale):
            writes.append((self.stale, read(self.stale), None))
        return fix_protocol.Plan(writes=writes, result={'path': self.path}, warnings=['a warning'])


KEYS = {'changed', 'diff', 'backups', 'verified', 'rolled_back', 'msg'}


def test_check_mode_writes_nothing_and_shows_the_exact_diff(tmp_path):
    target = tmp_path / 'app.conf'
    target.write_text('old\n')
    failed, result = run(SetLine(target, 'new\n'), check_mode=True)
    assert not failed and KEYS <= set(result) and result['changed'] and not result['verified']
    assert result['diff'] == [{'before_header': str(target), 'after_header': str(target), 'before': 'old\n',
                               'after': 'new\n'}]
    assert read(target) == 'old\n' and os.listdir(str(tmp_path)) == ['app.conf']


def test_a_change_is_backed_up_read_back_and_a_second_run_changes_nothing(tmp_path):
    target, stale = tmp_path / 'app.conf', tmp_path / 'stale.conf'
    target.write_text('old\n')
    stale.write_text('leftover\n')
    failed, result = run(SetLine(target, 'new\n', stale))
    assert not failed and result['changed'] and result['verified'] and not result['rolled_back']
    assert result['path'] == str(target) and len(result['backups']) == 1 and read(result['backups'][0]) == 'old\n'
    assert read(target) == 'new\n' and not stale.exists()
    failed, again = run(SetLine(target, 'new\n', stale))
    assert not failed and not again['changed'] and again['diff'] == [] and again['msg'] == 'nothing to change'


class DoesNotHold(SetLine):
    """Something else rewrites the file after it was written (another agent, a generator)."""

    def apply(self, plan, write):
        backups = super(DoesNotHold, self).apply(plan, write)
        with open(self.path, 'w') as handle:
            handle.write('someone else\n')
        return backups


def test_a_change_that_does_not_hold_is_put_back(tmp_path):
    target, created = tmp_path / 'app.conf', tmp_path / 'new.conf'
    target.write_text('old\n')
    failed, result = run(DoesNotHold(target, 'new\n'))
    assert failed and result['rolled_back'] and not result['verified']
    assert 'the change did not hold (%s is not the planned text)' % target in result['msg']
    assert 'everything was put back as it was' in result['msg'] and read(target) == 'old\n'
    failed, result = run(DoesNotHold(created, 'new\n'))
    assert failed and result['rolled_back'] and not created.exists()


def refuse_rename_of(monkeypatch, refused, after=0):
    """os.rename answers EROFS for ``refused`` after ``after`` successful renames to it (a read-only remount)."""
    rename, seen = os.rename, []

    def renaming(src, dst):
        if dst == str(refused):
            seen.append(dst)
            if len(seen) > after:
                raise OSError(errno.EROFS, 'Read-only file system')
        return rename(src, dst)
    monkeypatch.setattr(os, 'rename', renaming)


def test_a_write_that_fails_part_way_returns_the_plan_and_what_was_put_back(tmp_path, monkeypatch):
    """The second file cannot be replaced: the first is put back, and the failure still carries the fix's own
    fields and the planned diff, rolled_back true (what had been replaced is back), changed false."""
    first, second = tmp_path / 'a.conf', tmp_path / 'b.conf'
    first.write_text('old a\n')
    second.write_text('old b\n')

    class TwoFiles(fix_protocol.Fix):
        def plan(self):
            return fix_protocol.Plan(writes=[(str(first), 'old a\n', 'new a\n'), (str(second), 'old b\n', 'new b\n')],
                                     result={'units': ['a', 'b']})
    refuse_rename_of(monkeypatch, second)
    failed, result = run(TwoFiles())
    assert failed and result['msg'].startswith('could not replace %s: Read-only file system' % second)
    assert result['units'] == ['a', 'b'] and [d['before_header'] for d in result['diff']] == [str(first), str(second)]
    assert result['rolled_back'] is True and result['changed'] is False and result['restored'] == [str(first)]
    assert (read(first), read(second)) == ('old a\n', 'old b\n')


def test_a_put_back_that_cannot_be_written_is_named_and_not_called_rolled_back(tmp_path, monkeypatch):
    """The change did not hold, and writing the old text back fails too: the failure says the change did not hold
    (not only that a write failed), names the file left changed, and rolled_back is false."""
    target = tmp_path / 'app.conf'
    target.write_text('old\n')
    refuse_rename_of(monkeypatch, target, after=1)   # the fix's own write lands; the put back does not
    failed, result = run(DoesNotHold(target, 'new\n'))
    assert failed and result['rolled_back'] is False and result['changed'] is True and not result['verified']
    assert 'the change did not hold' in result['msg'] and 'could NOT be put back: %s' % target in result['msg']
    assert read(target) == 'someone else\n'


class Refuses(fix_protocol.Fix):
    def __init__(self, where):
        self.where = where

    def plan(self):
        if self.where == 'plan':
            raise HostInputError('the host said no; nothing was changed')
        return fix_protocol.Plan(diff=[{'before': 'a', 'after': 'b'}], result={'planned': True})

    def apply(self, plan, write):
        raise fix_protocol.FixFailed('half way: put back', rolled_back=True, where='apply')

    def found(self):
        return {'steps': ['asked the host']}


def test_a_failure_says_what_is_left_with_what_was_found():
    failed, result = run(Refuses('plan'))
    assert failed and result['msg'] == 'the host said no; nothing was changed' and result['steps'] == ['asked the host']
    assert not result['changed'] and not result['rolled_back']
    failed, result = run(Refuses('apply'))
    assert failed and result['rolled_back'] and result['where'] == 'apply' and result['planned'] is True


def test_a_plan_without_changes_is_not_applied_and_its_warnings_are_shown(tmp_path):
    target = tmp_path / 'app.conf'
    target.write_text('same\n')
    module = FakeModule()
    with pytest.raises(Exited) as exited:
        fix_protocol.run(module, SetLine(target, 'same\n'))
    assert not exited.value.result['changed'] and module.warnings == ['a warning']


@needs_root
def test_a_planned_file_on_a_read_only_mount_is_refused_before_anything_changes(tmp_path):
    """A real read-only bind mount; the file and its directory do not exist yet, so the mount the write would
    land on decides. Check mode shows the diff and says so; a run fails before the first write."""
    (tmp_path / 'ro').mkdir()
    other = tmp_path / 'rw.conf'
    other.write_text('old\n')
    with mounted(str(tmp_path / 'view'), 'readonly', str(tmp_path / 'ro')) as view:
        target = os.path.join(view, 'conf.d', 'new.conf')

        class TwoPlaces(fix_protocol.Fix):
            def plan(self):
                return fix_protocol.Plan(writes=[(str(other), 'old\n', 'new\n'), (target, None, 'x\n')],
                                         result={'units': ['a']})
        said = 'mounted read-only: %s (%s)' % (view, target)
        failed, checked = run(TwoPlaces(), check_mode=True)
        assert not failed and checked['changed'] and len(checked['diff']) == 2
        assert checked['msg'].endswith('; it cannot be written now: ' + said), checked['msg']
        failed, result = run(TwoPlaces())
    assert failed and result['msg'] == said + '; nothing was changed' and result['units'] == ['a']
    assert not result['changed'] and not result['rolled_back'] and len(result['diff']) == 2
    assert other.read_text() == 'old\n' and os.listdir(str(tmp_path / 'ro')) == []


@needs_root
def test_the_directory_written_in_is_the_one_the_kernel_resolves(tmp_path):
    """``link/../x.conf`` with ``link`` pointing into a read-only mount: the kernel writes next to the link's
    target's parent, inside the mount, so the mount is read-only for that path (abspath alone would say the
    writable tmp_path); and the other way round, a writable target is not refused."""
    (tmp_path / 'ro' / 'deep').mkdir(parents=True)
    (tmp_path / 'rw' / 'deep').mkdir(parents=True)
    with mounted(str(tmp_path / 'view'), 'readonly', str(tmp_path / 'ro')) as view:
        os.symlink(os.path.join(view, 'deep'), str(tmp_path / 'into_ro'))
        os.symlink(str(tmp_path / 'rw' / 'deep'), os.path.join(str(tmp_path), 'into_rw'))
        assert hostio.read_only_mount(str(tmp_path / 'into_ro' / '..' / 'x.conf')) == view
        assert hostio.read_only_mount(str(tmp_path / 'into_rw' / '..' / 'x.conf')) is None
        assert hostio.read_only_mount(os.path.join(view, 'new', 'dir', 'x.conf')) == view


def test_the_plans_warnings_are_shown_when_the_change_fails(tmp_path, monkeypatch):
    """A warning of the plan (pi_ir_tx_fix's "func dropped", say) is still true when the change then fails."""
    target = tmp_path / 'app.conf'
    target.write_text('old\n')
    refuse_rename_of(monkeypatch, target)
    module = FakeModule()
    with pytest.raises(Exited) as exited:
        fix_protocol.run(module, SetLine(target, 'new\n'))
    assert exited.value.failed and module.warnings == ['a warning'] and read(target) == 'old\n'
