# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan llama-server's settings in a systemd unit or a Quadlet .container file.

- Our own units (under /etc/systemd/system) are edited in place.
- Vendor units (anywhere else) get a drop-in under /etc/systemd/system/<unit>.d/,
  where an ExecStart= override needs the empty reset line first.
- Quadlet .container files are edited in place: Exec= holds llama-server's
  arguments, [Service] Restart= the restart policy.
The plan is computed from the files without our own drop-in, so a second run
plans exactly what is already there: nothing. Options are set token by token as
llama-server reads its command line (llama/args.py), and an environment
variable is changed on the Environment= line that sets it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio, systemd_unit
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import args as llama_args
from ansible_collections.homelab.postmortem.plugins.module_utils.llama import processes as llama_processes
from ansible_collections.homelab.postmortem.plugins.module_utils.finding import DetectionError

DROPIN_NAME = '50-homelab-postmortem.conf'
OWN_UNIT_DIR = '/etc/systemd/system/'
DROPIN_HEADER = '# Managed by homelab.postmortem.llama_server: safe llama-server flags and restart policy.\n'


class UnitEdits(object):
    """What one unit needs: options on llama-server's command line [(Opt, target)], environment
    variables {name: text}, and Restart=on-failure."""

    def __init__(self, argv=(), env=None, restart=False):
        self.argv = list(argv)
        self.env = dict(env or {})
        self.restart = restart

    def edit_args(self, args, start, append_only=False):
        for option, target in self.argv:
            args = llama_args.set_in_argv(args, start, option, target, append_only)
        return args

    def wants_restart(self, current):
        return self.restart and (current or 'no') not in hostio.RESTARTS_ON_CRASH


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


def _server_start(argv):
    return llama_processes.option_start([os.path.basename(argv[0])] + argv[1:]) if argv else None


def plan(unit, fragment_path, source_path, dropin_paths, edits, read=hostio.read_text, process_argv=None):
    """([(path, before or None, after)], mode, append_only): the files to write. ``append_only`` is True
    when the unit's command line is not the process's own token for token ($VARIABLE expansions):
    options are then appended, which the last-one-wins rule makes effective."""
    if source_path and source_path.endswith('.container'):
        return _plan_quadlet(source_path, edits, read), 'quadlet', False
    if not fragment_path:
        raise DetectionError('%s has no unit file (FragmentPath is empty)' % unit)
    ours = dropin_path(unit)
    files = [(fragment_path, read(fragment_path))] + [(p, read(p)) for p in dropin_paths or [] if p != ours]
    parsed = [(path, systemd_unit.UnitFile(text)) for path, text in files]

    execs, commands, restart, append_only = _commands(unit, parsed, edits, process_argv)
    restart_needed = edits.wants_restart(restart)
    env_lines = _env_edits(unit, parsed, edits.env, read)
    own = fragment_path.startswith(OWN_UNIT_DIR) and all(path == fragment_path for path, _e in execs) and all(
        path == fragment_path for path, _entry, _line in env_lines)
    if own:
        return _plan_in_place(fragment_path, files[0][1], commands, env_lines, restart_needed), 'in_place', append_only
    return _plan_drop_in(unit, ours, dropin_paths, commands, env_lines, restart_needed, read), 'drop_in', append_only


def _commands(unit, parsed, edits, process_argv):
    """The ExecStart= lines in effect (an empty one resets the list, as systemd does), each as [path,
    entry, prefix, argv, llama-server start, argv after the edits]; the Restart= in effect; append_only."""
    execs, restart = [], None
    for path, parsed_file in parsed:
        for entry in parsed_file.entries:
            if entry.section == 'Service' and entry.key == 'ExecStart':
                execs = [] if entry.value == '' else execs + [(path, entry)]
            if entry.section == 'Service' and entry.key == 'Restart':
                restart = entry.value
    commands, append_only = [], False
    for path, entry in execs:
        prefix, argv = _split(entry.value, path)
        start = _server_start(argv)
        if start and process_argv is not None and argv[1:] != list(process_argv[1:]):
            append_only = True
        commands.append([path, entry, prefix, argv, start])
    if not any(c[4] for c in commands):
        raise DetectionError('%s does not start llama-server directly (ExecStart: %s); change it by hand'
                             % (unit, '; '.join(e.value for _p, e in execs) or 'none'))
    for command in commands:
        command.append(edits.edit_args(command[3], command[4], append_only) if command[4] else command[3])
    return execs, commands, restart, append_only


