# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # The backup option shared by the <id>_fix remediation modules
    # (module_utils/filewrite.py does the writing for all of them).
    DOCUMENTATION = r'''
options:
  backup:
    description:
      - Keep a copy of each existing file before it is changed, beside it, named C(<name>.<UTC time>.bak)
        (for example C(config.txt.20261201T131512Z.bak)); names a FAT filesystem accepts, sorted by time.
      - Backups are never deleted by this collection; restore one by copying it over the file.
    type: bool
    default: true
'''
