"""Which chat path Ollama takes for a model (plugins/module_utils/ollama/chat_path.py), against
what upstream's code decides.

No Ollama binary can run here. The /api/show answers come from the stand-in
(tests/ollama_standin.py), which builds them from a model's stored parts the way GetModelInfo does.
Each expected path is written out below from upstream's code (ollama/ollama @ v0.33.0-rc2 =
fb3076099 unless another tag is named), with the lines that decide it:

- chatModeForModel / usesOllamaRenderedChat / shouldUseGoTemplate: server/routes.go l.2357-2385
- GetModel: HasChatTemplate images.go l.727, HasGoTemplate l.741-743, PreferChatTemplate l.793-795,
  goTemplateEnvSet l.309-311; envconfig BoolWithDefault l.177-190, Var l.375-377
- /api/show's template: selectedModelTemplate routes.go l.1623-1630 (from v0.30.0-rc23)
- v0.30.0-rc0..rc21: shouldUseLegacyTemplate (routes.go @ v0.30.0-rc15 l.2331-2345)
- v0.30.0-rc22: PreferChatTemplate without selectedModelTemplate (images.go @ v0.30.0-rc22 l.575-578)

The last test checks the rule the detections live by over a grid of versions, settings and
models: never ``rendered`` for a model upstream sends native, never ``native`` for one it renders,
using the stand-in's transliteration of chatModeForModel as the reference.
"""
import sys

import pytest

from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import chat_path
from ansible_collections.homelab.postmortem.plugins.module_utils.ollama import version as ollama_version

from ....helpers.paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
from ollama_standin import OllamaStandIn, cloud, gemma4, plain, safetensors_gemma4  # noqa: E402  pylint: disable=wrong-import-position

QWEN_CHAT_TEMPLATE = ("{%- for message in messages %}{{- '<|im_start|>' + message.role }}{%- endfor %}"
                      "{%- if enable_thinking %}<think>\n</think>{%- endif %}")
GO_TEMPLATE = '{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n'
HARMONY_TEMPLATE = '<|start|>system<|message|>{{ .System }}<|end|>{{ range .Messages }}<|start|>{{ .Role }}{{ end }}'

MODELS = {
    'gguf-chat-template': plain(chat_template=QWEN_CHAT_TEMPLATE, thinking=True),
    'gguf-bare': plain(),
    'gguf-prompt-layer': plain(template='{{ .Prompt }}'),
    'go-template': plain(template=GO_TEMPLATE, chat_template=QWEN_CHAT_TEMPLATE),
    'go-template-preferred-gguf': plain(template=GO_TEMPLATE, chat_template=QWEN_CHAT_TEMPLATE, prefer_chat_template=True),
    'go-template-only': plain(template=GO_TEMPLATE),
    'gemma4-gguf': gemma4('11.9B'),
    'gemma4-safetensors': safetensors_gemma4(30_700_000_000),
    'safetensors-plain': dict(safetensors_gemma4(4_000_000_000), renderer=None, parser=None),
    'gpt-oss-harmony': plain(family='gptoss', template=HARMONY_TEMPLATE, chat_template=QWEN_CHAT_TEMPLATE),
    'embedding-only': plain(embedding=True, chat_template=QWEN_CHAT_TEMPLATE),
    'cloud': cloud('gpt-oss:120b'),
    'gguf-prompt-like': plain(template='Q: {{ .Prompt }}'),
    'go-template-with-parser-text': plain(template='{{ .System }}\nPARSER qwen3\n{{ .Prompt }}'),
}


def setting(raw, state='set'):
    return chat_path.GoTemplateSetting(state, raw, 'test')


UNSET = chat_path.GoTemplateSetting('unset', None, 'test')
UNKNOWN = chat_path.GoTemplateSetting('unknown', None, 'the environment of ollama serve pid 7 cannot be read')


@pytest.mark.parametrize('raw,enabled,explicit', [
    # strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False; BoolWithDefault answers true
    # for anything else (l.181-184: `if err != nil { return true }`); Var trims spaces, then quotes.
    ('1', True, True), ('t', True, True), ('TRUE', True, True), ('True', True, True),
    ('0', False, True), ('f', False, True), ('F', False, True), ('FALSE', False, True), ('False', False, True),
    ('off', True, True), ('no', True, True), ('yes', True, True), ('fAlse', True, True),
    ('"false"', False, True), (" 'f' ", False, True), ('  ', True, False), ('', True, False), ('""', True, False),
])
def test_ollama_go_template_is_read_as_envconfig_reads_it(raw, enabled, explicit):
    parsed = setting(raw)
    assert (parsed.enabled, parsed.explicit) == (enabled, explicit)


