# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the fleet report's files: every format atomically, a file at a time, never raising for one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import os
import tempfile
import time

from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_html, report_metrics
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import hosts_findings_json, to_json_parts
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_junit import to_junit_parts

REPORT_FILES = {'json': 'postmortem.json', 'junit': 'postmortem-junit.xml', 'html': 'postmortem.html',
                'prometheus': 'postmortem.prom'}


def atomic_write(path, parts):
    """Write ``path`` from text pieces through a temporary file beside it (a reader never sees half
    a file; node_exporter's textfile collector skips the temporary name, which does not end in .prom)."""
    _atomic_write(path, parts)


def _atomic_write(path, parts):
    directory = os.path.dirname(path) or '.'
    handle, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as out:
            out.writelines(parts)
        os.chmod(tmp, 0o644)
        os.rename(tmp, path)
    except Exception:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class ReportWriteError(Exception):
    pass


def _check_dest(dest):
    """Create the report directory, or say in words why it cannot hold the report."""
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise ReportWriteError('the report directory %s is not a directory (a file of that name exists)' % dest)
    if not os.path.isdir(dest):
        try:
            os.makedirs(dest)
        except OSError as exc:
            raise ReportWriteError('the report directory %s cannot be created: %s' % (dest, exc.strerror or exc))
    if not os.access(dest, os.W_OK | os.X_OK):
        raise ReportWriteError('the report directory %s is read-only for this user' % dest)


def write(report, dest, formats):
    """Write every format; returns ({format: path}, [problems]). Never raises for one bad file."""
    findings_text = hosts_findings_json(report)
    renderers = {
        'json': lambda r: itertools.chain(to_json_parts(r, findings_text), ['\n']),
        'junit': lambda r: itertools.chain(['<?xml version="1.0" encoding="UTF-8"?>\n'], to_junit_parts(r), ['\n']),
        'html': lambda r: report_html.render_html_parts(r, findings_text),
        'prometheus': lambda r: [report_metrics.render(r, time.time(), (r.get('run') or {}).get('duration_seconds'))],
    }
    dest = os.path.abspath(dest)
    try:
        _check_dest(dest)
    except ReportWriteError as exc:
        return {}, [str(exc)]
    paths, problems = {}, []
    for fmt in formats:
        path = os.path.join(dest, REPORT_FILES[fmt])
        try:
            _atomic_write(path, renderers[fmt](report))
        except (IOError, OSError) as exc:
            problems.append('%s was not written: %s' % (path, exc.strerror or exc))
            continue
        paths[fmt] = path
    return paths, problems
