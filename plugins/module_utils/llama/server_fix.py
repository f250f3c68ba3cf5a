# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama_server_fix's plan: each setting changed where llama.cpp takes it from, and proved.

For every instance the detections judge (llama/server.py) and every fix it needs, the setting that
wins (llama/resolution.py) is changed where it was set:

- a config.ini or preset line: that line (the key kept, the value that gives the safe setting under it);
- the command line of a process a systemd unit starts: its ExecStart= (or Quadlet Exec=) tokens;
- an environment variable: the unit's Environment= line that sets it;
- nothing (the default): the unit's ExecStart=, or for a router's model its preset section.

A router's model takes its router's command line, environment and unit. Each planned change is then
proved: the instance is resolved again as it would start with the changed files, command line and
environment, under every rule set its build may follow. A fix whose setting would not change is not
written and stays open, with the reason; so is one with nowhere to write (no unit, a variable set
outside the unit, a file in another mount namespace).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import file_view as llama_files
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import presets as llama_presets
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import unit_fix

# fix -> (option, the safe value)
TARGETS = {
    'cache_ram_off': (llama_args.CACHE_RAM, 0),
    'no_cache_prompt': (llama_args.CACHE_PROMPT, False),
    'disable_sleep': (llama_args.SLEEP_IDLE_SECONDS, -1),
}
FIXES = ('cache_ram_off', 'no_cache_prompt', 'restart_on_failure', 'disable_sleep')


class Cannot(Exception):
    """There is nowhere to make this change; the message says why."""


def needed_fixes(inst, chosen):
    """({fix: bool}, caching): what an instance needs of the ``chosen`` fixes (names of FIXES) under any
    rule set its build may follow (the detections' own reading), and (prompt caching on, where) for the
    report."""
    fixes = dict((name, False) for name in FIXES)
    caching = (None, None)
    for rules in inst.rule_sets:
        config = inst.config(rules)
        adapters, _problems = llama_resolution.lora_adapters(config)
        if adapters:
            cache_ram = config.value(llama_args.CACHE_RAM)[0]
            enabled, where, _s = config.value(llama_args.CACHE_PROMPT)
            fixes['cache_ram_off'] |= ('cache_ram_off' in chosen) and cache_ram != 0
            fixes['no_cache_prompt'] |= ('no_cache_prompt' in chosen) and enabled is not False
            if enabled is not False:
                caching = (True, where)
        seconds = config.value(llama_args.SLEEP_IDLE_SECONDS)[0]
        sleeping = seconds >= 0
        fixes['restart_on_failure'] |= ('restart_on_failure' in chosen) and sleeping
        fixes['disable_sleep'] |= ('disable_sleep' in chosen) and sleeping
    return fixes, caching


class Change(object):
    """One place to change: kind 'unit-argv', 'unit-env' (unit, option/variable, target) or 'ini'
    (path, line or section, option, key, target)."""

    def __init__(self, kind, where, **details):
        self.kind = kind
        self.where = where
        self.details = details

    def key(self):
        return (self.kind, self.where) + tuple(sorted((k, repr(v)) for k, v in self.details.items()))


