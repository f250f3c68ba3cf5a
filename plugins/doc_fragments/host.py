# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # The author of every hand-written module (the <id>_facts modules, generated, carry theirs
    # through the generator); the attributes come from the attributes fragment.
    DOCUMENTATION = r'''
options: {}
author:
  - homelab.postmortem maintainers (@homelab-postmortem)
'''
