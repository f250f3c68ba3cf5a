# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing the fleet report's files: every format atomically, a file at a time, never raising for one.

An audit writes postmortem.*; a remediation run its own postmortem-remediate.* beside them, never over
them. A run that audited nothing still replaces postmortem.* (an older report must never look
current), but first keeps the last good audit's report as postmortem-last-good.* (its .prom is not
kept: node_exporter would read it if the report directory were its textfile directory)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import os
import tempfile
import time

from ansible_collections.homelab.postmortem.plugins.plugin_utils import report_docs, report_html, report_metrics, report_summary
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import hosts_findings_json, to_json_parts
from ansible_collections.homelab.postmortem.plugins.plugin_utils.report_junit import to_junit_parts

REPORT_FILES = {'json': 'postmortem.json', 'junit': 'postmortem-junit.xml', 'html': 'postmortem.html',
                'prometheus': 'postmortem.prom'}
REMEDIATION_FILES = {'json': 'postmortem-remediate.json', 'junit': 'postmortem-remediate-junit.xml',
                     'html': 'postmortem-remediate.html', 'prometheus': 'postmortem-remediate.prom'}
LAST_GOOD_FILES = {'json': 'postmortem-last-good.json', 'junit': 'postmortem-last-good-junit.xml',
                   'html': 'postmortem-last-good.html'}


def file_names(report):
    """{format: file name} for this report's kind."""
    return REMEDIATION_FILES if report.get('kind') == 'remediation' else REPORT_FILES


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


def report_dir_path(value):
    """The report directory as audit_report resolves its ``dest`` option: Ansible's path type
    (check_type_path: $VARS and ~ expanded), then absolute from the controller's working directory,
    where ansible-playbook was started."""
    from ansible.module_utils.common.validation import check_type_path
    return os.path.abspath(check_type_path(value))


def textfile_dir_path(value):
    """The textfile directory as audit_report resolves its ``textfile_dir`` option (a str: nothing expanded)."""
    return os.path.abspath(value)


def _nearest_existing(path):
    """``path`` or its closest ancestor that exists (as a name: a dangling link counts)."""
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _cannot_write(directory, probe):
    """Why this user cannot create files in the existing directory ``directory``, or None.

    os.access answers from the mode bits, which root passes whatever they say, so the read-only
    mount is asked first (statvfs's ST_RDONLY: even root cannot write there). What neither sees
    (NFS root_squash, an ACL or security module that refuses) only an attempt shows: ``probe``
    creates a file there and removes it at once. It is off in check mode, which creates nothing."""
    try:
        read_only = os.statvfs(directory).f_flag & os.ST_RDONLY
    except OSError as exc:
        return 'cannot be examined (%s)' % (exc.strerror or exc)
    if read_only:
        return 'is on a read-only filesystem'
    if not os.access(directory, os.W_OK | os.X_OK):
        return 'is not writable for this user (uid %d): no permission' % os.geteuid()
    if probe:
        try:
            handle, tmp = tempfile.mkstemp(prefix='.postmortem-write-test.', dir=directory)
            os.close(handle)
            os.unlink(tmp)
        except OSError as exc:
            return 'refused a test file (%s)' % (exc.strerror or exc)
    return None


def directory_problem(path, created, probe):
    """Why the absolute ``path`` cannot receive the report's files, as a phrase after its name, or None.
    ``created``: a missing directory is made by the writer (the report directory; the textfile
    directory is node_exporter's and must exist), so the nearest existing ancestor must be a
    directory this user can write. Nothing is created here unless ``probe`` (see _cannot_write)."""
    if os.path.lexists(path) and not os.path.exists(path):
        return 'is a symbolic link to %s, which does not exist' % os.path.realpath(path)
    if os.path.exists(path):
        if not os.path.isdir(path):
            return 'is not a directory (a file of that name exists)'
        return _cannot_write(path, probe)
    if not created:
        return 'does not exist'
    ancestor = _nearest_existing(path)
    if not os.path.isdir(ancestor):
        return 'does not exist and cannot be created: %s is not a directory' % ancestor
    why = _cannot_write(ancestor, probe)
    return ('does not exist and cannot be created: %s, where it would be, %s' % (ancestor, why)) if why else None


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
    names = file_names(report)
    for fmt in formats:
        path = os.path.join(dest, names[fmt])
        try:
            _atomic_write(path, renderers[fmt](report))
        except (IOError, OSError) as exc:
            problems.append('%s was not written: %s' % (path, exc.strerror or exc))
            continue
        paths[fmt] = path
    if 'html' in paths:
        problems += _write_docs(report, dest)
    return paths, problems


def _write_docs(report, dest):
    """The built-in checks' docs pages, rendered beside the HTML report (its "Docs" links): [problems]."""
    folder = os.path.join(dest, report_docs.DOCS_DIR)
    try:
        rendered = report_docs.pages([c['id'] for c in report['checks'] if not c.get('declared')], report_summary.docs_dir())
        if rendered and not os.path.isdir(folder):
            os.mkdir(folder)
        for name, text in sorted(rendered.items()):
            _atomic_write(os.path.join(folder, name), [text])
    except (IOError, OSError, UnicodeDecodeError) as exc:
        return ['the docs pages in %s were not written: %s' % (folder, getattr(exc, 'strerror', None) or exc)]
    return []


def _last_good_record(dest, json_name, read_report):
    data, _problem = read_report(os.path.join(dest, json_name))
    if data is None or data.get('kind', 'audit') != 'audit' or data.get('nothing_audited') or not data['hosts']:
        return None
    return {'generated_at': str(data.get('generated_at')), 'hosts': len(data['hosts'])}


def keep_last_good(dest, read_report):
    """Before a report that audited nothing replaces postmortem.*: the audit report there, when it is a
    good one, renamed to postmortem-last-good.*; or the one an earlier bad run kept. Returns
    ({'generated_at', 'hosts', 'paths': {format: path}} or None, [problems]). ``read_report(path)``
    gives (data, None) or (None, why) (report_drift.report_data)."""
    dest = os.path.abspath(dest)
    current = _last_good_record(dest, REPORT_FILES['json'], read_report) if os.path.isdir(dest) else None
    problems = []
    if current is not None:
        for fmt, name in LAST_GOOD_FILES.items():
            try:
                if os.path.lexists(os.path.join(dest, REPORT_FILES[fmt])):
                    os.rename(os.path.join(dest, REPORT_FILES[fmt]), os.path.join(dest, name))
                elif os.path.lexists(os.path.join(dest, name)):
                    os.unlink(os.path.join(dest, name))  # an older good run's, which this one is not
            except OSError as exc:
                problems.append('the last good report\'s %s could not be kept as %s: %s' % (
                    REPORT_FILES[fmt], name, exc.strerror or exc))
    elif os.path.isdir(dest):
        current = _last_good_record(dest, LAST_GOOD_FILES['json'], read_report)
    if current is None:
        return None, problems
    current['paths'] = dict((fmt, os.path.join(dest, name)) for fmt, name in LAST_GOOD_FILES.items()
                            if os.path.lexists(os.path.join(dest, name)))
    return current, problems


def forget_last_good(dest):
    """A good audit is the last good report now: an earlier copy would be taken for it."""
    for name in LAST_GOOD_FILES.values():
        path = os.path.join(os.path.abspath(dest), name)
        if os.path.lexists(path) and not os.path.isdir(path):
            try:
                os.unlink(path)
            except OSError:
                pass
