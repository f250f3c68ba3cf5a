# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report as JUnit XML: a suite per host, a case per check (a view of the report's model)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.plugin_utils.report import finding_texts

# Characters XML 1.0 cannot hold even escaped; JUnit shows them as \xNN instead.
_XML_INVALID = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]')


def _escape_char(match):
    code = ord(match.group(0))
    return '\\x%02x' % code if code < 0x100 else '\\u%04x' % code


def xml_text(text):
    return _XML_INVALID.sub(_escape_char, str(text))


# What XML cannot hold, and what markup needs escaped: a text without any of these is written as is
# (most messages; one search instead of a substitution and seven replacements each).
_XML_SPECIAL = re.compile(u'[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff&<>"\t\n\r]')


def _xml(text):
    """Text for an XML text node: what XML cannot hold as \\xNN, then &, < and > escaped."""
    text = str(text)
    if not _XML_SPECIAL.search(text):
        return text
    return _XML_INVALID.sub(_escape_char, text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _xml_json(text):
    """_xml() for JSON text: the encoder already escaped every control character, so the only
    characters XML cannot hold that may be left are U+FFFE and U+FFFF (a substring test, not a
    scan with the pattern, on the largest texts of the report)."""
    if u'\ufffe' in text or u'\uffff' in text:
        text = xml_text(text)
    return text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')


def _xml_attr(text):
    text = str(text)
    if not _XML_SPECIAL.search(text):
        return text
    return _xml(text).replace('"', '&quot;').replace('\n', '&#10;').replace('\r', '&#13;').replace('\t', '&#9;')


def to_junit_parts(report):
    """JUnit XML: a suite per host, a case per check. A failing or erroring case carries its
    finding's JSON, the text build() made (written with strings: ElementTree cost more than
    the evidence's encoding)."""
    totals = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
    suites = []
    check_ids = [c['id'] for c in report['checks']]
    case_names = dict((cid, _xml_attr(cid)) for cid in check_ids)
    for entry, texts in zip(report['hosts'], finding_texts(report)):
        counts = {'tests': len(check_ids), 'failures': 0, 'errors': 0, 'skipped': 0}
        name = _xml_attr(entry['name'])
        cases = []
        if entry['state'] != 'audited':
            message = _xml_attr('%s: %s' % (entry['state'], entry['reason']))
            body = '<error message="%s" type="%s">%s</error>' % (message, entry['state'], _xml(entry['reason']))
            cases = ['<testcase classname="%s" name="%s">%s</testcase>' % (name, case_names[cid], body) for cid in check_ids]
            counts['errors'] = len(check_ids)
        for cid in check_ids if entry['state'] == 'audited' else ():
            finding = entry['findings'].get(cid)
            if finding is None:
                inner = '<skipped message="not run on this host" />'
                counts['skipped'] += 1
            else:
                status = str(finding.get('status'))
                message = _xml_attr('%s: %s' % (status, finding.get('summary', '')))
                if status in ('affected', 'at_risk'):
                    inner = '<failure message="%s" type="%s">%s</failure>' % (message, status, _xml_json(texts[cid]))
                    counts['failures'] += 1
                elif status == 'error':
                    inner = '<error message="%s" type="%s">%s</error>' % (message, status, _xml_json(texts[cid]))
                    counts['errors'] += 1
                elif status in ('not_applicable', 'unknown'):
                    inner = '<skipped message="%s" />' % message
                    counts['skipped'] += 1
                else:
                    inner = '<system-out>%s</system-out>' % _xml(message)
            cases.append('<testcase classname="%s" name="%s">%s</testcase>' % (name, case_names[cid], inner))
        for key in totals:
            totals[key] += counts[key]
        suites.append('<testsuite name="%s" tests="%d" failures="%d" errors="%d" skipped="%d">%s</testsuite>' % (
            name, counts['tests'], counts['failures'], counts['errors'], counts['skipped'], ''.join(cases)))
    if report.get('nothing_audited'):
        # A CI system reading an empty suite would show green; a run that audited nothing is an error.
        message = _xml_attr('nothing audited: %s' % report['nothing_audited'])
        suites.append('<testsuite name="homelab.postmortem" tests="1" failures="0" errors="1" skipped="0">'
                      '<testcase classname="homelab.postmortem" name="hosts"><error message="%s" type="nothing_audited">'
                      '%s</error></testcase></testsuite>' % (message, _xml(report['nothing_audited'])))
        totals['tests'] += 1
        totals['errors'] += 1
    yield '<testsuites name="homelab.postmortem" tests="%d" failures="%d" errors="%d" skipped="%d">' % (
        totals['tests'], totals['failures'], totals['errors'], totals['skipped'])
    for suite in suites:
        yield suite
        yield '\n'
    yield '</testsuites>'