def _plan_in_place(fragment_path, text, commands, env_lines, restart_needed):
    """Our own unit file, edited where its lines are."""
    ending = systemd_unit.line_ending(text)
    lines = systemd_unit.UnitFile(text).lines
    replaced = [(entry, 'ExecStart=' + systemd_unit.join_command(prefix, after))
                for _p, entry, prefix, before, _s, after in commands if before != after]
    replaced += [(entry, line) for _p, entry, line in env_lines]
    # Replace from the bottom so earlier line indexes stay valid.
    for entry, line in sorted(replaced, key=lambda item: -item[0].first):
        lines = systemd_unit.replace_entry(lines, entry, line, ending)
    new_text = ''.join(lines)
    if restart_needed:
        new_text = systemd_unit.set_key(new_text, 'Service', 'Restart', 'on-failure')
    return [(fragment_path, text, new_text)] if new_text != text else []


def _plan_drop_in(unit, ours, dropin_paths, commands, env_lines, restart_needed, read):
    """A unit that is not ours: the change in our drop-in, which must be the last to apply."""
    body = []
    if any(c[3] != c[5] for c in commands):
        body.append('ExecStart=')
        body += ['ExecStart=' + systemd_unit.join_command(prefix, after) for _p, _e, prefix, _b, _s, after in commands]
    body += [line for _p, _entry, line in env_lines]
    if restart_needed:
        body.append('Restart=on-failure')
    try:
        current = read(ours)
    except hostio.ReadProblem as problem:
        if problem.kind != 'missing':
            raise
        current = None
    later = [p for p in dropin_paths or [] if os.path.basename(p) > DROPIN_NAME and os.path.dirname(p) == os.path.dirname(ours)]
    if body and later:
        raise DetectionError('%s: the drop-in %s comes after ours (%s) and could override it; change it there'
                             % (unit, later[0], DROPIN_NAME))
    if not body:
        return []
    desired = DROPIN_HEADER + '[Service]\n' + ''.join(line + '\n' for line in body)
    return [(ours, current, desired)] if desired != current else []


def _env_edits(unit, parsed, wanted, read):
    """[(path, entry, new line)] for the Environment= lines to rewrite; DetectionError for a variable the
    unit does not set itself (an EnvironmentFile=, the service manager's environment)."""
    if not wanted:
        return []
    setters, files = {}, []
    for path, parsed_file in parsed:
        for entry in parsed_file.entries:
            if entry.section != 'Service':
                continue
            if entry.key == 'Environment':
                if entry.value == '':
                    setters.clear()
                    continue
                try:
                    words = systemd_unit.split_words(entry.value)
                except ValueError as exc:
                    raise DetectionError('%s: cannot parse Environment=%s: %s' % (path, entry.value, exc))
                for word in words:
                    setters[word.split('=', 1)[0]] = (path, entry, words)
            elif entry.key == 'EnvironmentFile':
                files.append(entry.value)
    edits = []
    for name, value in sorted(wanted.items()):
        # systemd.exec(5): variables from EnvironmentFile= override Environment=
        for item in files:
            path = item.lstrip('-')
            try:
                text = read(path)
            except hostio.ReadProblem as problem:
                if item.startswith('-') and problem.kind == 'missing':
                    continue
                raise DetectionError('%s: EnvironmentFile=%s %s; %s cannot be placed' % (unit, item, problem.reason, name))
            if any(line.strip().startswith(name + '=') or line.strip().startswith('export %s=' % name)
                   for line in text.splitlines()):
                raise DetectionError('%s: %s is set in EnvironmentFile=%s; change it there' % (unit, name, path))
        if name not in setters:
            raise DetectionError('%s: %s is not set by an Environment= line of the unit (it comes from the service '
                                 'manager or a parent); change it where it is set' % (unit, name))
        path, entry, words = setters[name]
        words = ['%s=%s' % (name, value) if w.split('=', 1)[0] == name else w for w in words]
        edits.append((path, entry, 'Environment=' + ' '.join(systemd_unit.quote(w) for w in words)))
    return edits


def _plan_quadlet(path, edits, read):
    text = read(path)
    parsed = systemd_unit.UnitFile(text)
    new_text = text
    if edits.env:
        raise DetectionError('%s: %s comes from the container\'s environment; change it in the .container file by hand'
                             % (path, ', '.join(sorted(edits.env))))
    entry = parsed.get('Container', 'Exec')
    if edits.argv:
        _prefix, args = _split(entry.value if entry else '', path, exec_prefixes=False)
        edited = edits.edit_args(args, 0)
        if edited != args:
            new_text = systemd_unit.set_key(new_text, 'Container', 'Exec', systemd_unit.join_command('', edited))
    current = systemd_unit.UnitFile(new_text).get('Service', 'Restart')
    if edits.wants_restart(current.value if current else None):
        new_text = systemd_unit.set_key(new_text, 'Service', 'Restart', 'on-failure')
    return [(path, text, new_text)] if new_text != text else []