class Planner(object):
    def __init__(self, ctx, units, show_unit):
        self.ctx = ctx
        self.units_allowed = list(units or [])  # empty: every unit
        self.show_unit = show_unit  # unit -> {FragmentPath, SourcePath, DropInPaths}
        self.units = {}

    def unit_of(self, process):
        """(unit, None) of the system service that starts ``process``, or (None, why not)."""
        unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
        if unit is None or scope != 'system':
            return None, 'pid %d is not started by a system service' % process.pid
        if self.units_allowed and unit not in self.units_allowed:
            return None, '%s is not in the units this run may change' % unit
        return unit, None

    # -- where each winning setting can be changed ------------------------------------------------

    def changes_for(self, inst, fix):
        """[Change] that set ``fix``'s option where it wins, under every rule set; Cannot says why not."""
        option, target = TARGETS[fix]
        changes = {}
        for rules in inst.rule_sets:
            setting = inst.config(rules).last(option)
            for change in self._changes(inst, option, target, setting):
                changes[change.key()] = change
        return list(changes.values())

    def _changes(self, inst, option, target, setting):
        process = inst.process
        if setting is None or setting.layer == 'router':
            if inst.kind == 'child' and inst.section and inst.preset_path:
                return [self._ini_change(inst, inst.preset_path, option, target, section=inst.section)]
            return [self._unit_argv(inst, process, option, target)]
        origin = setting.origin
        if setting.layer == 'file':
            return [self._ini_change(inst, origin[1], option, target, lineno=origin[2], key=origin[4])]
        if setting.layer in ('argv', 'router-argv'):
            return [self._unit_argv(inst, process, option, target)]
        if setting.layer == 'env':
            return [self._unit_env(inst, process, origin[1], option, target)]
        raise Cannot('%s comes from %s, which this module does not change' % (option.key, setting.where))

    def _unit_argv(self, inst, process, option, target):
        if inst.kind == 'preset':
            raise Cannot('no running router uses %s: there is no command line to change' % inst.preset_path)
        unit, why = self.unit_of(process)
        if unit is None:
            setting = _word(option, target) if option.kind == 'bool' else '%s %s' % (option.key, _word(option, target))
            raise Cannot('%s: set %s on its command line by hand' % (why, setting))
        return Change('unit-argv', unit, option=option, target=target)

    def _unit_env(self, inst, process, name, option, target):
        if inst.kind == 'preset':
            raise Cannot('no running router uses %s: its environment is unknown' % inst.preset_path)
        unit, why = self.unit_of(process)
        if unit is None:
            raise Cannot('%s comes from the environment of pid %d, and %s: change it where it is set'
                         % (name, process.pid, why))
        return Change('unit-env', unit, name=name, value=_env_word(option, target))

    def _ini_change(self, inst, path, option, target, lineno=None, key=None, section=None):
        view = inst.server.view
        absolute = view.absolute(path)
        if view.root and not _same_root(view.root):
            raise Cannot('%s is in another mount namespace (a container?): change it there' % absolute)
        if inst.kind == 'preset' and lineno is None:
            raise Cannot('no running router uses %s' % absolute)
        return Change('ini', absolute, lineno=lineno, key=key, section=section, option=option, target=target)

    # -- what the changes do ----------------------------------------------------------------------

    def texts(self, changes, read):
        """{path: (before, after)} of the INI files the changes touch."""
        out = {}
        for change in sorted((c for c in changes if c.kind == 'ini'), key=lambda c: (c.where, -(c.details['lineno'] or 0))):
            before = out[change.where][1] if change.where in out else read(change.where)
            if before is None:
                before = ''
            d = change.details
            if d['lineno']:
                after = llama_presets.set_in_ini(before, d['lineno'], d['option'], d['key'], d['target'])
            else:
                after = llama_presets.add_to_ini(before, d['section'], d['option'], d['target'])
            out[change.where] = (out[change.where][0] if change.where in out else before, after)
        return out

    def proves(self, inst, changes, fix, read, append_only_units):
        """(True, None) when ``inst`` resolves to ``fix``'s safe value once ``changes`` are made, under
        every rule set; else (False, what it would be)."""
        option, target = TARGETS[fix]
        texts = dict((path, after) for path, (_before, after) in self.texts(changes, read).items())
        server = _changed_server(inst, changes, texts, append_only_units)
        for rules in inst.rule_sets:
            config = llama_resolution.resolve(server, rules)
            value, where, _s = config.value(option)
            if value != target or config.refused:
                return False, '%s would stay %s (%s)' % (option.key, _word(option, value), where)
        return True, None


def _changed_server(inst, changes, texts, append_only_units):
    """The instance's llama_resolution.Server as it would start after ``changes``."""
    view = llama_files.OverlayView(inst.server.view, texts) if texts else inst.server.view
    unit_argv = [c for c in changes if c.kind == 'unit-argv']
    unit_env = dict((c.details['name'], c.details['value']) for c in changes if c.kind == 'unit-env')
    if inst.kind == 'child':
        router = inst.router_instance
        argv = router.server.argv
        for change in unit_argv:
            argv = llama_args.set_in_argv(argv, router.server.start, change.details['option'], change.details['target'],
                                          change.where in append_only_units)
        environ = dict(router.server.environ or {}, **unit_env)
        child = llama_server.render_child(inst, argv, environ, view)
        return llama_resolution.Server(child.argv, child.environ, view, start=inst.server.start, uid=inst.server.uid,
                                       sources=child.sources)
    argv = inst.server.argv
    for change in unit_argv:
        argv = llama_args.set_in_argv(argv, inst.server.start, change.details['option'], change.details['target'],
                                      change.where in append_only_units)
    environ = dict(inst.server.environ or {}, **unit_env)
    return llama_resolution.Server(argv, environ, view, start=inst.server.start, uid=inst.server.uid)


