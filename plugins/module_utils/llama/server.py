# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every llama-server instance on a host, each with its configuration resolved by llama/resolution.py.

Shared by the llama_* detections and llama_server_fix:

- running llama-server processes, and the unified binary's `llama serve|server` (app/llama.cpp);
- a router (a server started without a model, tools/server/server.cpp l.150-153) is not an
  instance: each of its --models-preset sections is one (a child as the router would start it),
  and so is any model from its cache or --models-dir (the [*] section and the router's command
  line). A child that runs is judged from its own /proc entry, once;
- preset files the user lists (no router: no command line or environment to add).

Each instance carries its build (llama/build.py) and one Config per rule set that build may follow.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import STATUS_RANK, instance
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import build as llama_build
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import build_rules as llama_rules
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import file_view as llama_files
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import presets as llama_presets
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import resolution as llama_resolution
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import router as llama_router
# The process table is read by llama/processes.py (the detections' first question); the instances
# here are built from the same answers.
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.processes import (
    option_start, process_table_evidence, processes)


class Instance(object):
    """One llama-server as a detection judges it.

    kind: 'process' (running), 'child' (a router's model, as the router would start it) or
    'preset' (a listed preset file's section, no router). ``process`` is the running process (for
    a child: its router's), ``build`` a llama/build.Build, ``server`` the llama/resolution.Server.
    """

    def __init__(self, kind, name, server, build, process=None, router=None, section=None, preset_path=None):
        self.kind = kind
        self.name = name
        self.server = server
        self.build = build
        self.process = process
        self.router = router
        self.section = section
        self.preset_path = preset_path
        self.notes = []
        self.router_instance = None  # a child's router (an Instance)
        self.render = None  # a child's (bin_path, unified, router_port, default child or not)
        self._configs = {}
        self.rule_sets = llama_rules.rule_sets(build.number)

    def config(self, rules):
        """The Config under ``rules``; resolved once per config-file rule (the only one resolving reads)."""
        if not self._configs:
            self._configs = llama_resolution.resolve_pair(self.server)
        twin = copy.copy(self._configs[bool(rules.get('config_files'))])
        twin.rules = rules
        return twin

    def evidence(self):
        """What every instance reports: where it runs, how it was started (secrets redacted), its build."""
        evidence = {'kind': self.kind, 'build': self.build.evidence()}
        if self.process is not None:
            evidence['pid' if self.kind == 'process' else 'router_pid'] = self.process.pid
        if self.kind == 'process':
            evidence['argv'] = redact_argv(self.server.argv)
            if self.process.environ_problem:
                evidence['environ'] = self.process.environ_problem
        else:
            evidence.update(file=self.preset_path, section=self.section, argv=redact_argv(self.server.argv))
        if self.router is not None:
            evidence['router'] = self.router
        if self.notes:
            evidence['notes'] = list(self.notes)
        return evidence


# ---------------------------------------------------------------------------------------------
# judging under every rule set

def judge(inst, judge_config, rules_used=()):
    """Run ``judge_config(config) -> (status, summary, evidence)`` under each rule set the
    instance's build may follow (once per combination of the rules it reads: config_files and
    ``rules_used``); the same verdict everywhere is that verdict, otherwise the most serious one,
    saying which rules give which. What could not be read turns an ok into unknown: a setting we
    did not see may be the one that matters."""
    verdicts, seen = [], set()
    for rules in inst.rule_sets:
        used = tuple(rules.get(name) for name in ('config_files',) + tuple(rules_used))
        if used in seen:
            continue
        seen.add(used)
        config = inst.config(rules)
        status, summary, evidence = judge_config(config)
        evidence = dict(evidence)
        evidence.update(_config_evidence(config))
        if config.refused and status in ('ok', 'unknown'):
            status, summary = 'error', '%s: %s.' % (inst.name, '; '.join(config.refused))
        elif status == 'ok' and not config.complete:
            status, summary = 'unknown', '%s But the configuration could not be read in full: %s' % (
                summary, '; '.join(config.problems))
        changed = [f['path'] for f in config.files if f.get('changed_after_start')]
        if status == 'ok' and changed:
            status, summary = 'unknown', ('%s But %s changed after the server started: it runs with what the file '
                                          'said then (restart it to apply the file).' % (summary, ', '.join(changed)))
        verdicts.append((rules, status, summary, evidence))
    statuses = set(v[1] for v in verdicts)
    worst = sorted(verdicts, key=lambda v: STATUS_RANK[v[1]])[-1]
    _rules, status, summary, evidence = worst
    evidence = dict(inst.evidence(), **evidence)
    if inst.build.number is None or len(inst.rule_sets) > 1:
        build = 'unknown' if inst.build.number is None else 'b%d' % inst.build.number
        evidence['rules'] = {'judged_under': len(inst.rule_sets),
                             'why': 'build %s: every rule set such a build may follow was applied' % build}
        if len(statuses) > 1:
            evidence['rules']['verdicts'] = [{'rules': llama_rules.describe_rules(r), 'status': s}
                                             for r, s, _sum, _e in verdicts]
            summary = '%s (build %s: the most serious verdict of the rules it may follow)' % (
                summary, 'unknown' if inst.build.number is None else 'b%d' % inst.build.number)
    return instance(inst.name, status, summary, evidence)