@pytest.fixture(scope='module')
def server():
    # Only its answers are used here (show(), native()); one instance, re-configured per case.
    stand_in = OllamaStandIn('0.0.1', MODELS)
    yield stand_in
    stand_in.close()


def serving(stand_in, version, go_template_env):
    stand_in.version, stand_in.go_template_env = version, go_template_env
    return stand_in


def decide(stand_in, version, name, go_template_env=None, reported=UNSET):
    serving(stand_in, version, go_template_env)
    model = MODELS[name]
    show = None if model.get('remote_host') else stand_in.show(name)
    return chat_path.decide(ollama_version.parse(version)[0], model.get('remote_host'), show, reported)[0]


NEWEST = '0.33.0-rc2'


@pytest.mark.parametrize('version,name,env,expected', [
    # No TEMPLATE layer: shouldUseGoTemplate is false (l.2377-2379), so native; with a GGUF chat template
    # /api/show answers it (l.1624-1627) and that shows.
    (NEWEST, 'gguf-chat-template', None, 'native'),
    # No layer and no GGUF chat template: native upstream, but /api/show answers "{{ .Prompt }}" exactly as
    # for a TEMPLATE layer of that text (rendered): the audit cannot tell them apart.
    (NEWEST, 'gguf-bare', None, 'unknown'),
    (NEWEST, 'gguf-prompt-layer', None, 'unknown'),
    (NEWEST, 'gguf-bare', 'false', 'native'),
    (NEWEST, 'gguf-prompt-layer', 'false', 'native'),
    # A Go TEMPLATE, unset: !PreferChatTemplate && GoTemplate(true) (l.2384).
    (NEWEST, 'go-template', None, 'rendered'),
    (NEWEST, 'go-template-preferred-gguf', None, 'native'),       # PreferChatTemplate (images.go l.793-795)
    # Set: its value alone (l.2380-2382); PreferChatTemplate is not even computed when set.
    (NEWEST, 'go-template-preferred-gguf', 'true', 'rendered'),
    (NEWEST, 'go-template', 'false', 'native'),
    (NEWEST, 'go-template', 'f', 'native'),
    (NEWEST, 'go-template', 'off', 'rendered'),                    # ParseBool error -> true
    (NEWEST, 'go-template-only', 'false', 'native'),               # not shown: the setting decides
    # Renderer, parser, safetensors (IsMLX), harmony: rendered whatever the setting (l.2358, l.2373).
    (NEWEST, 'gemma4-gguf', 'false', 'rendered'),
    (NEWEST, 'gemma4-safetensors', 'false', 'rendered'),
    (NEWEST, 'safetensors-plain', 'false', 'rendered'),
    (NEWEST, 'gpt-oss-harmony', 'false', 'rendered'),
    # No completion capability: "does not support chat" (routes.go l.2633-2637).
    (NEWEST, 'embedding-only', None, 'no_chat'),
    # Proxied before any of it (l.2518).
    (NEWEST, 'cloud', 'false', 'proxied'),
    # v0.30.0-rc0..rc21: rendered iff a TEMPLATE layer and GoTemplate(true); /api/show never swaps.
    ('0.30.0-rc15', 'go-template-preferred-gguf', None, 'rendered'),   # no PreferChatTemplate yet
    ('0.30.0-rc15', 'gguf-chat-template', None, 'unknown'),            # native upstream, shown as {{ .Prompt }}
    ('0.30.0-rc0', 'go-template', 'false', 'native'),
    # v0.30.0-rc22: PreferChatTemplate exists, /api/show does not reveal it yet.
    ('0.30.0-rc22', 'go-template-preferred-gguf', None, 'unknown'),
    ('0.30.0-rc22', 'go-template-preferred-gguf', 'true', 'rendered'),
    ('0.30.0-rc23', 'go-template-preferred-gguf', None, 'native'),
    # Before v0.30.0-rc0 there is only Ollama's own rendering.
    ('0.25.0-rc0', 'gguf-chat-template', 'false', 'rendered'),
])
def test_paths_as_upstream_decides_them(server, version, name, env, expected):
    assert decide(server, version, name, env, setting(env) if env is not None else UNSET) == expected