def _same_root(root):
    try:
        mine, theirs = os.stat('/'), os.stat(root)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _word(option, value):
    if option.kind == 'bool':
        return option.args[-1] if value else option.neg[-1]
    return str(value)


def _env_word(option, target):
    if option.kind == 'bool':
        return '1' if target else '0'
    return str(target)


def read_ini(path):
    """The text of an INI file the plan changes (None when it does not exist yet)."""
    return hostio.read_text_if_present(path)


def plan_unit(planner, unit, edits, process_argv, read=hostio.read_text):
    """(changes, mode, append_only) of one unit; HostInputError when it cannot be planned."""
    props = planner.show_unit(unit)
    return unit_fix.plan(unit, props.get('FragmentPath'), props.get('SourcePath'),
                         (props.get('DropInPaths') or '').split(), edits, read=read, process_argv=process_argv)


MANUAL_STEPS = {
    'cache_ram_off': 'add --cache-ram 0',
    'no_cache_prompt': 'add --no-cache-prompt',
    'restart_on_failure': 'have its supervisor restart it when it crashes',
    'disable_sleep': 'add --sleep-idle-seconds -1',
}
SETTING_FIXES = ('cache_ram_off', 'no_cache_prompt', 'disable_sleep')


def _pid(inst):
    return inst.process.pid if inst.process is not None else None


class Run(object):
    """One run of the module: what each instance needs, where it can be changed, and the proof."""

    def __init__(self, ctx, chosen, units, systemctl):
        self.chosen = frozenset(chosen)
        self.ctx = ctx
        self.systemctl = systemctl
        self._shown = {}
        self.planner = Planner(ctx, units, self.show_unit)
        self.open, self.unmanaged, self.global_path_open = [], [], []

    def show_unit(self, unit):
        if unit not in self._shown:
            if not self.systemctl:
                raise HostInputError('systemctl not found, but %s is a systemd service' % unit)
            self._shown[unit] = hostio.systemd_show(self.ctx.run_command, self.systemctl, unit,
                                                    ['FragmentPath', 'SourcePath', 'DropInPaths'])
        return self._shown[unit]

    def leave_open(self, inst, fix, reason):
        self.open.append({'instance': inst.name, 'pid': _pid(inst), 'fix': fix, 'reason': reason})

    def wanted(self, instances):
        """[(inst, fix, [Change])] for the settings to change, and {unit: [insts]} wanting Restart=."""
        wanted, restarts = [], {}
        for inst in instances:
            fixes, caching = needed_fixes(inst, self.chosen)
            if caching[0] and not fixes['no_cache_prompt']:
                self.global_path_open.append({'pid': _pid(inst), 'instance': inst.name, 'cache_prompt_source': caching[1]})
            manual = []
            for fix in SETTING_FIXES:
                if not fixes[fix]:
                    continue
                try:
                    wanted.append((inst, fix, self.planner.changes_for(inst, fix)))
                except Cannot as exc:
                    self.leave_open(inst, fix, str(exc))
                    manual.append(fix)
            if fixes['restart_on_failure']:
                unit, why = self.planner.unit_of(inst.process) if inst.process is not None else (None, 'no process')
                if unit is None:
                    self.leave_open(inst, 'restart_on_failure', why)
                    manual.append('restart_on_failure')
                else:
                    restarts.setdefault(unit, []).append(inst)
            if manual and inst.process is not None and self.planner.unit_of(inst.process)[0] is None:
                self.unmanaged.append({'pid': inst.process.pid, 'instance': inst.name,
                                       'fixes': dict((k, k in manual) for k in FIXES),
                                       'manual': 'not started by a system service: change it by hand: %s'
                                                 % '; '.join(MANUAL_STEPS[k] for k in FIXES if k in manual)})
        return wanted, restarts

    def plan_units(self, wanted, restarts):
        """({unit: (changes, mode, append_only, insts)}, failed {unit: reason})."""
        edits, argvs, insts = {}, {}, {}
        for inst, _fix, changes in wanted:
            for change in changes:
                if change.kind == 'ini':
                    continue
                unit_edits = edits.setdefault(change.where, unit_fix.UnitEdits())
                if change.kind == 'unit-argv':
                    pair = (change.details['option'], change.details['target'])
                    if pair not in unit_edits.argv:
                        unit_edits.argv.append(pair)
                else:
                    unit_edits.env[change.details['name']] = change.details['value']
                owner = inst.router_instance if inst.kind == 'child' else inst
                argvs[change.where] = owner.server.argv
                insts.setdefault(change.where, []).append(inst)
        for unit, waiting in restarts.items():
            edits.setdefault(unit, unit_fix.UnitEdits()).restart = True
            insts.setdefault(unit, []).extend(waiting)
            owner = waiting[0].router_instance if waiting[0].kind == 'child' else waiting[0]
            argvs.setdefault(unit, owner.server.argv)
        planned, failed = {}, {}
        for unit in sorted(edits):
            try:
                changes, mode, append_only = plan_unit(self.planner, unit, edits[unit], argvs[unit])
            except HostInputError as exc:
                failed[unit] = '%s: %s' % (unit, exc)
                continue
            planned[unit] = (changes, mode, append_only, insts[unit])
        return planned, failed

    def settle(self, wanted, restarts):
        """Drop what cannot be planned or proved until what is left holds; returns the plan."""
        while True:
            planned, failed = self.plan_units(wanted, restarts)
            append_only = set(unit for unit, item in planned.items() if item[2])
            keep = []
            for inst, fix, changes in wanted:
                broken = [failed[c.where] for c in changes if c.kind != 'ini' and c.where in failed]
                if broken:
                    self.leave_open(inst, fix, broken[0])
                    continue
                try:
                    held, why = self.planner.proves(inst, changes, fix, read_ini, append_only)
                except (HostInputError, ValueError) as exc:
                    held, why = False, str(exc)
                if not held:
                    self.leave_open(inst, fix, 'not changed: %s after the change' % why)
                    continue
                keep.append((inst, fix, changes))
            for unit, reason in failed.items():
                for inst in restarts.pop(unit, []):
                    self.leave_open(inst, 'restart_on_failure', reason)
            if len(keep) == len(wanted):
                return planned, keep
            wanted = keep


