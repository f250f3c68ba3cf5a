"""Write the root filesystem of a tiny test image (busybox) as a tar, with owners set explicitly.

The podman tests need an image without a registry: root-owned system files
(etc/passwd, setuid usr/bin/su), one ordinary user with a home (1000:1000), as
in the write-up's export test image. Owners are written into the tar headers,
so no root is needed to build it. Usage: make_tiny_image.py OUT.tar
"""
import io
import sys
import tarfile

BUSYBOX = '/bin/busybox'
APPLETS = ('sh', 'sleep', 'ls', 'stat', 'id', 'cat', 'touch', 'true', 'false', 'echo', 'env', 'date',
           'mkdir', 'rm', 'tar', 'test', 'kill')


def add(archive, name, data=b'', mode=0o644, uid=0, gid=0, kind=tarfile.REGTYPE, link=''):
    info = tarfile.TarInfo(name)
    info.mode, info.uid, info.gid, info.type, info.linkname = mode, uid, gid, kind, link
    if kind == tarfile.REGTYPE:
        info.size = len(data)
    archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def main(out):
    with open(BUSYBOX, 'rb') as handle:
        busybox = handle.read()
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as archive:
        for directory, mode in (('bin', 0o755), ('etc', 0o755), ('usr', 0o755), ('usr/bin', 0o755),
                                ('root', 0o700), ('home', 0o755), ('tmp', 0o1777), ('data', 0o755)):
            add(archive, directory, mode=mode, kind=tarfile.DIRTYPE)
        add(archive, 'home/user', mode=0o700, uid=1000, gid=1000, kind=tarfile.DIRTYPE)
        add(archive, 'home/user/note.txt', b'hello\n', uid=1000, gid=1000)
        add(archive, 'bin/busybox', busybox, mode=0o755)
        for applet in APPLETS:
            add(archive, 'bin/' + applet, kind=tarfile.SYMTYPE, link='busybox')
        add(archive, 'usr/bin/su', busybox, mode=0o4755)
        add(archive, 'etc/passwd', b'root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1:daemon:/:/bin/false\n'
                                   b'user:x:1000:1000::/home/user:/bin/sh\n')
        add(archive, 'etc/group', b'root:x:0:\ndaemon:x:1:\nshadow:x:42:\nuser:x:1000:\n')
        add(archive, 'etc/shadow', b'root:*:1::::::\n', mode=0o640, gid=42)


if __name__ == '__main__':
    main(sys.argv[1])
