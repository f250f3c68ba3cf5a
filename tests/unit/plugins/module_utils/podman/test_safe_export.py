"""The podman_safe_export workflow (podman/safe_export.py) on a fake podman: commit, create,
export, the owner check, the rename onto dest, and the temporaries removed whatever happens.

The fake podman writes the archive ``podman export --output`` would, with the owners each case
gives: a commit maps a container's owners back (what makes the workflow right, measured on
podman 4.3.1 in tests/e2e/test_podman_real.py), so the fake's archive is right unless a case
says otherwise. A missing container is podman's "no such container NAME", rc 125.
"""
import io
import json
import os
import stat
import tarfile

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import export as podman_export
from ansible_collections.homelab.postmortem.plugins.module_utils.podman import safe_export

PODMAN = '/usr/bin/podman'
GOOD = [('bin', 0, 0, None), ('etc/group', 0, 0, 5), ('etc/passwd', 0, 0, 5), ('home/user', 1000, 1000, None),
        ('home/user/note', 1000, 1000, 3), ('usr/bin/su', 0, 0, 7), ('var/lib/app/data', 33, 33, 2)]


def tar_file(path, entries):
    with tarfile.open(path, 'w') as archive:
        for name, uid, gid, size in entries:
            info = tarfile.TarInfo(name)
            info.uid, info.gid = uid, gid
            if size is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = size
                archive.addfile(info, io.BytesIO(b'x' * size))


class FakePodman(object):
    def __init__(self, archive=None, fail=None, mapping=None, raw_archive=None):
        self.archive = GOOD if archive is None else archive
        self.raw_archive = raw_archive
        self.fail = fail or {}
        self.mapping = mapping or ['0:1:1000', '1000:0:1', '1001:1001:64536']
        self.calls = []
        self.containers = {'web': {'Id': 'a' * 64, 'Name': 'web', 'State': {'Status': 'running'},
                                   'HostConfig': {'IDMappings': {'UidMap': self.mapping, 'GidMap': self.mapping}}}}
        self.images = []
        self.created = []

    def run(self, cmd, timeout=None, env=None):
        args = [str(c) for c in cmd][1:]
        self.calls.append(args)
        for verb, answer in self.fail.items():
            if args[0] == verb:
                return answer
        if args[:2] == ['container', 'inspect']:
            if args[2] not in self.containers:
                return 125, '[]\n', 'Error: no such container %s\n' % args[2]
            return 0, json.dumps([self.containers[args[2]]]), ''
        if args[0] == 'commit':
            self.images.append((args[-1], 'b' * 64))
            return 0, 'b' * 64 + '\n', ''
        if args[0] == 'create':
            self.created.append('c' * 64)
            return 0, 'c' * 64 + '\n', ''
        if args[0] == 'export':
            path = args[args.index('--output') + 1]
            if self.raw_archive is not None:
                with open(path, 'wb') as handle:
                    handle.write(self.raw_archive)
            else:
                tar_file(path, self.archive)
            return 0, '', ''
        if args[0] == 'rm':
            self.created.remove(args[-1])
            return 0, args[-1] + '\n', ''
        if args[0] == 'rmi':
            self.images = [i for i in self.images if args[-1] not in i]
            return 0, 'Untagged\n', ''
        return 125, '', 'Error: unexpected %s' % args


def job(tmp_path, fake, dest_name='web.tar', which=True, **kwargs):
    ctx = AuditContext(runner=fake, which={'podman': PODMAN}.get if which else {}.get, euid=0)
    kwargs.setdefault('expect', {})
    return safe_export.SafeExport(ctx, 'web', str(tmp_path / dest_name), token='t0ken', **kwargs)


def leftovers(tmp_path):
    return [name for name in os.listdir(str(tmp_path)) if name.endswith('.tmp')]


def test_an_export_through_a_commit_lands_checked_and_private(tmp_path):
    fake = FakePodman()
    export = job(tmp_path, fake, expect={'home/user': (1000, 1000), 'var/lib/app/data': (33, 33)})
    result = export.run()
    dest = tmp_path / 'web.tar'
    assert result['changed'] is True and result['size'] == dest.stat().st_size
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert result['owners'] == {'etc/group': '0/0', 'etc/passwd': '0/0', 'home/user': '1000/1000',
                                'usr/bin/su': '0/0', 'var/lib/app/data': '33/33'}
    assert result['mapping'] == fake.mapping
    assert [c[0] for c in fake.calls] == ['container', 'commit', 'create', 'export', 'rm', 'rmi']
    assert fake.calls[1] == ['commit', '--quiet', '--pause=true', 'web', 'localhost/postmortem-safe-export-t0ken:tmp']
    assert fake.images == [] and fake.created == [] and leftovers(tmp_path) == []
    assert export.steps[0] == '%s container inspect web' % PODMAN and export.warnings == []


def test_shifted_owners_fail_and_dest_is_not_touched(tmp_path):
    shifted = [(name, uid + 1 if uid == 0 else uid, gid + 1 if gid == 0 else gid, size) for name, uid, gid, size in GOOD]
    (tmp_path / 'web.tar').write_bytes(b'the old archive')
    fake = FakePodman(archive=shifted)
    export = job(tmp_path, fake, expect={'home/user': (0, 0)})
    with pytest.raises(safe_export.ExportFailed) as failed:
        export.run()
    message = str(failed.value)
    assert 'failed verification' in message and 'etc/passwd is 1/1, not 0/0' in message
    assert 'home/user is 1000/1000, not 0/0' in message
    assert (tmp_path / 'web.tar').read_bytes() == b'the old archive'
    assert export.result['changed'] is False and export.result['owners']['etc/passwd'] == '1/1'
    assert fake.images == [] and fake.created == [] and leftovers(tmp_path) == []


