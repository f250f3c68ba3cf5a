# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Router mode (tools/server/server-models.cpp): one child per --models-preset section.

Each section, over the [*] section, under the router's own command line (l.594-609, 711-748),
rendered as the child's command line (common/preset.cpp to_args l.37-79; update_args l.520-538)
and started with the router's environment (l.1193-1195). A child is resolved like any other
server (llama/resolution.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.llama import options as table
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.args import (
    BY_NAME, DEFAULTS, FALSEY, PORT, SECRETS, ValueRefused, opt, shown_token)
from ansible_collections.homelab.postmortem.plugins.module_utils.llama.presets import Preset, load_presets


# unset_reserved_args (server-models.cpp l.478-494): never passed from the router to a child
RESERVED = ('LLAMA_ARG_SSL_KEY_FILE', 'LLAMA_ARG_SSL_CERT_FILE', 'LLAMA_API_KEY', 'LLAMA_ARG_API_KEY_FILE',
            'LLAMA_ARG_MODELS_DIR', 'LLAMA_ARG_MODELS_MAX', 'LLAMA_ARG_MODELS_PRESET', 'LLAMA_ARG_MODELS_AUTOLOAD')
RESERVED_MODEL = ('LLAMA_ARG_MODEL', 'LLAMA_ARG_MMPROJ', 'LLAMA_ARG_ALIAS', 'LLAMA_ARG_HF_REPO')
CHILD_ADDR = '127.0.0.1'


def router_base_preset(argv, start):
    """common_params_to_map over the router's command line (arg.cpp l.1190-1250): one value per
    option, the last given; a flag is "1", its negative "0". Raises ValueRefused where upstream
    throws (the router would not have started)."""
    base = Preset('default')
    index = start
    while index < len(argv):
        token = argv[index]
        name = token.replace('_', '-') if token.startswith('--') else token
        if name not in BY_NAME:
            raise ValueRefused('argv[%d] %r is not an option llama-server knows (b%d)' % (index, shown_token(token), table.BUILD))
        option, positive = BY_NAME[name]
        where = 'router argv[%d] %s' % (index, token)
        if option.arity == 0:
            base.set(option, '1' if positive else '0', where, ('router-argv', index))
            index += 1
            continue
        if option.arity == 2 or index + 1 >= len(argv):
            raise ValueRefused('%s: takes two values or has none' % where)
        base.set(option, argv[index + 1], '%s %s' % (where, '<redacted>' if option in SECRETS else argv[index + 1]),
                 ('router-argv', index))
        index += 2
    for env in RESERVED + RESERVED_MODEL + ('LLAMA_ARG_LOG_FILE',):
        base.unset(env)
    return base


def to_args(preset):
    """common_preset::to_args (common/preset.cpp l.37-79): [(token, (where, origin))] in common_arg
    order; a flag whose value is falsey becomes its last negative name or is left out."""
    out = []
    for option, (value, where, origin) in preset.ordered():
        source = (where, origin)
        if option.arity == 0:
            if value in FALSEY:
                if option.neg:
                    out.append((option.neg[-1], source))
                continue
            out.append((option.args[-1], source))
            continue
        out.append((option.args[-1], source))
        out.append((value, source))
    return out


class Child(object):
    """A router's child for one model: its command line and environment as the router starts it,
    and where each token came from."""

    def __init__(self, name, argv, sources, environ, preset_path):
        self.name = name
        self.argv = argv
        self.sources = sources
        self.environ = environ
        self.preset_path = preset_path


def router_children(router_argv, router_start, router_environ, preset_text, preset_path, bin_path, unified,
                    router_port=None):
    """[Child] for every section of a router's preset (load_models, server-models.cpp l.697-748);
    raises IniError or ValueRefused where the router itself would not have started."""
    global_preset, presets, _ignored = load_presets(preset_text, preset_path, ignore_unknown=False)
    base = router_base_preset(router_argv, router_start) if router_argv is not None else Preset('default')
    children = []
    for name in sorted(presets):
        preset = global_preset.copy(name)
        preset.merge(presets[name])
        preset.merge(base)
        children.append(_render_child(name, preset, router_environ, preset_path, bin_path, unified, router_port))
    return children


def router_default_child(router_argv, router_start, router_environ, bin_path, unified, preset_text=None, preset_path=None,
                         router_port=None):
    """The child of a model the router finds in its cache or --models-dir: the [*] section (when
    a preset has one) and the router's command line, nothing else."""
    base = router_base_preset(router_argv, router_start)
    preset = Preset('(cache or --models-dir)')
    if preset_text is not None:
        preset, _presets, _ignored = load_presets(preset_text, preset_path, ignore_unknown=False)
        preset = preset.copy('(cache or --models-dir)')
    preset.merge(base)
    return _render_child(preset.name, preset, router_environ, preset_path, bin_path, unified, router_port)


def _render_child(name, preset, router_environ, preset_path, bin_path, unified, router_port):
    preset = preset.copy()
    for env in RESERVED:
        preset.unset(env)
    # update_args (server-models.cpp l.520-538): the router sets host, port, alias and log colours
    for key, value in (('--host', CHILD_ADDR), ('--port', '0'), ('--alias', name), ('--log-colors', 'off')):
        preset.set(opt(key), value, 'set by the router', ('router', None))
    tokens = to_args(preset)
    argv = [bin_path] + (['serve'] if unified else []) + [t for t, _w in tokens]
    sources = [None] * (2 if unified else 1) + [source for _t, source in tokens]
    environ = dict(router_environ or {})
    environ['LLAMA_SERVER_ROUTER_PORT'] = str(router_port if router_port is not None else DEFAULTS[PORT])
    if unified:
        environ['LLAMA_APP_CMD'] = 'serve'
    return Child(name, argv, sources, environ, preset_path)
