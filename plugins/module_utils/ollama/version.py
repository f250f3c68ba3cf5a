# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ollama's version, as ``/api/version`` reports it, in the order its tags were released.

What the text can be (ollama/ollama @ v0.33.0-rc2 = fb3076099):

- ``0.30.3`` or ``0.30.0-rc7``: a release build; .github/workflows/release.yaml l.25 sets
  ``version.Version`` to the tag without its ``v``. Pre-releases come before their release:
  0.12.4-rc6 < 0.12.4-rc7 < 0.12.4, and a change first tagged in an rc is in every later rc.
- ``0.30.3-12-gabc1234`` (``-dirty``): scripts/env.sh l.3, ``git describe --tags --first-parent
  --long --dirty``: 12 commits after the tag. Whether such a build has a change first released in a
  later tag cannot be told from the text.
- ``0.0.0``: version/version.go l.3, the default of a ``go build`` without ``-ldflags``: a source
  build of any commit. No rule can be chosen for it.

hostio.version_tuple drops the pre-release part, which puts 0.12.4-rc0 after every change
first tagged in 0.12.4-rc7; this parser keeps it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SOURCE_BUILD = '0.0.0'
NEWEST_READ = '0.33.0-rc2'   # the newest tag whose code the rules here were read from (= fb3076099)

_TEXT_RE = re.compile(r'^v?([0-9]{1,6})\.([0-9]{1,6})\.([0-9]{1,6})'
                      r'(?:-rc([0-9]{1,6}))?'
                      r'(?:-([0-9]{1,9})-g([0-9a-f]{4,40}))?'
                      r'(-dirty)?$')


class OllamaVersion(object):
    """A parsed /api/version: the tag it is (or follows), and how many commits after it."""

    def __init__(self, text, release, rc, commits, dirty):
        self.text = text
        self.release = release
        self.rc = rc
        self.commits = commits
        self.dirty = dirty
        # A release sorts after all of its rcs.
        self.key = release + ((0, rc) if rc is not None else (1, 0))

    @property
    def tag(self):
        return 'v%d.%d.%d%s' % (self.release + ('-rc%d' % self.rc if self.rc is not None else '',))

    def has(self, first):
        """Whether this build has a change first tagged in ``first`` (text like '0.12.4-rc7'):
        True, False, or None for a build some commits after an older tag."""
        boundary = boundary_key(first)
        if self.key >= boundary:
            return True
        if not self.commits:
            return False
        return None

    def __repr__(self):
        return 'OllamaVersion(%r)' % self.text


def boundary_key(text):
    version, problem = parse(text)
    if version is None or version.commits:
        raise ValueError('not a tag: %r (%s)' % (text, problem))
    return version.key


def parse(text):
    """(OllamaVersion, None), or (None, the reason no rule can be chosen for this text)."""
    if not isinstance(text, str):
        return None, 'it reports a version that is not a string (%r)' % (text,)
    cleaned = text.strip()
    if cleaned in (SOURCE_BUILD, 'v' + SOURCE_BUILD):
        return None, ('it reports version %s, the default in version/version.go of a build without -ldflags: a '
                      'source build of an unknown commit, whose rules cannot be chosen' % SOURCE_BUILD)
    match = _TEXT_RE.match(cleaned)
    if not match:
        return None, ('it reports version %r, which is neither a release (0.30.3), a pre-release (0.30.0-rc7) nor '
                      'a git describe of one (0.30.3-12-gabc1234)' % cleaned[:80])
    release = tuple(int(match.group(i)) for i in (1, 2, 3))
    rc = int(match.group(4)) if match.group(4) is not None else None
    commits = int(match.group(5)) if match.group(5) is not None else 0
    return OllamaVersion(cleaned, release, rc, commits, bool(match.group(7))), None


_SETTING_RE = re.compile(r'^v?([0-9]{1,6}(?:\.[0-9]{1,6}){0,2})(-rc[0-9]{1,6})?$')


def setting_tag(text):
    """A version setting (``fixed_in``: '0.35', '0.35.0', '0.35.0-rc2') as a tag has() takes, or None."""
    match = _SETTING_RE.match(str(text or '').strip())
    if not match:
        return None
    parts = match.group(1).split('.')
    return '.'.join(parts + ['0'] * (3 - len(parts))) + (match.group(2) or '')


def undecided(version, first, change):
    """The reason a build after an older tag leaves ``change`` (first in ``first``) open."""
    return ('Ollama %s is a build %d commit(s) after %s: whether it has %s (first tagged in v%s) cannot be told'
            % (version.text, version.commits, version.tag, change, first))


def choose(version, steps):
    """The value of the last step whose first tag this build has.

    ``steps`` is ((first tag or None for 'always', value, what changed), ...) in release order.
    Returns (value, None), or (None, reason) when a build between tags leaves a step open."""
    chosen = None
    for first, value, change in steps:
        if first is None:
            chosen = value
            continue
        has = version.has(first)
        if has is None:
            return None, undecided(version, first, change)
        if has:
            chosen = value
    return chosen, None
