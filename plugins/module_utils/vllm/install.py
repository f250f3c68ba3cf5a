# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running vLLM processes, what they were started with, and the vLLM version each one runs.

Read from /proc only: the command line (``vllm serve``, ``vllm preload``,
``python -m vllm.entrypoints.openai.api_server``, ``python -m
vllm.model_executor.model_loader.weight_cache.daemon``), a ``--config`` YAML file of flat
``key: value`` lines (the form vLLM's FlexibleArgumentParser reads), and the vLLM version from
the ``vllm-<version>.dist-info`` directory next to the process's own Python. Nothing is imported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

from ansible_collections.homelab.postmortem.plugins.module_utils import hostio

DAEMON_MODULE = 'vllm.model_executor.model_loader.weight_cache.daemon'
SERVER_MODULES = ('vllm.entrypoints.openai.api_server', 'vllm.entrypoints.api_server')
CLI_MODULE = 'vllm.entrypoints.cli.main'
SHORT = {'-tp': '--tensor-parallel-size', '-pp': '--pipeline-parallel-size', '-q': '--quantization',
         '-O': '--compilation-config', '-dp': '--data-parallel-size', '-ep': '--enable-expert-parallel'}
# argparse options that take several values after one flag.
MULTI = ('--lora-modules',)
_DIST_INFO = re.compile(r'^vllm-([0-9][0-9A-Za-z.+_-]*)\.dist-info$')
MAX_CONFIG_BYTES = 256 * 1024


class VllmProcess(object):
    """One vLLM process: ``role`` is 'engine' (serves a model) or 'daemon' (weight cache)."""

    def __init__(self, process, role, options, positional):
        self.process = process
        self.pid = process.pid
        self.role = role
        self.options = options          # '--long-name' -> [values]
        self.positional = positional
        self.config_problem = None

    def value(self, name, default=None):
        values = self.options.get(name)
        return values[-1] if values else default

    @property
    def model(self):
        return self.value('--model') or (self.positional[0] if self.positional else None)


def _interpreter_end(argv):
    """Index after the interpreter and its own options."""
    index = 1
    while index < len(argv) and argv[index].startswith('-') and argv[index] not in ('-m', '-c'):
        index += 1
    return index


def classify(argv):
    """(role, arguments after the program) or (None, None) for anything that is not vLLM."""
    if not argv:
        return None, None
    base = os.path.basename(argv[0])
    rest = None
    if base.startswith('python'):
        index = _interpreter_end(argv)
        if index + 1 < len(argv) and argv[index] == '-m':
            module, rest = argv[index + 1], argv[index + 2:]
            if module == DAEMON_MODULE:
                return 'daemon', rest
            if module in SERVER_MODULES:
                return 'engine', rest
            if module != CLI_MODULE:
                return None, None
        elif index < len(argv) and os.path.basename(argv[index]) == 'vllm':
            rest = argv[index + 1:]
        else:
            return None, None
    elif base == 'vllm':
        rest = argv[1:]
    else:
        return None, None
    if rest and rest[0] == 'serve':
        return 'engine', rest[1:]
    if rest and rest[0] == 'preload':
        return 'daemon', rest[1:]
    return None, None


def parse_args(args):
    """({'--long': [values]}, positional) from an argparse-style command line."""
    options, positional = {}, []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith('-') and arg != '-':
            name, sep, inline = arg.partition('=')
            name = SHORT.get(name, name).replace('_', '-')
            if sep:
                options.setdefault(name, []).append(inline)
                index += 1
                continue
            values = []
            index += 1
            while index < len(args) and not (args[index].startswith('-') and args[index] != '-'):
                values.append(args[index])
                index += 1
                if name not in MULTI:
                    break
            options.setdefault(name, []).extend(values or ['true'])
            continue
        positional.append(arg)
        index += 1
    return options, positional


def read_flat_yaml(path):
    """{key: value or [values]} from a YAML file of ``key: value`` lines and ``- item`` lists."""
    text = hostio.read_text(path, limit=MAX_CONFIG_BYTES)
    result, current = {}, None
    for raw in text.splitlines():
        line = raw.split(' #', 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        stripped = line.strip()
        if stripped.startswith('- ') and current is not None:
            result.setdefault(current, [])
            if isinstance(result[current], list):
                result[current].append(_unquote(stripped[2:].strip()))
            continue
        if ':' in stripped and not line.startswith((' ', '\t')):
            key, value = stripped.split(':', 1)
            current = key.strip().replace('_', '-')
            value = value.strip()
            result[current] = _unquote(value) if value else []
    return result


def _unquote(value):
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
        return value[1:-1]
    return value


def processes(ctx):
    """(VllmProcess list, problems), read once per run: both vLLM detections use them."""
    return ctx.shared('vllm-processes', lambda: _processes(ctx))


def _processes(ctx):
    found, problems = ctx.processes('vllm', lambda name: name.startswith('python') or name == 'vllm')
    result = []
    for process in found:
        role, rest = classify(process.argv)
        if role is None:
            continue
        # `vllm serve MODEL [options]`: the model comes first, so a flag before it cannot swallow it.
        head = [rest[0]] if rest and not rest[0].startswith('-') else []
        options, positional = parse_args(rest[len(head):])
        entry = VllmProcess(process, role, options, head + positional)
        config = entry.value('--config')
        if config:
            _merge_config(ctx, entry, config)
        result.append(entry)
    return result, problems


def _merge_config(ctx, entry, path):
    """Values from --config, under those given on the command line (vLLM's precedence)."""
    if not os.path.isabs(path):
        try:
            path = os.path.join(os.readlink(os.path.join(ctx.proc_root, str(entry.pid), 'cwd')), path)
        except OSError:
            entry.config_problem = 'config file %s is relative and the process directory is unreadable' % path
            return
    try:
        values = read_flat_yaml(ctx.path(path))
    except hostio.ReadProblem as problem:
        entry.config_problem = 'config file %s %s' % (path, problem.reason)
        return
    for key, value in values.items():
        name = '--' + key
        if name == '--model' and entry.positional:
            continue
        if name not in entry.options:
            entry.options[name] = value if isinstance(value, list) else [value]


def python_prefixes(process):
    """Where the process's own Python (and so its vLLM) lives, most specific first."""
    prefixes = []
    argv0 = process.argv[0] if process.argv else ''
    if os.path.isabs(argv0):
        prefixes.append(os.path.dirname(os.path.dirname(argv0)))
    environ = process.environ() or {}
    if environ.get('VIRTUAL_ENV'):
        prefixes.append(environ['VIRTUAL_ENV'])
    try:
        exe = os.readlink(os.path.join(process.proc_dir, 'exe'))
        prefixes.append(os.path.dirname(os.path.dirname(exe)))
    except OSError:
        pass
    return [p for i, p in enumerate(prefixes) if p and p not in prefixes[:i]]


def version_in(ctx, prefix):
    """(version text, dist-info path) of vLLM installed under a Python prefix, or (None, None)."""
    patterns = ('lib/python3*/site-packages', 'lib/python3*/dist-packages', 'local/lib/python3*/dist-packages',
                'lib/python3/dist-packages')
    for pattern in patterns:
        for directory in sorted(glob.glob(os.path.join(ctx.path(prefix), pattern))):
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            for name in sorted(names):
                match = _DIST_INFO.match(name)
                if match:
                    return match.group(1), os.path.join(directory, name)
    return None, None


def version_of(ctx, process):
    """(version, dist-info path) of the vLLM next to ``process``'s Python; looked up once per run."""
    return ctx.shared(('vllm-version', process.pid), lambda: _version_of(ctx, process))


def _version_of(ctx, process):
    for prefix in python_prefixes(process):
        version, where = version_in(ctx, prefix)
        if version:
            return version, where
    return None, None
