# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How remediation modules write: back up first, then replace atomically."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os


def write_all(module, writes, backup):
    """writes: [(path, before or None, after_text)]. Returns the backup paths.

    An existing file keeps its owner and mode (atomic_move copies them); a new
    file (a drop-in) is created 0644 in a directory created 0755.
    """
    backups = []
    for path, before, after in writes:
        if before is not None and backup:
            backups.append(module.backup_local(path))
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        tmp = os.path.join(directory, '.%s.postmortem.tmp' % os.path.basename(path))
        with open(tmp, 'wb') as handle:
            handle.write(after.encode('utf-8'))
        if before is None:
            os.chmod(tmp, 0o644)
        module.atomic_move(tmp, path)
    return backups