def test_an_unreadable_setting_leaves_open_only_what_it_decides(server):
    # A swapped template proves the native path whatever the setting; a Go template without a GGUF chat
    # template is native only when OLLAMA_GO_TEMPLATE is false, which could not be read.
    assert decide(server, NEWEST, 'gguf-chat-template', None, UNKNOWN) == 'native'
    assert decide(server, NEWEST, 'go-template-only', 'false', UNKNOWN) == 'unknown'
    assert decide(server, NEWEST, 'gemma4-gguf', 'false', UNKNOWN) == 'rendered'


def test_a_field_of_the_wrong_type_is_an_error_not_a_guess():
    show = {'capabilities': ['completion'], 'modelfile': 42, 'details': {'format': 'gguf'}}
    with pytest.raises(ValueError, match='modelfile is a int'):
        chat_path.decide(ollama_version.parse(NEWEST)[0], None, show, UNSET)


VERSIONS = ('0.25.0-rc0', '0.30.0-rc0', '0.30.0-rc21', '0.30.0-rc22', '0.30.0-rc23', '0.30.0', '0.31.2', NEWEST)
ENVS = (None, 'true', 'false', '0', 'off', '"false"')


@pytest.mark.parametrize('version', VERSIONS)
@pytest.mark.parametrize('env', ENVS)
def test_never_rendered_where_upstream_goes_native_nor_the_reverse(server, version, env):
    serving(server, version, env)
    for reported in (setting(env) if env is not None else UNSET, UNKNOWN):
        for name, model in MODELS.items():
            if model.get('remote_host') or model.get('embedding'):
                continue
            path, why = chat_path.decide(ollama_version.parse(version)[0], None, server.show(name), reported)
            native = server.native(model)
            assert path != ('rendered' if native else 'native'), (name, native, path, why)


def serve_ctx(tmp_path, processes, systemctl_out=None):
    """/proc with ``ollama serve`` processes: pid -> environment dict, or None for one that cannot be read
    (another user's process without root). systemctl show answers ``systemctl_out``."""
    from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
    for pid, environ in processes.items():
        proc = tmp_path / 'proc' / str(pid)
        proc.mkdir(parents=True)
        (proc / 'cmdline').write_bytes(b'/usr/bin/ollama\x00serve\x00')
        (proc / 'cgroup').write_text('0::/system.slice/ollama.service\n')
        if environ is None:
            (proc / 'environ').mkdir()   # not a regular file: unreadable, as without root
        else:
            (proc / 'environ').write_bytes(b'\x00'.join(('%s=%s' % kv).encode() for kv in environ.items()))
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        run_command=lambda cmd: (0, systemctl_out or '', ''), which=lambda name: '/usr/bin/' + name)


@pytest.mark.parametrize('processes,systemctl_out,state,raw', [
    ({77: {'OLLAMA_GO_TEMPLATE': 'f'}}, None, 'set', 'f'),
    ({77: {'HOME': '/usr/share/ollama'}}, None, 'unset', None),
    ({77: {'OLLAMA_GO_TEMPLATE': '0'}, 78: {'OLLAMA_GO_TEMPLATE': '0'}}, None, 'set', '0'),
    ({77: {'OLLAMA_GO_TEMPLATE': '0'}, 78: {}}, None, 'unknown', None),   # which one serves the url?
    ({}, None, 'unknown', None),                                          # no serve process found
    # Unreadable environment: the unit's Environment= when it sets it and no EnvironmentFile= can override it.
    ({77: None}, 'Environment=HOME=/x "OLLAMA_GO_TEMPLATE=false"\nEnvironmentFiles=\n', 'set', 'false'),
    ({77: None}, 'Environment=OLLAMA_GO_TEMPLATE=true\nEnvironmentFiles=/etc/default/ollama (ignore_errors=no)\n',
     'unknown', None),
    ({77: None}, 'Environment=HOME=/x\nEnvironmentFiles=\n', 'unknown', None),   # the manager's environment could
])
def test_the_setting_of_the_serve_process(tmp_path, processes, systemctl_out, state, raw):
    read = chat_path.go_template_setting(serve_ctx(tmp_path, processes, systemctl_out))
    assert (read.state, read.raw) == (state, raw), read.source


