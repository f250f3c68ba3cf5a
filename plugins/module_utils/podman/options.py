# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""podman's own options, read from its --help, and a podman command line parsed the way podman does.

Which options take a value and which are on/off flags is what decides how a recorded
``podman run`` splits (``--init image`` versus ``--name image``); guessing it refuses every
option that is new. So the spec comes from the podman on the host (cobra prints a value
option as ``--name type`` and a flag as ``--name`` alone), once per podman version.
Parsing follows spf13/pflag: ``--opt=value``, ``--opt value``, ``--flag``,
``--flag=false``, ``-x value``, ``-xvalue``, ``-x=value`` and grouped short flags
(``-dit``); options stop at the first argument that is not one (``podman run`` does not
intersperse), or after ``--``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils.errors import HostInputError

# cmd/podman/utils/alias.go (AliasFlags, podman v5.4.2): old names podman still accepts.
ALIASES = {
    '--dns-opt': '--dns-option', '--healthcheck-command': '--health-cmd',
    '--healthcheck-interval': '--health-interval', '--healthcheck-retries': '--health-retries',
    '--healthcheck-start-period': '--health-start-period', '--healthcheck-timeout': '--health-timeout',
    '--net': '--network', '--override-arch': '--arch', '--override-os': '--os', '--override-variant': '--variant',
}
# pflag's strconv.ParseBool.
TRUE_WORDS = ('1', 't', 'T', 'TRUE', 'true', 'True')
FALSE_WORDS = ('0', 'f', 'F', 'FALSE', 'false', 'False')

_HELP_LINE = re.compile(r'^\s+(?:-(?P<short>[A-Za-z0-9]), )?--(?P<long>[A-Za-z0-9][A-Za-z0-9_.-]*)'
                        r'(?P<rest>(?: \S+)?)(?:\s{2,}|\s*$)')


class OptionError(HostInputError):
    pass


class OptionSpec(object):
    """The options of one podman command: ``kind(name)`` is 'value', 'flag', 'optional' or None."""

    def __init__(self, kinds, shorts):
        self.kinds = kinds          # '--long' -> kind
        self.shorts = shorts        # '-x' -> '--long'

    def canonical(self, name):
        name = self.shorts.get(name, name)
        return ALIASES.get(name, name)

    def kind(self, name):
        return self.kinds.get(self.canonical(name))


def parse_help(text):
    """An OptionSpec from cobra's --help text (the Options: block and any flag lines)."""
    kinds, shorts = {}, {}
    for line in text.splitlines():
        match = _HELP_LINE.match(line)
        if not match:
            continue
        long_name = '--' + match.group('long')
        rest = match.group('rest').strip()
        if '[=' in rest or long_name.endswith(']'):
            kind = 'optional'   # cobra's NoOptDefVal: a value only after '='
        elif rest:
            kind = 'value'
        else:
            kind = 'flag'
        kinds[long_name] = kind
        if match.group('short'):
            shorts['-' + match.group('short')] = long_name
    if not kinds:
        raise OptionError('no options found in the --help text')
    return OptionSpec(kinds, shorts)


class Option(object):
    """One option as given: canonical long name, value (str; flags 'true'/'false') and the tokens."""

    def __init__(self, name, value, tokens, kind='value'):
        self.name = name
        self.value = value
        self.tokens = tokens
        self.kind = kind

    def canonical_tokens(self):
        """The option as one long-form token, the same to podman: --name=value, --flag, --flag=false."""
        if self.value is None:
            return [self.name]
        if self.kind == 'flag':
            return [self.name] if self.value == 'true' else [self.name + '=false']
        return [self.name + '=' + self.value]

    def __repr__(self):
        return 'Option(%s=%r)' % (self.name, self.value)


def _flag_value(name, text):
    if text is None:
        return 'true'
    if text in TRUE_WORDS:
        return 'true'
    if text in FALSE_WORDS:
        return 'false'
    raise OptionError('%s=%s: %s is an on/off flag and %r is not true or false' % (name, text, name, text))


