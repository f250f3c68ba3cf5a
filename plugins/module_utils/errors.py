# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One base for everything a host can hand us that we cannot use.

``registry.run_one`` tells two kinds of failure apart in one place: a
HostInputError (a file that is not text, a tool that failed, timed out or
printed nonsense, a conversion that cannot be done) becomes a finding with the
error's status and its one-line reason; any other exception is a bug in this
collection and is reported as one, with the exception type.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class HostInputError(Exception):
    """Input from the host that cannot be trusted; the message is one line for a person.

    ``finding_status`` is the status it gives the finding: ``error`` for input
    that is wrong, ``unknown`` when the host did not answer in time (we cannot
    tell).
    """

    finding_status = 'error'

    def __init__(self, message, finding_status=None):
        super(HostInputError, self).__init__(message)
        self.reason = message
        if finding_status is not None:
            self.finding_status = finding_status


class CommandTimeout(HostInputError):
    """A host command did not finish within its limit; the host could not tell us."""

    finding_status = 'unknown'


class CommandFailed(HostInputError):
    """A host command could not be run at all (not executable, argument list too long...)."""


class SettingsError(ValueError):
    """The caller's settings do not fit a detection's spec (not host input: the task fails)."""