@pytest.mark.parametrize('version,name,env,shown', [
    # selectedModelTemplate (routes.go @ v0.33.0-rc2 l.1623-1630): the GGUF's tokenizer.chat_template when
    # m.HasChatTemplate (images.go l.726-727) and chatModeForModel(m) is native (l.2357-2363), else
    # m.Template.String() - the TEMPLATE layer, or template.DefaultTemplate without one (images.go l.688).
    (NEWEST, 'gguf-chat-template', None, QWEN_CHAT_TEMPLATE),        # no layer: native (l.2377-2379)
    (NEWEST, 'go-template', None, GO_TEMPLATE),                       # rendered (l.2384)
    (NEWEST, 'go-template', 'false', QWEN_CHAT_TEMPLATE),             # native: GoTemplate(true) false (l.2380-2382)
    (NEWEST, 'go-template-preferred-gguf', None, QWEN_CHAT_TEMPLATE),  # PreferChatTemplate (images.go l.793-795)
    (NEWEST, 'go-template-preferred-gguf', 'true', GO_TEMPLATE),
    (NEWEST, 'gpt-oss-harmony', 'false', HARMONY_TEMPLATE),           # harmony is rendered (l.2373, l.77-87)
    (NEWEST, 'embedding-only', None, QWEN_CHAT_TEMPLATE),             # chatModeForModel asks no capability
    (NEWEST, 'gguf-bare', None, '{{ .Prompt }}'),                     # native, but no chat template to show
    (NEWEST, 'go-template-only', 'false', GO_TEMPLATE),
    # Before v0.30.0-rc23 GetModelInfo answers m.Template.String() (resp.Template, routes.go @ v0.30.0-rc22).
    ('0.30.0-rc22', 'go-template-preferred-gguf', None, GO_TEMPLATE),
    ('0.30.0-rc15', 'gguf-chat-template', None, '{{ .Prompt }}'),
    ('0.30.0-rc23', 'gguf-chat-template', None, QWEN_CHAT_TEMPLATE),
])
def test_the_standin_shows_the_template_upstream_shows(server, version, name, env, shown):
    """The stand-in's /api/show ``template`` is what upstream's GetModelInfo answers (each line above)."""
    serving(server, version, env)
    assert server.show(name)['template'] == shown


def _with_template_line(show, line):
    """``show`` with the modelfile's TEMPLATE command written as ``line`` (one line, or several)."""
    text = show['modelfile']
    start = text.index('\nTEMPLATE ') + 1
    end = text.index('\nSYSTEM ') + 1 if '\nSYSTEM ' in text else text.index('\n', start) + 1
    return dict(show, modelfile=text[:start] + line + '\n' + text[end:])


@pytest.mark.parametrize('written', [
    'TEMPLATE "%s"', 'TEMPLATE """%s"""', 'TEMPLATE   %s   ', 'TEMPLATE """  %s"""',
])
def test_a_quoting_difference_proves_nothing(server, written):
    """parser.unquote reads a value bare, in "..." or in \"\"\"...\"\"\" (parser/parser.go @ v0.33.0-rc2
    l.656-674, the same in every tag from v0.30.0-rc0) and ParseFile trims spaces around it: each form holds
    the same TEMPLATE. A rendered model whose modelfile writes it another way than quote() would is still
    rendered (it was "native" before: for ollama_format_think a false ok)."""
    serving(server, NEWEST, None)
    show = server.show('gguf-prompt-like')
    template = show['template']
    assert template == 'Q: {{ .Prompt }}'
    text = (written % template).replace('"""  %s' % template, '"""%s' % template)
    quoted = _with_template_line(show, text)
    path, why = chat_path.decide(ollama_version.parse(NEWEST)[0], None, quoted, UNSET)
    assert path == 'rendered', why


def test_a_template_that_holds_a_parser_line_is_not_a_stored_parser(server):
    """A multi-line TEMPLATE value is one command: a line inside it that reads "PARSER qwen3" is template
    text, not a PARSER command (ParseFile reads the quoted value to its closing quotes)."""
    serving(server, NEWEST, 'false')
    show = server.show('go-template-with-parser-text')
    assert '\nPARSER qwen3\n' in show['modelfile']
    path, why = chat_path.decide(ollama_version.parse(NEWEST)[0], None, show, setting('false'))
    assert path == 'native', why


def test_a_modelfile_ollamas_parser_refuses_is_unknown_not_a_path(server):
    serving(server, NEWEST, None)
    show = _with_template_line(server.show('go-template'), 'TEMPLATE """never closed')
    path, why = chat_path.decide(ollama_version.parse(NEWEST)[0], None, show, UNSET)
    assert path == 'unknown' and 'does not parse' in why
