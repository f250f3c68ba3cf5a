# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan the safe llama-server flags for a systemd unit or a Quadlet .container file.

- Our own units (under /etc/systemd/system) are edited in place.
- Vendor units (anywhere else) get a drop-in under /etc/systemd/system/<unit>.d/,
  where an ExecStart= override needs the empty reset line first.
- Quadlet .container files are edited in place: Exec= holds llama-server's
  arguments, [Service] Restart= the restart policy.
The plan is computed from the files without our own drop-in, so a second run
plans exactly what is already there: nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, systemd_unit
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import server as llama_server
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

DROPIN_NAME = '50-homelab-postmortem.conf'
OWN_UNIT_DIR = '/etc/systemd/system/'
DROPIN_HEADER = '# Managed by homelab.postmortem.llama_server: safe llama-server flags and restart policy.\n'


class Fixes(object):
    def __init__(self, cache_ram_off=False, restart_on_failure=False, disable_sleep=False, no_cache_prompt=False):
        self.cache_ram_off = cache_ram_off
        self.restart_on_failure = restart_on_failure
        self.disable_sleep = disable_sleep
        self.no_cache_prompt = no_cache_prompt

    def edit_args(self, args, start):
        if self.cache_ram_off:
            args = systemd_unit.set_option(args, llama_server.CACHE_RAM.names, '0', start)
        if self.no_cache_prompt:
            args = caching_off(args, start)
        if self.disable_sleep:
            args = systemd_unit.set_option(args, llama_server.SLEEP_IDLE_SECONDS.names, '-1', start)
        return args

    def wants_restart(self, current):
        return self.restart_on_failure and (current or 'no') not in hostio.RESTARTS_ON_CRASH


def caching_off(args, start):
    """Turn every --cache-prompt into --no-cache-prompt; append it when neither flag is there."""
    off = llama_server.CACHE_PROMPT_OFF
    head, tail = list(args[:start]), list(args[start:])
    tail = [off if llama_server.last_flag(['', arg], llama_server.CACHE_PROMPT.names, ()) else arg for arg in tail]
    if llama_server.last_flag([''] + tail, (), (off,)) is None:
        tail.append(off)
    return head + tail


def dropin_path(unit):
    return os.path.join(OWN_UNIT_DIR, unit + '.d', DROPIN_NAME)


def _split(value, where, exec_prefixes=True):
    """(prefix, argv); Quadlet's Exec= has no ExecStart prefixes (-, @, +...)."""
    try:
        if exec_prefixes:
            return systemd_unit.split_command(value)
        return '', systemd_unit.split_words(value)
    except ValueError as exc:
        raise DetectionError('%s: cannot parse the command line %r: %s' % (where, value, exc))


def plan(unit, fragment_path, source_path, dropin_paths, fixes, read=hostio.read_text):
    """[(path, before or None, after)] for the files to write, and the mode used."""
    if source_path and source_path.endswith('.container'):
        return _plan_quadlet(source_path, fixes, read), 'quadlet'
    if not fragment_path:
        raise DetectionError('%s has no unit file (FragmentPath is empty)' % unit)
    ours = dropin_path(unit)
    files = [(fragment_path, read(fragment_path))] + [(p, read(p)) for p in dropin_paths or [] if p != ours]
    parsed = [(path, systemd_unit.UnitFile(text)) for path, text in files]

    execs, restart = [], None
    for path, parsed_file in parsed:
        for entry in parsed_file.entries:
            if entry.section == 'Service' and entry.key == 'ExecStart':
                execs = [] if entry.value == '' else execs + [(path, entry)]
            if entry.section == 'Service' and entry.key == 'Restart':
                restart = entry.value
    commands = []
    for path, entry in execs:
        prefix, argv = _split(entry.value, path)
        commands.append((path, entry, prefix, argv, fixes.edit_args(argv, 1) if argv and llama_processes.is_llama_server(os.path.basename(argv[0])) else argv))
    if not any(llama_processes.is_llama_server(os.path.basename(c[3][0])) for c in commands if c[3]):
        raise DetectionError('%s does not start llama-server directly (ExecStart: %s); change it by hand'
                             % (unit, '; '.join(e.value for _p, e in execs) or 'none'))
    argv_changed = any(before != after for _p, _e, _pre, before, after in commands)
    restart_needed = fixes.wants_restart(restart)

    own = fragment_path.startswith(OWN_UNIT_DIR) and all(path == fragment_path for path, _e in execs)
    if own:
        text = files[0][1]
        ending = systemd_unit.line_ending(text)
        lines = systemd_unit.UnitFile(text).lines
        # Replace from the bottom so earlier line indexes stay valid.
        for path, entry, prefix, before, after in sorted(commands, key=lambda c: -c[1].first):
            if before != after:
                lines = systemd_unit.replace_entry(lines, entry, 'ExecStart=' + systemd_unit.join_command(prefix, after), ending)
        new_text = ''.join(lines)
        if restart_needed:
            new_text = systemd_unit.set_key(new_text, 'Service', 'Restart', 'on-failure')
        return ([(fragment_path, text, new_text)] if new_text != text else []), 'in_place'

    body = []
    if argv_changed:
        body.append('ExecStart=')
        body += ['ExecStart=' + systemd_unit.join_command(prefix, after) for _p, _e, prefix, _b, after in commands]
    if restart_needed:
        body.append('Restart=on-failure')
    try:
        current = read(ours)
    except hostio.ReadProblem as problem:
        if problem.kind != 'missing':
            raise
        current = None
    if not body:
        return [], 'drop_in'
    desired = DROPIN_HEADER + '[Service]\n' + ''.join(line + '\n' for line in body)
    return ([(ours, current, desired)] if desired != current else []), 'drop_in'


def _plan_quadlet(path, fixes, read):
    text = read(path)
    parsed = systemd_unit.UnitFile(text)
    new_text = text
    entry = parsed.get('Container', 'Exec')
    if fixes.cache_ram_off or fixes.disable_sleep:
        _prefix, args = _split(entry.value if entry else '', path, exec_prefixes=False)
        edited = fixes.edit_args(args, 0)
        if edited != args:
            new_text = systemd_unit.set_key(new_text, 'Container', 'Exec', systemd_unit.join_command('', edited))
    current = systemd_unit.UnitFile(new_text).get('Service', 'Restart')
    if fixes.wants_restart(current.value if current else None):
        new_text = systemd_unit.set_key(new_text, 'Service', 'Restart', 'on-failure')
    return [(path, text, new_text)] if new_text != text else []
