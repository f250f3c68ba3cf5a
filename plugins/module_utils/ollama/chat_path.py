# -*- coding: utf-8 -*-
# Copyright: (c) 2026, homelab.postmortem contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which chat path Ollama takes for a model: the one it renders itself, or llama-server's native one.

Upstream decides per request in ChatHandler (ollama/ollama server/routes.go @ v0.33.0-rc2 = fb3076099):

- l.2518-2600: a model with a remote host is proxied to it (cloud models); nothing runs here.
- l.2633-2637: scheduleRunner checks the completion capability (images.go l.543-583): a model without
  it (embedding-only, image generation) answers "does not support chat".
- l.2674-2677: ``chatModeForModel(m) == chatExecutionModeNative`` goes to handleNativeChat, which sends
  the format through llamaServerChatResponseFormat (llm/llama_server.go l.2180-2184, l.2308-2337: decoded
  into map[string]any, so its keys are re-sorted) and has no two-pass format logic.
- l.2357-2385: rendered when IsMLX (details.format safetensors, images.go l.88-90), or a renderer or a
  parser is stored, or shouldUseHarmony (l.77-87: family gptoss/gpt-oss and a template with <|start|>
  and <|end|>), or shouldUseGoTemplate: a TEMPLATE layer (HasGoTemplate, images.go l.741-743) and, when
  OLLAMA_GO_TEMPLATE is set (goTemplateEnvSet, images.go l.309-311), its value, else not
  PreferChatTemplate (images.go l.793-795, only with a GGUF chat template). Everything else is native.

What an audit can read of that: /api/tags (remote_host), /api/show (capabilities, details.format and
family, modelfile with RENDERER/PARSER and TEMPLATE, template) and the serve process's environment.
Whether a TEMPLATE layer exists is not shown: without one, ``template`` is the default ``{{ .Prompt }}``
(template/template.go l.94, images.go l.688), and a layer can hold that text too. But from
v0.30.0-rc23, /api/show answers the GGUF chat template instead of the Go template exactly when the model
has one and is native (selectedModelTemplate, routes.go l.1572, l.1623-1630), while the modelfile
keeps ``TEMPLATE <the Go template>`` (images.go l.615-620, parser/parser.go l.413-414, l.644-654): a
template that differs from the modelfile's proves the native path. The modelfile is read as Ollama's
parser reads it (ollama/modelfile.py: ParseFile, unquote): how a value is quoted proves nothing.

The rules by tag (each function compared with ``git show TAG:server/routes.go`` over every tag):

- before v0.30.0-rc0: no native path (llm/server.go passes the schema to SchemaToGrammar as is).
- v0.30.0-rc0 - rc21: rendered when HasLegacyTemplate (a TEMPLATE layer) and GoTemplate(true)
  (routes.go @ v0.30.0-rc15 l.2331-2345); no PreferChatTemplate; template never swapped.
- v0.30.0-rc22: shouldUseGoTemplate with PreferChatTemplate (routes.go @ v0.30.0-rc22 l.2329-2342,
  images.go l.575-578); template never swapped.
- v0.30.0-rc23 and later (to v0.33.0-rc2, the newest read): as above, template swapped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import api as ollama_api
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import modelfile
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

NATIVE, RENDERED, PROXIED, NO_CHAT, UNKNOWN = 'native', 'rendered', 'proxied', 'no_chat', 'unknown'
DEFAULT_TEMPLATE = '{{ .Prompt }}'
HARMONY_FAMILIES = ('gptoss', 'gpt-oss')

# (first tag, era, what changed)
ERAS = (
    (None, 'none', 'no native path'),
    ('0.30.0-rc0', 'legacy_template', 'the native chat path (PR 16031 branch)'),
    ('0.30.0-rc22', 'prefer_chat_template', 'PreferChatTemplate'),
    ('0.30.0-rc23', 'template_shown', "/api/show's template as the GGUF chat template on the native path"),
)

# strconv.ParseBool (Go): these are false, 1/t/T/TRUE/true/True are true, and anything else is an
# error, which BoolWithDefault turns into true: only the false spellings need naming.
_GO_FALSE = ('0', 'f', 'F', 'FALSE', 'false', 'False')


class GoTemplateSetting(object):
    """OLLAMA_GO_TEMPLATE as envconfig reads it (envconfig/config.go @ v0.33.0-rc2 l.177-190, l.218, l.375-377):
    Var() trims spaces, then quotes; empty is unset (the default, true); strconv.ParseBool decides,
    and a value it refuses counts as true."""

    def __init__(self, state, raw, source):
        self.state = state          # 'set', 'unset' or 'unknown'
        self.raw = raw
        self.source = source
        text = (raw or '').strip().strip('"\'') if state == 'set' else ''
        if state == 'set' and not text:
            self.state = 'unset'
        self.explicit = self.state == 'set'
        if self.state == 'unknown':
            self.enabled = None
        elif not self.explicit:
            self.enabled = True
        else:
            self.enabled = text not in _GO_FALSE

    def evidence(self):
        return {'state': self.state, 'value': self.raw, 'go_template_enabled': self.enabled, 'from': self.source}

    def describe(self):
        if self.state == 'unknown':
            return 'OLLAMA_GO_TEMPLATE unknown (%s)' % self.source
        if not self.explicit:
            return 'OLLAMA_GO_TEMPLATE unset (%s)' % self.source
        return 'OLLAMA_GO_TEMPLATE=%r, read as %s (%s)' % (self.raw, 'true' if self.enabled else 'false', self.source)