def test_a_root_owned_path_counts_only_as_a_file_and_an_expected_one_must_be_there(tmp_path):
    """etc/passwd as a directory proves nothing; an archive with none of the root-owned files
    cannot be checked and is refused."""
    archive = [('etc/passwd', 5, 5, None), ('home/user', 1000, 1000, None)]
    with pytest.raises(safe_export.ExportFailed, match='srv/app is not in the archive'):
        job(tmp_path, FakePodman(archive=archive), expect={'srv/app': (0, 0)}).run()
    with pytest.raises(safe_export.ExportFailed, match='none of etc/passwd, etc/group, usr/bin/su, bin/su is in the archive'):
        job(tmp_path, FakePodman(archive=archive)).run()
    result = job(tmp_path, FakePodman(archive=archive), expect={'home/user': (1000, 1000)}).run()
    assert result['owners'] == {'home/user': '1000/1000'}


def test_an_archive_that_is_no_tar_is_refused_without_a_traceback(tmp_path):
    export = job(tmp_path, FakePodman(raw_archive=b'no tar here' * 100))
    with pytest.raises(safe_export.ExportFailed, match='not a readable tar stream'):
        export.run()
    assert not (tmp_path / 'web.tar').exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize('answer, reason', [
    ((125, '', 'Error: database is locked\n'), 'failed (rc 125): Error: database is locked'),
    ((125, '[]\n', 'Error: no such container web\n'), 'no container named web'),
])
def test_inspect_failures_keep_their_reason(tmp_path, answer, reason):
    fake = FakePodman(fail={'container': answer})
    with pytest.raises(safe_export.ExportFailed, match=reason.replace('(', r'\(').replace(')', r'\)')):
        job(tmp_path, fake).run()
    assert [c[0] for c in fake.calls] == ['container']


def test_a_failed_step_and_a_failed_cleanup_are_both_said(tmp_path):
    fake = FakePodman(fail={'export': (125, '', 'Error: no space left on device\n'),
                            'rmi': (2, '', 'Error: image is in use by a container\n')})
    with pytest.raises(safe_export.ExportFailed) as failed:
        job(tmp_path, fake).run()
    assert 'podman export as' in str(failed.value) and 'no space left on device' in str(failed.value)
    assert 'cleaning up failed: removing the temporary image' in str(failed.value)
    assert fake.created == []


def test_temporaries_left_after_a_good_export_are_a_warning(tmp_path):
    export = job(tmp_path, FakePodman(fail={'rm': (2, '', 'Error: container is busy\n')}))
    assert export.run()['changed'] is True
    assert export.warnings and 'temporaries remain' in export.warnings[0] and 'container is busy' in export.warnings[0]


def test_force_keeps_a_backup_of_the_archive_it_replaces(tmp_path):
    (tmp_path / 'web.tar').write_bytes(b'the old archive')
    export = job(tmp_path, FakePodman())
    assert export.unchanged_reason(force=False) == '%s exists; set force: true to export again' % (tmp_path / 'web.tar')
    assert export.unchanged_reason(force=True) is None
    result = export.run()
    with open(result['backup_file'], 'rb') as handle:
        assert handle.read() == b'the old archive'
    assert result['backup_file'].endswith('.bak') and result['sha256'] == safe_export.sha256(str(tmp_path / 'web.tar'))


def test_what_is_refused_before_any_podman_command(tmp_path):
    with pytest.raises(safe_export.ExportFailed, match='the directory of dest, .*missing, does not exist'):
        job(tmp_path, FakePodman(), dest_name='missing/web.tar').unchanged_reason(force=False)
    with pytest.raises(safe_export.ExportFailed, match='podman is not installed'):
        job(tmp_path, FakePodman(), which=False).unchanged_reason(force=False)
    with pytest.raises(safe_export.ExportFailed, match="expect_owners: 'root' is not uid:gid"):
        safe_export.expected_owners({'/home/user/': 'root'})
    with pytest.raises(safe_export.ExportFailed, match="expect_owners: 0 is not uid:gid"):
        safe_export.expected_owners({'srv': 0})
    assert safe_export.expected_owners({'/home/user/': '1000:100'}) == {'home/user': (1000, 100)}
    with pytest.raises(safe_export.ExportFailed, match='is not a file mode'):
        job(tmp_path, FakePodman(), mode='rw-------')
    assert job(tmp_path, FakePodman(), mode=0o640).mode == 0o640


def test_planned_steps_run_nothing(tmp_path):
    fake = FakePodman()
    steps = job(tmp_path, fake).planned_steps()
    assert steps[1] == 'podman commit web localhost/postmortem-safe-export-t0ken:tmp' and fake.calls == []


def test_the_probe_reader_keeps_its_rules():
    """Directories never count for the probe (files_only defaults to every wanted path), and it
    stops after usr/bin/su."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as archive:
        for name, uid, kind in (('etc/passwd/', 3, tarfile.DIRTYPE), ('usr/bin/su', 0, tarfile.REGTYPE),
                                ('zz/etc/group', 0, tarfile.REGTYPE)):
            info = tarfile.TarInfo(name)
            info.uid, info.type = uid, kind
            archive.addfile(info)
    buffer.seek(0)
    assert set(podman_export.owners_in_tar(buffer)) == {'usr/bin/su'}
