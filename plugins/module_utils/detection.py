# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one shape of a built-in detection: what it declares, its first question, the verdict it calls.

Each ``detections/<id>.py`` builds one ``Detection`` (its module-level ``DETECTION``) and the registry
lists them. ``Detection.detect`` is the only detect(): it asks the detection's first question and,
only when that found something to judge, loads the verdict (``verdicts/<id>.py``) and hands it the
detection, its settings and what the question found. The verdict never imports its detection, so
every import runs one way (docs/architecture.md, "The layers").

Most hosts have nothing for most detections to judge, and every module the audit imports is compiled
from the AnsiballZ payload on every host, every run (docs/performance.md): the verdict is loaded by the
detection's ``verdict`` function, a function-local ``from ... import`` that Ansible's dependency finder
ships and single_compile.py compiles once, never by a module name in a string. A plain class: a
dataclass or typing would cost every host their imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class Found:
    """What a first question found for the verdict to judge: the keyword arguments of its judge()."""

    __slots__ = ('values',)

    def __init__(self, **values):
        self.values = values


class Detection:
    """A built-in detection, as the registry, the facts modules, the report and the generators read it.

    ``question(ctx, detection, settings)`` is the cheap first question: it returns the finding when it
    can answer alone (``not_applicable``: nothing to judge), or ``Found(...)``. ``verdict()`` imports and
    returns the verdict module, whose ``judge(ctx, detection, settings, **found)`` returns the finding.
    Without a question the verdict judges every host that passes APPLIES and ``absent``; a detection
    whose question answers every case has no verdict. ``absent(ctx, detection, settings)``: why a live
    host has nothing to judge (a reason makes it not_applicable), asked before root is required."""

    __slots__ = ('ID', 'GROUP', 'TITLE', 'REFERENCES', 'REMEDIATION', 'PROBES', 'SETTINGS', 'APPLIES',
                 '_question', '_verdict', '_absent')

    def __init__(self, detection_id, group, title, references, remediation, settings, applies, probes=(),
                 question=None, verdict=None, absent=None):
        if question is None and verdict is None:
            raise ValueError('detection %s: a first question, a verdict or both' % detection_id)
        self.ID = detection_id
        self.GROUP = group
        self.TITLE = title
        self.REFERENCES = references
        self.REMEDIATION = remediation
        self.PROBES = tuple(probes)
        self.SETTINGS = settings
        self.APPLIES = applies
        self._question = question
        self._verdict = verdict
        self._absent = absent

    def __repr__(self):
        return 'Detection(%r)' % self.ID

    @property
    def has_verdict(self):
        return self._verdict is not None

    def absent(self, ctx):
        """Why there is nothing to judge on this live host, or None."""
        if self._absent is None:
            return None
        return self._absent(ctx, self, ctx.settings_for(self))

    def detect(self, ctx):
        settings = ctx.settings_for(self)
        found = self._question(ctx, self, settings) if self._question is not None else Found()
        if not isinstance(found, Found):
            return found  # the first question answered alone: the verdict is not loaded
        if self._verdict is None:
            raise TypeError('detection %s: its first question found something, but it has no verdict' % self.ID)
        return self._verdict().judge(ctx, self, settings, **found.values)