def go_template_setting(ctx):
    state, raw, source = ollama_api.serve_environment(ctx, 'OLLAMA_GO_TEMPLATE')
    return GoTemplateSetting(state, raw, source)


def go_quote(text):
    """parser.quote (parser/parser.go @ v0.33.0-rc2 l.644-654), as Model.String() writes TEMPLATE."""
    if '\n' in text or text.startswith(' ') or text.endswith(' '):
        if '"' in text:
            return '"""' + text + '"""'
        return '"' + text + '"'
    return text


def template_in_modelfile(template, text, commands):
    """Whether /api/show's ``template`` is the modelfile's TEMPLATE: the value ParseFile reads (parser.unquote
    takes it bare, in "..." or in \"\"\"...\"\"\", parser/parser.go l.656-674), or the text Command.String()
    writes for it (quote, l.644-654) - the two differ where quote() leaves a value bare that unquote() then
    takes for quoted ('"a"'), so either one is the same template."""
    if modelfile.last(commands, 'template') == template:
        return True
    return ('\nTEMPLATE %s\n' % go_quote(template)) in ('\n' + text)


def _text_field(show, key):
    value = show.get(key)
    if value is None:
        return ''
    if not isinstance(value, str):
        raise ValueError('/api/show field %s is a %s, not a string' % (key, type(value).__name__))
    return value


def decide(version, remote_host, show, setting):
    """(path, reason) of one model. ``version`` an OllamaVersion; ``remote_host`` from /api/tags;
    ``show`` its /api/show answer (None for a proxied model); ``setting`` a GoTemplateSetting.
    Raises ValueError for an /api/show field of the wrong type."""
    if remote_host or (show and show.get('remote_host')):
        return PROXIED, 'a cloud model, proxied to %s: the chat runs there' % (remote_host or show.get('remote_host'))
    era, problem = ollama_version.choose(version, ERAS)
    if problem:
        return UNKNOWN, problem
    if era == 'none':
        return RENDERED, 'Ollama %s has no native chat path (it came with v0.30.0-rc0)' % version.text
    capabilities = show.get('capabilities')
    if capabilities is None:
        capabilities = []
    if not isinstance(capabilities, list):
        raise ValueError('/api/show field capabilities is a %s, not a list' % type(capabilities).__name__)
    if 'completion' not in capabilities:
        return NO_CHAT, 'its capabilities (%s) lack completion: Ollama refuses it chat' % (', '.join(
            str(c) for c in capabilities) or 'none')
    details = show.get('details') if isinstance(show.get('details'), dict) else {}
    if details.get('format') == 'safetensors':
        return RENDERED, 'a safetensors model: always rendered by Ollama (IsMLX)'
    text = _text_field(show, 'modelfile')
    try:
        commands = modelfile.parse(text)
    except modelfile.ModelfileError as exc:
        return UNKNOWN, "/api/show's modelfile does not parse as Ollama's parser reads it (%s)" % exc
    directives = dict((name.upper(), value) for name, value in commands if name in ('renderer', 'parser'))
    if directives:
        return RENDERED, 'stored %s: rendered by Ollama' % ' and '.join(
            '%s %s' % (key, value) for key, value in sorted(directives.items()))
    template = _text_field(show, 'template')
    in_modelfile = template_in_modelfile(template, text, commands)
    if era == 'template_shown' and not in_modelfile:
        return NATIVE, ("/api/show answers a template that is not the modelfile's TEMPLATE (read as Ollama's parser "
                        'reads it, unquoted): the GGUF chat template, shown only for a model on the native path')
    if str(details.get('family') or '') in HARMONY_FAMILIES and '<|start|>' in template and '<|end|>' in template:
        return RENDERED, 'a harmony model (gpt-oss): rendered by Ollama'
    return _by_template(era, template, in_modelfile, setting)


def _by_template(era, template, in_modelfile, setting):
    env = setting.describe()
    if setting.enabled is False:
        return NATIVE, '%s turns the Go template off: every model without a renderer, parser or harmony is native' % env
    if template == DEFAULT_TEMPLATE:
        return UNKNOWN, ('its template is the default %s: either it has no TEMPLATE layer (native) or a TEMPLATE '
                         'layer of that text (rendered); /api/show does not tell which' % DEFAULT_TEMPLATE)
    if era == 'template_shown' and not in_modelfile:
        return UNKNOWN, "its modelfile has no TEMPLATE line to compare /api/show's template with"
    if setting.enabled is None:
        return UNKNOWN, 'it has a Go TEMPLATE, rendered unless OLLAMA_GO_TEMPLATE is false, and %s' % env
    if era == 'prefer_chat_template' and not setting.explicit:
        return UNKNOWN, ('it has a Go TEMPLATE and %s: v0.30.0-rc22 prefers the GGUF chat template when it has more '
                         'capabilities, which /api/show of that version does not show' % env)
    if era == 'template_shown' and not setting.explicit:
        return RENDERED, ('it has a Go TEMPLATE and %s; a preferred GGUF chat template would have been shown '
                          'instead of it' % env)
    return RENDERED, 'it has a Go TEMPLATE and %s' % env
