"""The bounded tar-owner reader behind the export_owners probe and podman_safe_export.

Tar streams are built here with known owners; the real podman exports are read
in tests/e2e/test_podman_real.py.
"""
import io
import sys
import tarfile

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.podman import export as podman_export


def tar_bytes(entries):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as archive:
        for name, uid, gid, size in entries:
            info = tarfile.TarInfo(name)
            info.uid, info.gid, info.size = uid, gid, size
            archive.addfile(info, io.BytesIO(b'x' * size))
    return buffer.getvalue()


KEEP_ID = [('bin/sh', 1, 1, 10), ('etc/group', 1, 1, 5), ('etc/passwd', 1, 1, 5), ('home/user/note.txt', 0, 0, 3),
           ('usr/bin/su', 1, 1, 7), ('var/log/x', 1, 1, 2)]


def test_keep_id_shift_is_seen_and_reading_stops_at_usr_bin_su():
    data = tar_bytes(KEEP_ID + [('zzz/big', 1, 1, 1024 * 1024)])
    source = io.BytesIO(data)
    found = podman_export.owners_in_tar(source)
    assert found['etc/passwd']['uid'] == 1 and found['usr/bin/su']['gid'] == 1
    assert set(podman_export.shifted(found)) == {'etc/group', 'etc/passwd', 'usr/bin/su'}
    assert source.tell() < len(data) - 1024 * 1024  # the 1 MiB member after su was never read


def test_correct_owners_and_dot_slash_names():
    found = podman_export.owners_in_tar(io.BytesIO(tar_bytes([('./etc/passwd', 0, 0, 5), ('./usr/bin/su', 0, 0, 5)])))
    assert podman_export.shifted(found) == {} and set(found) == {'etc/passwd', 'usr/bin/su'}


def test_byte_limit_and_garbage():
    with pytest.raises(podman_export.StreamProblem, match='more than'):
        podman_export.owners_in_tar(io.BytesIO(tar_bytes([('a/big', 0, 0, 100000)] + KEEP_ID)), limit=50000)
    with pytest.raises(podman_export.StreamProblem, match='not a readable tar'):
        podman_export.owners_in_tar(io.BytesIO(b'this is not a tar stream' * 100))


def test_command_failures_and_timeouts_are_reported(tmp_path):
    with pytest.raises(podman_export.StreamProblem, match='rc 3'):
        podman_export.owners_of_command([sys.executable, '-c', 'import sys; sys.stderr.write("Error: no such container\\n"); sys.exit(3)'], 10, 10 ** 6)
    with pytest.raises(podman_export.StreamProblem, match='within 1 s'):
        podman_export.owners_of_command([sys.executable, '-c', 'import time; time.sleep(30)'], 1, 10 ** 6)
    with pytest.raises(podman_export.StreamProblem, match='cannot run'):
        podman_export.owners_of_command([str(tmp_path / 'missing-binary')], 1, 10)
    archive = tmp_path / 'a.tar'
    archive.write_bytes(tar_bytes(KEEP_ID))
    found, read = podman_export.owners_of_command(['cat', str(archive)], 10, 10 ** 6)
    assert found['etc/passwd']['uid'] == 1 and read > 0
