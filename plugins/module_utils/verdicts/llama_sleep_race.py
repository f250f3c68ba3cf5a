# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_sleep_race's verdict: the code that judges what the detection's first question found.

detections/llama_sleep_race.py imports it only when that question found something (docs/architecture.md,
"A detection's two files").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import make_finding, worst_instance

# --sleep-idle-seconds has no environment variable (arg.cpp l.3820-3828 sets none): a server started
# with this one never slept (measured), so it is only a note.
IGNORED_SLEEP_ENV = 'LLAMA_ARG_SLEEP_IDLE_SECONDS'


def _restart_text(sup):
    if sup.get('crash_restarted') is True:
        return 'a crash is restarted (Restart=%s on %s)' % (sup['restart'], sup['unit'])
    if sup.get('crash_restarted') is False and sup.get('unit'):
        return 'a crash is NOT restarted (Restart=%s on %s)' % (sup.get('restart'), sup['unit'])
    if sup.get('crash_restarted') is False:
        return 'a crash is NOT restarted (no systemd service owns the process)'
    return 'whether a crash is restarted is unknown (%s)' % sup.get('reason')


def _supervision(ctx, inst):
    """(supervisor evidence or None, words for the summary)."""
    if inst.process is None:
        return None, 'no running router uses this preset, so the restart setting is unknown'
    sup = llama_server.supervisor(ctx, inst.process)
    if inst.kind == 'child':
        return sup, 'its router pid %d: %s' % (inst.process.pid, _restart_text(sup))
    return sup, _restart_text(sup)


def fixed_build(value):
    """The build number of the fixed_in setting ('b12000' or '12000'), or None when it is not one."""
    match = re.match(r'\Ab?(\d{1,9})\Z', value.strip()) if isinstance(value, str) else None
    return int(match.group(1)) if match else None


def _instance(ctx, inst, fixed_in=None):
    environ = inst.server.environ or {}
    supervision = []
    if fixed_in is not None and inst.build.number is not None and inst.build.number >= fixed_in:
        # Only a build that was read counts: an unknown build is judged by its configuration as before.
        return llama_server.judge(inst, lambda config: (
            'ok', '%s is build b%d, at or after fixed_in b%d: the sleep race is fixed there.' % (
                inst.name, inst.build.number, fixed_in), {'fixed_in': 'b%d' % fixed_in}))

    def judge_config(config):
        seconds, where, refusal = llama_resolution.int_value(config, llama_args.SLEEP_IDLE_SECONDS)
        evidence = {'sleep_idle_seconds': seconds, 'source': where}
        if IGNORED_SLEEP_ENV in environ:
            evidence['note'] = ('%s=%s is set, but llama-server does not read it (no environment variable '
                                'for --sleep-idle-seconds); it does not turn sleep on'
                                % (IGNORED_SLEEP_ENV, environ[IGNORED_SLEEP_ENV]))
        if refusal:
            return 'unknown', ('%s: --sleep-idle-seconds %d (%s), which llama-server refuses (%s): it does not run '
                               'with what was read here.' % (inst.name, seconds, where, refusal)), evidence
        if seconds < 0:
            return 'ok', '%s: sleep mode is off (%s).' % (inst.name, where), evidence
        if not supervision:
            supervision.append(_supervision(ctx, inst))
        sup, restart = supervision[0]
        if sup is not None:
            evidence['supervisor'] = sup
        return 'at_risk', '%s sleeps after %d s idle (%s); %s.' % (inst.name, seconds, where, restart), evidence

    return llama_server.judge(inst, judge_config)


def judge(ctx, detection, settings):
    found, evidence = llama_server.instances(ctx, settings.get('preset_paths'))
    fixed_in = fixed_build(settings['fixed_in']) if settings.get('fixed_in') else None
    if settings.get('fixed_in') and fixed_in is None:
        return make_finding(detection, 'error', 'Setting fixed_in %r is not a llama.cpp build (like b12000 or 12000).'
                            % (settings['fixed_in'][:40],), evidence=evidence)
    instances = [i if isinstance(i, dict) else _instance(ctx, i, fixed_in) for i in found]
    if not ctx.live:
        evidence['note'] = 'image audit (root=%s): no processes to read; only listed preset files were checked' % ctx.root
    if not instances:
        return make_finding(detection, 'not_applicable', 'No llama-server process or router preset found.', evidence=evidence)
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
    return make_finding(detection, 'ok', summary, evidence=evidence, instances=instances)