def _config_evidence(config):
    evidence = {}
    files = [dict(f) for f in config.files if f.get('exists') or f.get('problem')]
    if files:
        evidence['config_files'] = files
    if config.problems:
        evidence['config_problems'] = list(config.problems)
    if config.ignored:
        evidence['config_ignored'] = config.ignored[:20]
    return evidence


# ---------------------------------------------------------------------------------------------
# finding the instances

def instances(ctx, preset_paths=None):
    """(instances, evidence) of the host: processes, router children, listed preset sections.
    Built once per run (the three detections and the fix ask the same question)."""
    key = ('llama-instances', tuple(preset_paths or ()))
    return ctx.shared(key, lambda: _instances(ctx, preset_paths or ()))


def _instances(ctx, preset_paths):
    running, problems = processes(ctx)
    found, routers, children = [], {}, {}
    for process in running:
        inst = process_instance(ctx, process)
        if inst is None:
            continue
        if _is_router(inst):
            routers[process.pid] = inst
        else:
            found.append(inst)
    for inst in found:
        parent = _router_parent(ctx, inst.process, routers)
        if parent is not None:
            alias = _child_alias(inst.server.argv)
            inst.router = {'pid': parent.process.pid, 'model': alias}
            children[(parent.process.pid, alias)] = inst
    for pid in sorted(routers):
        found.extend(_router_instances(ctx, routers[pid], children))
    for path in preset_paths:
        found.extend(_listed_preset_instances(ctx, path))
    evidence = process_table_evidence(running, problems)
    if routers:
        evidence['routers'] = sorted(routers)
    return found, evidence


def process_instance(ctx, process):
    """The Instance of one running process, or None for a `llama` that is not a llama.cpp server."""
    proc_dir = os.path.join(ctx.proc_root, str(process.pid))
    build = llama_build.server_build(ctx, process)
    start = option_start(process.argv)
    view = llama_files.FileView(ctx, root=os.path.join(proc_dir, 'root'), cwd=_readlink(os.path.join(proc_dir, 'cwd')))
    server = llama_resolution.Server(process.argv, process.environ(), view, start=start, uid=_real_uid(proc_dir),
                                     started=_start_time(ctx, proc_dir), label='pid %d' % process.pid)
    inst = Instance('process', describe_process(process), server, build, process=process)
    if start == 2:
        # `llama serve`: a build without the unified binary (b9247 and older) has no such program
        inst.rule_sets = [r for r in inst.rule_sets if r['unified_binary']]
        if not inst.rule_sets:
            return None
    if build.number is not None and build.number < llama_rules.OLDEST_READ:
        inst.notes.append('b%d is older than b%d, the oldest build whose rules were read: judged by b%d\'s'
                          % (build.number, llama_rules.OLDEST_READ, llama_rules.OLDEST_READ))
    return inst


def _is_router(inst):
    return any(llama_resolution.is_router(inst.config(rules)) for rules in inst.rule_sets)


def _router_parent(ctx, process, routers):
    if 'LLAMA_SERVER_ROUTER_PORT' not in (process.environ() or {}):
        return None
    stat = hostio.read_optional_text(os.path.join(ctx.proc_root, str(process.pid), 'stat'))
    fields = stat.rsplit(')', 1)[-1].split() if stat else []
    ppid = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return routers.get(ppid)


def _child_alias(argv):
    # update_args sets --alias to the model's name (server-models.cpp l.525); the last one is the router's
    for index in range(len(argv) - 2, -1, -1):
        if argv[index] in ('-a', '--alias'):
            return argv[index + 1]
    return None


