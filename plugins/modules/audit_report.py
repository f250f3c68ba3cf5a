#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: audit_report
short_description: Write the fleet report (JSON, JUnit XML, HTML) from every host's audit result
version_added: 0.1.0
description:
  - Runs on the controller (it is an action plugin). Reads each host's registered
    M(homelab.postmortem.audit_facts) result from C(hostvars), and writes
    C(postmortem.json) (all findings), C(postmortem-junit.xml) (one test case per host and
    detection; V(affected) and V(at_risk) are failures, V(error) is an error,
    V(not_applicable) and V(unknown) are skipped) and C(postmortem.html) (a self-contained
    host x detection grid, colour by status, evidence and fix on click, filter by status).
  - Hosts that were unreachable, or whose audit task failed, appear in every report with
    the reason, and the report is still written.
  - A remediation run's report (O(before_var) or O(remediation_var)) is written as C(postmortem-remediate.json),
    C(postmortem-remediate-junit.xml), C(postmortem-remediate.html) and C(postmortem-remediate.prom), beside the
    audit's files and never over them.
  - A run that audited no host still replaces C(postmortem.*) (an older report must never look current), but the
    last good audit's report is first kept as C(postmortem-last-good.json), C(postmortem-last-good-junit.xml) and
    C(postmortem-last-good.html); the summary names it. A later good audit removes that copy.
  - Prints a compact summary table on the terminal, with each finding that needs attention, its fix
    and its docs page. The summary is printed even when the report files cannot be written; the
    task then fails and says why (not a directory, read-only).
options:
  dest:
    description: Directory for the report files; created if missing. Relative to the current directory.
    type: path
    default: postmortem-report
  hosts:
    description: Hosts to report on. Defaults to C(ansible_play_hosts_all), which keeps unreachable hosts.
    type: list
    elements: str
  result_var:
    description: Name of the variable each host registered the M(homelab.postmortem.audit_facts) result in.
    type: str
    default: postmortem_gather
  before_var:
    description:
      - Name of the variable each host registered an earlier M(homelab.postmortem.audit_facts) result in
        (the audit before remediation). Each host's report entry then carries C(before) (check -> status),
        and the summary counts the findings fixed, still open and new, and lists the hosts that changed.
    type: str
    version_added: 0.2.0
  remediation_var:
    description:
      - Name of the variable in which the remediation recorded, per host, what it did (C(state) one of
        C(ran), C(nothing_to_run), C(failed), C(lost), C(not_run); C(roles), each with its C(result) C(ran),
        C(failed) or C(not_run) and the switch left off; C(left), the open findings left alone and why;
        C(task) and C(reason) when it failed, lost the host or did not run). Each host's report entry
        then carries C(remediation), and the summary names the hosts whose fixes failed, were lost or
        were not run, with the reason. Whether a finding was fixed is decided by the audit after
        remediation, never by the record. The task fails when any host's remediation did not finish.
    type: str
    version_added: 0.2.0
  formats:
    description: Which report files to write.
    type: list
    elements: str
    choices: [json, junit, html, prometheus]
    default: [json, junit, html, prometheus]
  fail_on:
    description:
      - Fail the task, after the reports are written, when any finding has this status or a more
        serious one. Statuses from least to most serious are V(not_applicable), V(ok),
        V(unknown), V(error), V(at_risk), V(affected). V(unknown) makes findings the audit could
        not decide fail the gate too.
      - V(never) only reports.
    type: str
    default: never
    choices: [never, not_applicable, ok, unknown, error, at_risk, affected]
  fail_on_unaudited:
    description:
      - With any O(fail_on) other than V(never), a host that could not be audited (unreachable, no
        usable Python, the audit task failed) fails the gate whatever the threshold is, and the
        summary says so. Set to V(false) to let such hosts pass.
    type: bool
    default: true
  fail_on_no_hosts:
    description:
      - Fail when the run audited no host at all, whatever O(fail_on) is - O(hosts) is empty, or every host
        was unreachable or failed. The report then says so, and why per host, instead of leaving an older
        one in place; C(homelab_postmortem_nothing_audited) is 1 in the metrics.
    type: bool
    default: true
    version_added: 0.2.0
  host_pattern:
    description: The host pattern of the run (the playbooks pass C(postmortem_hosts)), named in the report when it matched no host.
    type: str
    default: all
    version_added: 0.2.0
  previous:
    description:
      - An earlier C(postmortem.json) to compare this audit with. By default the comparison is with the
        last audit recorded in O(dest)'s C(postmortem-history.json); a remediation run's report or a run
        that audited no host is never that baseline unless named here.
      - Only measurements move a finding. Per host and check the report records C(drift) - C(opened) (measured
        V(affected)/V(at_risk) and the last measurement was below, or there was none), C(reopened) (the same,
        after a measured close), C(closed) (measured V(ok)/V(not_applicable) after V(affected)/V(at_risk)),
        C(unmeasured) (the last measurement was open and this run could not measure it); since when a host or
        check has gone unmeasured; hosts that appeared, vanished or were dropped from the history. The history
        keeps the last measured status per host and check; an unreachable host or an V(unknown) check never
        replaces it. A previous report that cannot be used (corrupt, too large, another schema, not a regular
        file) is a note, never a failure.
    type: str
    default: ''
    version_added: 0.2.0
  accept:
    description:
      - A YAML file of accepted findings - a list of C(host) (a name or shell pattern), C(check), C(reason)
        and optional C(expires) (a date from which the finding counts again). Accepted findings keep their
        status and evidence, are shown as accepted and never fail the gate; entries that match nothing are
        reported.
    type: str
    default: ''
    version_added: 0.2.0
  fail_on_new_only:
    description:
      - With O(fail_on), fail only on findings this audit opened or reopened (and, with O(fail_on_unaudited),
        hosts audited last time that could not be audited now). Known, unchanged findings pass.
    type: bool
    default: false
    version_added: 0.2.0
  textfile_dir:
    description:
      - Also write C(postmortem.prom) (Prometheus text format) into this directory, atomically - the
        directory node_exporter reads with C(--collector.textfile.directory).
    type: str
    default: ''
    version_added: 0.2.0
  check_files:
    description:
      - The run's declared checks (C(postmortem_check_files)) - a YAML file, a directory of C(*.yml), or a list
        of them. Each host's answers to their questions (RV(homelab.postmortem.audit_facts#module:ansible_facts.postmortem_declared)) are judged here,
        on the controller, before the report is built, and become findings like the built-in ones. Needs the
        Python package C(jmespath) on the controller. See the collection's C(docs/declared_checks.md).
      - A file that cannot be loaded any more (it changed during the run) fails the task; the report is still
        written, without the declared checks.
    type: raw
    default: []
    version_added: 0.2.0
  started_at:
    description: When the run began (Unix time), for the run's duration in the report and the metrics.
    type: float
    version_added: 0.2.0
  defer_failure:
    description:
      - Do not fail the task when the gate fails; return its decision in RV(gate) instead, for a later task to act
        on. The collection's playbooks fail the run in a play of their own on the controller, so that the PLAY
        RECAP does not count the failure against the audited host this task ran on.
    type: bool
    default: false
    version_added: 0.2.0
  print_summary:
    description: Print the summary table on the terminal.
    type: bool
    default: true
