# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PEFT's rank_pattern and alpha_pattern keys matched against module names as PEFT matches them, within
a time bound (lora_scale.py says which form each PEFT version uses).

A key whose matching would backtrack without end (``(a+)+$`` against a long run of ``a``) is named
instead of hanging the audit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import signal
import threading
import time

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# Seconds all pattern matching of one adapter config may take. A legitimate config's keys match its
# module names in microseconds each (a few hundred keys against a few thousand names: well under 1 s).
MATCH_SECONDS = 2.0
# PEFT's two forms of a pattern key (see the module docstring).
KEY_FORMS = {'suffix': r'.*\.%s$', 'prefix': r'(.*\.)?(%s)$'}


class PatternProblem(HostInputError):
    """A rank_pattern or alpha_pattern key that cannot be matched: it does not compile in PEFT's form, or
    matching it did not finish within MATCH_SECONDS (catastrophic backtracking)."""


class _TimeUp(Exception):
    pass


def _on_alarm(_signum, _frame):
    raise _TimeUp()


def _shown(text, limit=80):
    text = repr(text)
    return text if len(text) <= limit else text[:limit - 3] + '...'


class KeyMatcher(object):
    """re.match of PEFT's forms of one config's pattern keys against module names: memoised, and all of
    it within ``seconds``.

    Python's regular expression engine checks for signals while it backtracks (every version from 3.6
    to 3.13, measured), so each match runs under an interval timer set to the time left (SIGALRM,
    main thread only: where Ansible runs a module); a match the timer ends is a PatternProblem naming
    the field, the key and the module name. Keys are matched exactly as PEFT matches them, never
    rewritten or refused for their shape: a key PEFT accepts is judged."""

    def __init__(self, rank_keys=(), alpha_keys=(), seconds=MATCH_SECONDS):
        self.fields = {}
        for field, keys in (('rank_pattern', rank_keys), ('alpha_pattern', alpha_keys)):
            for key in keys:
                self.fields[key] = '%s and %s' % (self.fields[key], field) if key in self.fields else field
        self.seconds = seconds
        self.left = seconds
        self.used_up = None     # the PatternProblem that used the time up: every later match repeats it
        self._compiled = {}
        self._results = {}

    def compile_all(self):
        """None, or the first key (as a PatternProblem message) PEFT could not use: a form that does not compile."""
        for key in self.fields:
            for form in ('suffix', 'prefix'):
                try:
                    self._pattern(form, key)
                except PatternProblem as problem:
                    return str(problem)
        return None

    def _pattern(self, form, key):
        if (form, key) not in self._compiled:
            try:
                self._compiled[(form, key)] = self._timed(lambda: re.compile(KEY_FORMS[form] % key), key, None)
            except (re.error, OverflowError) as exc:
                raise PatternProblem('%s key %s is not a regular expression PEFT can use: %s'
                                     % (self.fields.get(key, 'pattern'), _shown(key), exc))
            except RecursionError:
                # Python's parser recurses once per nested group: PEFT's own re.match fails on it the same way.
                raise PatternProblem('%s key %s nests its groups too deeply for Python to parse it (as it would '
                                     'for PEFT)' % (self.fields.get(key, 'pattern'), _shown(key)))
        return self._compiled[(form, key)]

    def matches(self, form, key, name):
        """Whether PEFT's ``form`` ('suffix' or 'prefix') of ``key`` matches module ``name``."""
        if (form, key, name) not in self._results:
            pattern = self._pattern(form, key)
            self._results[(form, key, name)] = self._timed(lambda: pattern.match(name) is not None, key, name)
        return self._results[(form, key, name)]

    def _problem(self, key, name):
        what = 'matching module %s' % _shown(name) if name is not None else 'compiling'
        return PatternProblem("%s key %s did not finish %s within the %s s all pattern matching of one adapter may "
                              "take: the regular expression backtracks without end there, as PEFT's own re.match "
                              'would' % (self.fields.get(key, 'pattern'), _shown(key), what, _seconds(self.seconds)))

    def _timed(self, work, key, name):
        if self.used_up is not None:
            raise self.used_up
        if self.left <= 0:
            self.used_up = PatternProblem('matching the %d rank_pattern and alpha_pattern keys against the module names '
                                          'took longer than %s s in all (stopped before %s key %s)' % (
                                              len(self.fields), _seconds(self.seconds), self.fields.get(key, 'pattern'),
                                              _shown(key)))
            raise self.used_up
        if threading.current_thread() is not threading.main_thread():
            raise PatternProblem('%s key %s cannot be matched with a time limit outside the main thread'
                                 % (self.fields.get(key, 'pattern'), _shown(key)))
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        started = time.monotonic()
        outer = (0, 0)
        timed_out = False
        try:
            try:
                outer = signal.setitimer(signal.ITIMER_REAL, self.left)
                result = work()
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _TimeUp:
            timed_out = True
        finally:
            signal.signal(signal.SIGALRM, previous)
            elapsed = time.monotonic() - started
            self.left -= elapsed
            if outer[0]:
                # Someone else's timer was running: give it back what is left of it.
                signal.setitimer(signal.ITIMER_REAL, max(outer[0] - elapsed, 0.001), outer[1])
        if timed_out:
            self.used_up = self._problem(key, name)
            raise self.used_up
        return result


def _seconds(value):
    return ('%g' % value)
