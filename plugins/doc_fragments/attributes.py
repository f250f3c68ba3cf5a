# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # What each attribute means, and the platform every module runs on. Every module extends this
    # and exactly one of the support fragments below (attributes.facts, .action, .diff, .no_diff, .plan),
    # which say how far it supports each attribute; a module never restates an attributes block
    # (tests/unit/contract/test_doc_markup.py).
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    platforms: posix
    support: full
'''

    # The detections: audit_facts and every <id>_facts module.
    FACTS = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - A detection never changes the host, so it runs the same in check mode.
  diff_mode:
    support: N/A
    details:
      - A detection never changes the host.
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
'''

    # The action plugins that run on the controller and contact no host (audit_validate, audit_report,
    # remediation_plan).
    ACTION = r'''
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  check_mode:
    support: full
    details:
      - Runs the same in check mode; it changes no managed host.
  diff_mode:
    support: none
'''

    # The modules that change text files or definitions on a host and return them before and after.
    DIFF = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change, with the diff, and changes nothing.
  diff_mode:
    support: full
    details:
      - Returns each changed file or definition before and after.
'''

    # The modules that change a host in a way no text diff shows (an archive written).
    NO_DIFF = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Reports what would change and the steps, and runs nothing.
  diff_mode:
    support: none
    details:
      - What changes has no text diff.
'''

    # The modules that only plan: they change nothing in either mode.
    PLAN = r'''
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Returns the same plan; nothing is changed in either mode.
  diff_mode:
    support: N/A
    details:
      - Nothing is changed, so there is no diff.
'''
