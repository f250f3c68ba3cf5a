"""The fleet report as whole strings, for tests.

Production writes every format in pieces (report_files), never as one string; these join the pieces
so a test can read a page or a document at once. They live here, not beside the model, so that the
report model imports no view.
"""
import base64
import json
import zlib

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.plugin_utils import report, report_html, report_junit


def to_json(built):
    return ''.join(report.to_json_parts(built, report.hosts_findings_json(built)))


def render_html(built):
    return ''.join(report_html.render_html_parts(built, report.hosts_findings_json(built)))


def to_junit(built):
    return ''.join(report_junit.to_junit_parts(built))


def open_block(data):
    """The findings of one block, from the page's text (what the page's script does)."""
    return json.loads(zlib.decompress(base64.b64decode(data), 16 + zlib.MAX_WBITS).decode('utf-8'))


def host_entry(name, result, interpreter=None):
    """One host's record in the report, as build() makes it from its registered audit_facts result;
    ``interpreter``: the host's ansible_python_interpreter as the controller knows it."""
    checks = [(detection.ID, detection.TITLE) for detection in registry.DETECTIONS]
    return report.build([name], {name: result}, checks, 'test',
                        interpreters={name: interpreter} if interpreter else None)['hosts'][0]
