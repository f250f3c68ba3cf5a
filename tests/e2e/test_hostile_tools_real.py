"""Hostile tool output through real ansible-playbook runs: the host's result must reach the
controller (ansible-core 2.19 refuses a whole result with one lone surrogate or NaN) and the
report must stay valid JSON and XML.

The ``podman`` here is a stand-in script first on PATH that answers with undecodable bytes, NaN
and wrong types, since no real podman answers like that on purpose.
"""
import json
import os
import xml.etree.ElementTree as ET

import pytest

from helpers import local_host, run_audit

pytestmark = pytest.mark.needs_root('podman_restart_userns needs root to run its commands at all')

INFO = '{"host": {"security": {"rootless": false}}, "version": {"Version": "4.3.1"}}'
# An undecodable byte raw, an escape character JSON-escaped (as Go's encoder writes it).
CONTAINER = ('[{"Id": "%s", "Name": "we\\377b\\\\u001b[31m", "RestartCount": 1, '
             '"State": {"Status": "exited", "ExitCode": NaN, "StartedAt": "2026-01-01T00:00:00Z"}, '
             '"HostConfig": {"RestartPolicy": {"Name": "always", "MaximumRetryCount": 0}}, "Config": {"Labels": {}}}]'
             % ('a' * 64))


def tools(tmp_path, body=None, binary=None):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    podman = bindir / 'podman'
    if binary is not None:
        podman.write_bytes(binary)
    else:
        podman.write_text('#!/bin/sh\n' + body)
    podman.chmod(0o755)
    return {'PATH': '%s:%s' % (bindir, os.environ['PATH'])}


def test_undecodable_bytes_nan_and_control_characters_reach_the_report(tmp_path):
    body = ('case "$1" in\n'
            "  info) printf '%%s' '%s' ;;\n"
            "  ps) printf '%%s' '[{\"Id\": \"%s\"}]' ;;\n"
            "  container) printf '%s' ;;\n"
            "  events) printf 'not json\\n\\377\\n' ;;\n"
            'esac\n') % (INFO, 'a' * 64, CONTAINER)
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_checks': ['podman', 'pi']},
                    env=tools(tmp_path, body))
    assert run.proc.returncode == 0, run.output
    host = run.host('localhost')
    assert host['state'] == 'audited', host
    finding = run.finding('localhost', 'podman_restart_userns')
    instance = finding['evidence']['instances'][0]
    assert instance['evidence']['name'] == 'we\ufffdb\x1b[31m'
    assert instance['evidence']['exit_code'] == 'nan'
    with open(os.path.join(run.report_dir, 'postmortem.json')) as handle:
        json.loads(handle.read(), parse_constant=lambda name: pytest.fail('non-strict JSON constant %s' % name))
    ET.parse(os.path.join(run.report_dir, 'postmortem-junit.xml'))
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'


def test_a_podman_that_cannot_execute_costs_only_its_detections(tmp_path):
    run = run_audit(tmp_path, {'all': {'hosts': {'localhost': local_host()}}}, {'postmortem_checks': ['podman', 'pi']},
                    env=tools(tmp_path, binary=b'\x7fELF\x02\x01\x01garbage'))
    assert run.proc.returncode == 0, run.output
    for check in ('podman_restart_userns', 'podman_export_idmap'):
        finding = run.finding('localhost', check)
        assert finding['status'] == 'error'
        assert 'cannot run podman' in finding['summary']
    assert run.finding('localhost', 'pi_ir_tx')['status'] == 'not_applicable'
