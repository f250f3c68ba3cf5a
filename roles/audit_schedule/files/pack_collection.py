# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pack an installed collection into a tarball ``ansible-galaxy collection install`` accepts.

Run on the controller by the audit_schedule role, with the collection the role itself runs from:
no Galaxy server is needed and the schedule audits with exactly the code that installed it.
Usage: python pack_collection.py <installed collection dir> <tarball to write>

Only what the collection's FILES.json lists goes in (an installed copy can hold other files, such
as Python's __pycache__), and every file is checked against its sha256 there first, so a copy
edited after it was installed is refused here, with the file's name, instead of by ansible-galaxy
on the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import sys
import tarfile


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def members(root):
    """[(name, kind)] of the tarball, or raise ValueError naming what is wrong with the copy."""
    for name in ('MANIFEST.json', 'FILES.json'):
        if not os.path.isfile(os.path.join(root, name)):
            raise ValueError('%s has no %s: it is not an installed collection (run the role from a collection '
                             'installed with ansible-galaxy, not from a source checkout)' % (root, name))
    with open(os.path.join(root, 'MANIFEST.json'), encoding='utf-8') as handle:
        manifest = json.load(handle)
    expected = manifest['file_manifest_file']['chksum_sha256']
    if sha256(os.path.join(root, 'FILES.json')) != expected:
        raise ValueError('%s: FILES.json does not have the checksum MANIFEST.json gives' % root)
    with open(os.path.join(root, 'FILES.json'), encoding='utf-8') as handle:
        files = json.load(handle)['files']
    found = [('MANIFEST.json', 'file'), ('FILES.json', 'file')]
    changed = []
    for entry in files:
        name = entry['name']
        if name == '.':
            continue
        path = os.path.join(root, name)
        if entry['ftype'] == 'file':
            if not os.path.isfile(path) or sha256(path) != entry['chksum_sha256']:
                changed.append(name)
        elif not os.path.isdir(path):
            changed.append(name)
        found.append((name, entry['ftype']))
    if changed:
        raise ValueError('%s was changed after it was installed (missing or different: %s); install it again'
                         % (root, ', '.join(changed[:10]) + (' and %d more' % (len(changed) - 10) if len(changed) > 10 else '')))
    return found


def pack(root, dest):
    entries = members(root)
    with tarfile.open(dest, 'w:gz') as tar:
        for name, kind in entries:
            info = tar.gettarinfo(os.path.join(root, name), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ''
            if kind == 'file':
                with open(os.path.join(root, name), 'rb') as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    return len(entries)


def main(argv):
    if len(argv) != 2:
        print('usage: pack_collection.py <installed collection dir> <tarball>', file=sys.stderr)
        return 2
    try:
        count = pack(argv[0], argv[1])
    except (ValueError, KeyError, OSError) as exc:
        print('cannot pack the collection: %s' % exc, file=sys.stderr)
        return 1
    print('packed %d entries of %s' % (count, argv[0]))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