def parse_options(argv, start, spec, what):
    """([Option], index of the first argument that is not an option)."""
    found = []
    index = start
    while index < len(argv):
        arg = argv[index]
        if arg == '--':
            return found, index + 1
        if not arg.startswith('-') or arg == '-':
            return found, index
        if arg.startswith('--'):
            name, sep, inline = arg.partition('=')
            canonical = spec.canonical(name)
            kind = spec.kind(name)
            if kind is None:
                raise OptionError('%s is not an option of %s' % (name, what))
            if kind == 'flag':
                found.append(Option(canonical, _flag_value(name, inline if sep else None), [arg], kind='flag'))
                index += 1
            elif sep or kind == 'optional':
                found.append(Option(canonical, inline if sep else None, [arg]))
                index += 1
            else:
                if index + 1 >= len(argv):
                    raise OptionError('%s has no value' % name)
                found.append(Option(canonical, argv[index + 1], [arg, argv[index + 1]]))
                index += 2
            continue
        # Short options, possibly grouped: each letter is a flag until one takes a value.
        letters = arg[1:]
        position = 0
        consumed = 1
        while position < len(letters):
            short = '-' + letters[position]
            long_name = spec.shorts.get(short)
            if long_name is None:
                raise OptionError('%s is not an option of %s' % (short, what))
            kind = spec.kinds[long_name]
            tail = letters[position + 1:]
            if kind == 'flag':
                if tail.startswith('='):
                    found.append(Option(long_name, _flag_value(short, tail[1:]), [short + tail], kind='flag'))
                    break
                found.append(Option(long_name, 'true', [short], kind='flag'))
                position += 1
                continue
            if tail:
                value = tail[1:] if tail.startswith('=') else tail
                found.append(Option(long_name, value, [short + tail]))
            elif kind == 'optional':
                found.append(Option(long_name, None, [short]))
            else:
                if index + 1 >= len(argv):
                    raise OptionError('%s has no value' % short)
                found.append(Option(long_name, argv[index + 1], [short, argv[index + 1]]))
                consumed = 2
            break
        index += consumed
    return found, index


class Command(object):
    """A parsed ``podman [global options] run|create [options] IMAGE [ARG...]``."""

    def __init__(self, global_options, subcommand, options, positional):
        self.global_options = global_options
        self.subcommand = subcommand
        self.options = options
        self.positional = positional

    def flag(self, name):
        values = [o.value for o in self.options if o.name == name]
        return bool(values) and values[-1] == 'true'


def parse_command(argv, global_spec, run_spec, version_text='this podman'):
    """Parse a recorded CreateCommand; OptionError says which argument could not be read and why."""
    global_options, index = parse_options(argv, 1, global_spec, 'podman %s (podman --help)' % version_text)
    words = argv[index:index + 2]
    if words[:1] in (['run'], ['create']):
        subcommand, index = words[0], index + 1
    elif words[:1] == ['container'] and words[1:2] in (['run'], ['create']):
        subcommand, index = words[1], index + 2
    else:
        raise OptionError('CreateCommand is not a podman run/create command line: %s' % ' '.join(argv[:8]))
    options, index = parse_options(argv, index, run_spec, 'podman %s %s (podman %s --help)'
                                   % (version_text, subcommand, subcommand))
    return Command(global_options, subcommand, options, argv[index:])


_SPEC_CACHE = {}


def specs_for(version_text, read_help):
    """(global spec, run spec) of a podman version, read once per version with ``read_help(args)``.

    ``read_help`` returns the --help text of ``podman <args> --help``.
    """
    if version_text not in _SPEC_CACHE:
        _SPEC_CACHE[version_text] = (parse_help(read_help([])), parse_help(read_help(['run'])))
    return _SPEC_CACHE[version_text]