def _router_instances(ctx, router, running_children):
    """One instance per model of a router: its preset's sections and its cache / --models-dir."""
    rules = router.rule_sets[-1]
    config = router.config(rules)
    preset_value, preset_where, _s = config.value(llama_args.MODELS_PRESET)
    models_dir = config.value(llama_args.MODELS_DIR)[0]
    router_port = config.value(llama_args.PORT)[0]
    bin_path = llama_build.binary_of(ctx, router.process)[0] or router.server.argv[0]
    unified = router.server.start == 2
    found, text = [], None
    pid = router.process.pid
    if preset_value:
        try:
            text = router.server.view.read_text(preset_value)
            if text is None:
                raise hostio.ReadProblem(preset_value, 'does not exist', 'missing')
        except hostio.ReadProblem as problem:
            return [instance('router pid %d preset %s' % (pid, preset_value), 'error',
                             'Router pid %d: its preset %s (%s) %s; the router cannot have read it like this.'
                             % (pid, preset_value, preset_where, problem.reason),
                             dict(router.evidence(), file=preset_value))]
        try:
            children = llama_router.router_children(router.server.argv, router.server.start, router.server.environ,
                                                    text, preset_value, bin_path, unified, router_port)
        except (llama_presets.IniError, llama_args.ValueRefused) as exc:
            return [instance('router pid %d preset %s' % (pid, preset_value), 'error',
                             'Router pid %d: its preset %s: %s; the router would not start with it (it changed '
                             'after the router started?).' % (pid, preset_value, exc),
                             dict(router.evidence(), file=preset_value))]
        changed = router.server.view.mtime(preset_value)
        for child in children:
            if (pid, child.name) in running_children:
                running_children[(pid, child.name)].router.update(preset=preset_value, section=child.name)
                continue
            inst = _child_instance(router, child, 'router pid %d model [%s] (%s)' % (pid, child.name, preset_value))
            inst.section = child.name
            inst.render = (bin_path, unified, router_port, False)
            if router.server.started is not None and changed is not None and changed > router.server.started:
                inst.notes.append('%s changed after the router started: it runs the preset it read then' % preset_value)
            found.append(inst)
    if not preset_value or models_dir:
        try:
            child = llama_router.router_default_child(router.server.argv, router.server.start, router.server.environ,
                                                      bin_path, unified, text, preset_value, router_port)
        except (llama_presets.IniError, llama_args.ValueRefused) as exc:
            return found + [instance('router pid %d' % pid, 'error', 'Router pid %d: %s.' % (pid, exc),
                                     router.evidence())]
        inst = _child_instance(router, child, 'router pid %d, models from its cache or --models-dir' % pid)
        inst.render = (bin_path, unified, router_port, True)
        found.append(inst)
    return found


def _child_instance(router, child, name):
    server = llama_resolution.Server(child.argv, child.environ, router.server.view, start=router.server.start,
                                     uid=router.server.uid, started=router.server.started, label=name, sources=child.sources)
    inst = Instance('child', name, server, router.build, process=router.process, preset_path=child.preset_path)
    inst.rule_sets = router.rule_sets
    inst.router = {'pid': router.process.pid, 'model': child.name}
    inst.router_instance = router
    return inst


def render_child(inst, router_argv, router_environ, view):
    """A router's child (llama/router.Child) as the router would start it with this command line and
    environment, reading its preset through ``view`` (llama_server_fix proves its changes with it)."""
    bin_path, unified, router_port, default = inst.render
    router = inst.router_instance
    text = view.read_text(inst.preset_path) if inst.preset_path else None
    if default:
        return llama_router.router_default_child(router_argv, router.server.start, router_environ, bin_path, unified,
                                                 text, inst.preset_path, router_port)
    children = llama_router.router_children(router_argv, router.server.start, router_environ, text or '',
                                            inst.preset_path, bin_path, unified, router_port)
    return [child for child in children if child.name == inst.section][0]


def _listed_preset_instances(ctx, path):
    """A preset file named in the settings: each section as a router with no arguments would start it."""
    view = llama_files.FileView(ctx)
    try:
        text = view.read_text(path)
        if text is None:
            raise hostio.ReadProblem(path, 'does not exist', 'missing')
    except hostio.ReadProblem as problem:
        status = 'unknown' if problem.kind == 'missing' else 'error'
        return [instance('preset %s' % path, status, 'Preset file %s %s.' % (path, problem.reason), {'file': path})]
    try:
        children = llama_router.router_children(None, 1, {}, text, path, 'llama-server', False)
    except (llama_presets.IniError, llama_args.ValueRefused) as exc:
        return [instance('preset %s' % path, 'error', 'Preset file %s: %s; a router would not start with it.'
                         % (path, exc), {'file': path})]
    build = llama_build.Build(None, 'no running router uses this preset')
    found = []
    for child in children:
        server = llama_resolution.Server(child.argv, {}, view, label=child.name, sources=child.sources)
        inst = Instance('preset', 'preset %s [%s]' % (path, child.name), server, build, section=child.name,
                        preset_path=path)
        inst.notes.append('no running router uses this preset: its command line and environment are not known; '
                          'the user-level config.ini is not read')
        found.append(inst)
    return found


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _real_uid(proc_dir):
    try:
        status = hostio.read_optional_text(os.path.join(proc_dir, 'status'))
    except hostio.ReadProblem:
        return None
    match = re.search(r'^Uid:\s+([0-9]+)', status or '', re.M)
    return int(match.group(1)) if match else None


