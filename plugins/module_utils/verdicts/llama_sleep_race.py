# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_sleep_race's verdict: the code that judges what the detection's first question found.

detections/llama_sleep_race.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import instance, make_finding, worst_instance
from ansible_collections.homelab.postmortem.plugins.module_utils.detections import llama_sleep_race as DETECTION


def _restart_text(sup):
    if sup.get('crash_restarted') is True:
        return 'a crash is restarted (Restart=%s on %s)' % (sup['restart'], sup['unit'])
    if sup.get('crash_restarted') is False and sup.get('unit'):
        return 'a crash is NOT restarted (Restart=%s on %s)' % (sup.get('restart'), sup['unit'])
    if sup.get('crash_restarted') is False:
        return 'a crash is NOT restarted (no systemd service owns the process)'
    return 'whether a crash is restarted is unknown (%s)' % sup.get('reason')


def _process_instance(ctx, process):
    environ = process.environ()
    value, source = llama_server.resolve(llama_server.SLEEP_IDLE_SECONDS, process.argv, environ or {})
    seconds = llama_server.as_int(value)
    evidence = {
        'pid': process.pid,
        'argv': llama_server.redact_argv(process.argv),
        'sleep_idle_seconds': seconds if seconds is not None else value,
        'source': source,
    }
    if process.environ_problem:
        evidence['environ'] = process.environ_problem
    if environ and llama_server.IGNORED_SLEEP_ENV in environ:
        evidence['note'] = ('%s=%s is set, but llama-server does not read it (no environment variable '
                            'for --sleep-idle-seconds); it does not turn sleep on'
                            % (llama_server.IGNORED_SLEEP_ENV, environ[llama_server.IGNORED_SLEEP_ENV]))
    name = llama_server.describe_process(process)
    if seconds is None:
        return instance(name, 'error', '%s: --sleep-idle-seconds %r is not a number.' % (name, value), evidence)
    if seconds < 0:
        return instance(name, 'ok', '%s: sleep mode is off.' % name, evidence)
    sup = llama_server.supervisor(ctx, process)
    evidence['supervisor'] = sup
    summary = '%s sleeps after %d s idle (%s); %s.' % (name, seconds, source, _restart_text(sup))
    return instance(name, 'at_risk', summary, evidence)


def _preset_instances(ctx, path, routers):
    sections, problem = llama_server.read_preset(path, routers)
    if problem:
        return problem
    found = []
    router_override = llama_server.router_value(routers, llama_server.SLEEP_IDLE_SECONDS)
    model_sections = [s for s in sections if s not in ('', '*')] or ['*']
    for section in sorted(model_sections):
        value, where = llama_server.preset_value(sections, section, llama_server.SLEEP_IDLE_SECONDS)
        if value is None:
            continue
        seconds = llama_server.as_int(value)
        name = 'preset %s [%s]' % (path, section)
        evidence = {'file': path, 'section': section, 'defined_in': '[%s] line %d' % where,
                    'sleep_idle_seconds': seconds if seconds is not None else value,
                    'used_by': [r.pid for r in routers]}
        if router_override:
            evidence['overridden_by'] = 'command line of router pid %d: --sleep-idle-seconds %s' % router_override
            override_seconds = llama_server.as_int(router_override[1])
            if override_seconds is not None:
                seconds = override_seconds
                evidence['sleep_idle_seconds'] = seconds
        if seconds is None:
            found.append(instance(name, 'error', '%s: sleep-idle-seconds = %r is not a number.' % (name, value), evidence))
        elif seconds < 0:
            found.append(instance(name, 'ok', '%s: sleep mode is off.' % name, evidence))
        else:
            if routers:
                sup = llama_server.supervisor(ctx, routers[0])
                evidence['supervisor'] = sup
                restart = _restart_text(sup)
            else:
                restart = 'no running router uses this preset, so the restart setting is unknown'
            found.append(instance(name, 'at_risk', '%s sleeps after %d s idle; %s.' % (name, seconds, restart), evidence))
    return found


def judge(ctx, settings):
    instances, evidence = llama_server.collect(ctx, settings.get('preset_paths'), _process_instance, _preset_instances)
    if not ctx.live:
        evidence['note'] = 'image audit (root=%s): no processes to read; only listed preset files were checked' % ctx.root
    if not instances:
        return make_finding(DETECTION, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
    risky = [i for i in instances if i['status'] == 'at_risk']
    if risky:
        unrestarted = [i for i in risky if (i['evidence'].get('supervisor') or {}).get('crash_restarted') is False]
        summary = '%d of %d llama-server instance(s) have sleep mode on' % (len(risky), len(instances))
        if unrestarted:
            summary += '; %d would stay down after a crash' % len(unrestarted)
        summary += '. A request just before sleep can hang or crash the server.'
    else:
        worst = worst_instance([i for i in instances if i['status'] != 'ok'])
        summary = worst['summary'] if worst else 'Sleep mode is off on all %d llama-server instance(s).' % len(instances)
    return make_finding(DETECTION, 'ok', summary, evidence=evidence, instances=instances)