extends_documentation_fragment:
  - homelab.postmortem.attributes
  - homelab.postmortem.attributes.action
  - homelab.postmortem.host
seealso:
  - module: homelab.postmortem.audit_facts
'''

EXAMPLES = r'''
- name: Audit every host
  homelab.postmortem.audit_facts:
  register: postmortem_gather
  ignore_unreachable: true
  ignore_errors: true

- name: Write the fleet report and fail on anything affected
  homelab.postmortem.audit_report:
    dest: /srv/reports/postmortem
    fail_on: affected
  run_once: true
'''

RETURN = r'''
paths:
  description: Absolute path of each report file written, by format.
  returned: always
  type: dict
  sample: {html: /srv/reports/postmortem/postmortem.html, json: /srv/reports/postmortem/postmortem.json}
totals:
  description: Number of findings per status, plus C(unreachable) and C(failed) host counts.
  returned: always
  type: dict
  sample: {at_risk: 1, not_applicable: 3, ok: 2}
worst:
  description: The most serious status in the report (unreachable and failed hosts count as V(error)).
  returned: always
  type: str
  sample: at_risk
summary:
  description: The summary table, one line per element (when O(print_summary) is false; otherwise it is printed once).
  returned: when O(print_summary=false)
  type: list
  elements: str
threshold_hits:
  description: The host/check pairs at or above O(fail_on), and the hosts that could not be audited.
  returned: always
  type: list
  elements: str
gate:
  description: What the gate decided - C(failed), and C(msg) saying why (null when it passed).
  returned: when O(defer_failure=true)
  type: dict
  sample: {failed: true, msg: "1 finding(s) at or above at_risk: pi-1/pi_ir_tx: at_risk"}
'''