def _start_time(ctx, proc_dir):
    """When the process started (epoch seconds): /proc/PID/stat starttime over /proc/stat btime."""
    try:
        stat = hostio.read_optional_text(os.path.join(proc_dir, 'stat'))
        boot = hostio.read_optional_text(os.path.join(ctx.proc_root, 'stat'))
    except hostio.ReadProblem:
        return None
    fields = stat.rsplit(')', 1)[-1].split() if stat else []
    match = re.search(r'^btime\s+([0-9]+)', boot or '', re.M)
    if len(fields) < 20 or not fields[19].isdigit() or not match:
        return None
    return int(match.group(1)) + int(fields[19]) / float(os.sysconf('SC_CLK_TCK'))


# ---------------------------------------------------------------------------------------------
# what a detection asks of a running server

def describe_process(process):
    return '%s pid %d' % ('llama serve' if option_start(process.argv) == 2 else 'llama-server', process.pid)


def supervisor(ctx, process):
    """How a crash of ``process`` would be handled, as evidence.

    Returns a dict: unit, scope, restart, crash_restarted (True/False/None) and,
    when it could not be told, a reason.
    """
    unit, scope = hostio.systemd_unit_from_cgroup(process.cgroup_lines())
    if unit is None:
        return {'unit': None, 'restart': None, 'crash_restarted': False,
                'reason': 'not started by a systemd service: nothing restarts it after a crash'}
    result = {'unit': unit, 'scope': scope, 'restart': None, 'crash_restarted': None}
    systemctl = ctx.which('systemctl')
    if not systemctl:
        result['reason'] = 'systemctl not found; cannot read Restart= of %s' % unit
        return result
    try:
        props = hostio.systemd_show(ctx.run_command, systemctl, unit,
                                    ['Restart', 'RestartUSec', 'NRestarts', 'FragmentPath', 'DropInPaths', 'SourcePath'],
                                    scope=scope)
    except hostio.ReadProblem as problem:
        result['reason'] = problem.reason
        return result
    restart = props.get('Restart') or None
    result.update({
        'restart': restart,
        'crash_restarted': restart in hostio.RESTARTS_ON_CRASH if restart else None,
        'restart_sec': props.get('RestartUSec'),
        'n_restarts': as_int(props.get('NRestarts')),
        'fragment_path': props.get('FragmentPath') or None,
        'source_path': props.get('SourcePath') or None,
        'drop_ins': (props.get('DropInPaths') or '').split() or [],
    })
    return result


def endpoint(config):
    """(base_url, None) for reaching the server from its own host, or (None, reason)."""
    host, _where, _s = config.value(llama_args.HOST)
    port, _where, _s = config.value(llama_args.PORT)
    hosts = [h.strip() for h in llama_args.parse_csv_row(host) if h.strip()] or ['127.0.0.1']
    host = hosts[0]
    if host in ('0.0.0.0', '::', ''):
        host = '127.0.0.1'
    if host.endswith('.sock'):
        return None, 'the server listens on a unix socket (%s); probes use loopback HTTP' % host
    if ':' in host and not host.startswith('['):
        host = '[%s]' % host
    return 'http://%s:%d' % (host, port), None


def api_key(config, view):
    """The first API key the server accepts, or None. Never put it in evidence."""
    for setting in config.all(llama_args.API_KEY):
        for key in llama_args.parse_csv_row(setting.value):
            if key:
                return key
    path = config.value(llama_args.API_KEY_FILE)[0]
    if path:
        try:
            for line in (view.read_text(path) or '').splitlines():
                line = line.strip()
                if line and not line.startswith('#'):
                    return line
        except hostio.ReadProblem:
            return None
    return None


def probe_target(inst, config):
    """(base_url, api_key, reason): where a probe can reach this instance."""
    if inst.kind != 'process':
        return None, None, 'not a running server (a router\'s model as its preset describes it)'
    base, reason = endpoint(config)
    return base, (api_key(config, inst.server.view) if base else None), reason


# ASCII only and bounded: int() would also take '٣', '６' and 'nan'.
_INT_RE = re.compile(r'^[-+]?[0-9]{1,18}$')


def as_int(value):
    text = str(value).strip() if value is not None else ''
    return int(text) if _INT_RE.match(text) else None


_SECRET_FLAGS = re.compile(r'^(--api-key|--api_key|--hf-token|--hf_token|-hft)(=.*)?$')


def redact_argv(argv):
    """The command line as evidence, with secrets replaced."""
    out, hide_next = [], False
    for arg in argv:
        if hide_next:
            out.append('<redacted>')
            hide_next = False
            continue
        match = _SECRET_FLAGS.match(arg)
        if match:
            if match.group(2):
                out.append(match.group(1) + '=<redacted>')
            else:
                out.append(arg)
                hide_next = True
            continue
        out.append(arg)
    return out