def plan_and_prove(ctx, systemctl, chosen, units=()):
    """(result, writes) of llama_server_fix: the plan, proved; writes are [(path, before, after)].
    ``chosen``: the names of FIXES to make; ``units``: the only units to change (empty: any).
    HostInputError when the host cannot be planned for."""
    found, _evidence = llama_server.instances(ctx)
    run = Run(ctx, chosen, units, systemctl)
    wanted, restarts = run.wanted([inst for inst in found if not isinstance(inst, dict)])
    planned, kept = run.settle(wanted, restarts)
    ini = run.planner.texts([c for _i, _f, changes in kept for c in changes], read_ini)

    results, writes = {}, []
    for unit, (changes, mode, _append_only, insts) in sorted(planned.items()):
        entry = results.setdefault(unit, {'unit': unit, 'pids': [], 'fixes': dict((k, False) for k in FIXES),
                                          'mode': mode, 'files': [], 'changed': False})
        entry['files'] += [c[0] for c in changes]
        entry['changed'] = entry['changed'] or bool(changes)
        for path, before, after in changes:
            writes.append((path, before, after))
    for path, (before, after) in sorted(ini.items()):
        if before != after:
            writes.append((path, before or None, after))
    for inst, name, changes in kept:
        owner = inst.router_instance if inst.kind == 'child' else inst
        unit, why = run.planner.unit_of(owner.process)
        if unit is None:
            run.unmanaged.append({'pid': owner.process.pid, 'instance': inst.name, 'fixes': {name: True},
                                  'manual': '%s; restart it by hand to apply %s' % (why, ', '.join(
                                      c.where for c in changes if c.kind == 'ini'))})
            continue
        entry = results.setdefault(unit, {'unit': unit, 'pids': [], 'fixes': dict((k, False) for k in FIXES),
                                          'mode': 'files', 'files': [], 'changed': False})
        entry['fixes'][name] = True
        for change in changes:
            if change.kind == 'ini' and change.where in ini and ini[change.where][0] != ini[change.where][1]:
                entry['files'] = sorted(set(entry['files'] + [change.where]))
                entry['changed'] = True
        if owner.process.pid not in entry['pids']:
            entry['pids'].append(owner.process.pid)
    for unit, insts in restarts.items():
        if unit in results:
            results[unit]['fixes']['restart_on_failure'] = True
            for inst in insts:
                owner = inst.router_instance if inst.kind == 'child' else inst
                if owner.process.pid not in results[unit]['pids']:
                    results[unit]['pids'].append(owner.process.pid)
    result = dict(units=[results[u] for u in sorted(results)], unmanaged=run.unmanaged, open=run.open,
                  global_path_open=run.global_path_open)
    return result, writes
