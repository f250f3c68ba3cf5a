# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reports' time stamps (``2026-12-01T02:00:00Z``, UTC): read back from files that may be anyone's,
as Unix time for the metrics, and as a duration in words for the summary."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import functools
import re

STAMP_FORMAT = '%Y-%m-%dT%H:%M:%SZ'
_STAMP = re.compile(r'\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\Z')


def parse_stamp(stamp):
    """A report's time stamp as an aware datetime; None for anything else (another format, a date
    that does not exist, not text)."""
    if not isinstance(stamp, str) or not _STAMP.match(stamp):
        return None
    return _parse(stamp)


# A history holds a few distinct stamps many times over (one per run); strptime is slow.
@functools.lru_cache(maxsize=4096)
def _parse(stamp):
    try:
        return datetime.datetime.strptime(stamp, STAMP_FORMAT).replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def unix(stamp):
    when = parse_stamp(stamp)
    return when.timestamp() if when is not None else None


def age(since, now):
    """From one time stamp to another, in words: 'for 3 days', 'for 5 hours', 'since this run'."""
    start, end = parse_stamp(since), parse_stamp(now)
    if start is None or end is None:
        return 'since %s' % since
    seconds = (end - start).total_seconds()
    if seconds <= 0:
        return 'since this run'
    for size, unit in ((86400, 'day'), (3600, 'hour'), (60, 'minute')):
        if seconds >= size:
            count = int(seconds // size)
            return 'for %d %s%s' % (count, unit, '' if count == 1 else 's')
    return 'for %d seconds' % seconds
