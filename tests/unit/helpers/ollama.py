"""The Ollama stand-in's models and the audit of ollama_schema_order and ollama_format_think against it."""
import sys

from ansible_collections.homelab.postmortem.plugins.module_utils import registry
from ansible_collections.homelab.postmortem.plugins.module_utils.context import AuditContext
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.ollama_format_think import DETECTION as ollama_format_think
from ansible_collections.homelab.postmortem.plugins.module_utils.detections.ollama_schema_order import DETECTION as ollama_schema_order

from .paths import TESTS_DIR

sys.path.insert(0, TESTS_DIR)
from ollama_standin import OllamaStandIn, cloud, gemma4, plain  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

QWEN_CHAT_TEMPLATE = "{%- for message in messages %}{{ message.content }}{%- endfor %}<think>\n</think>"
GO_TEMPLATE = '{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n'
GO_THINKING_TEMPLATE = GO_TEMPLATE + '{{ if .Think }}<think>{{ end }}'


def models():
    return {
        # No TEMPLATE layer, a GGUF chat template with <think>: native (routes.go l.2376-2379), thinking.
        'qwen3:0.6b': plain('751.63M', family='qwen3', thinking=True, chat_template=QWEN_CHAT_TEMPLATE,
                            direct_seeds=(2,)),
        # A Go TEMPLATE layer with thinking tags and a GGUF chat template: rendered unless OLLAMA_GO_TEMPLATE is false.
        'thinker:latest': plain('4.0B', family='qwen3', thinking=True, template=GO_THINKING_TEMPLATE,
                                chat_template=QWEN_CHAT_TEMPLATE, direct_seeds=(2,)),
        # No layer, no GGUF chat template: native upstream, shown as {{ .Prompt }} like a layer of that text.
        'base:latest': plain('270M', family='gemma3'),
        # A Go TEMPLATE layer, no GGUF chat template.
        'gemma3:1b': plain(template=GO_TEMPLATE),
        'gemma4:12b': gemma4('11.9B'),
        'nomic-embed:latest': plain('137M', family='nomic-bert', embedding=True),
        'gpt-oss:120b-cloud': cloud('gpt-oss:120b'),
    }


def ctx_for(tmp_path, server, check, probes=(), environ=None, serve=True, **settings):
    proc = tmp_path / 'proc' / '77'
    proc.mkdir(parents=True)
    (proc / 'cmdline').write_bytes(b'/usr/local/bin/ollama\x00serve\x00' if serve else b'/bin/sh\x00')
    (proc / 'environ').write_bytes(b'\x00'.join(('%s=%s' % kv).encode() for kv in (environ or {}).items()))
    (proc / 'cgroup').write_text('0::/\n')
    values = {'url': server.url}
    values.update(settings)
    return AuditContext(proc_root=str(tmp_path / 'proc'), sys_root=str(tmp_path / 'sys'), kernel_release='6.18.0',
                        probes=probes, settings=registry.validate_settings({check: values}))


def by_model(finding):
    return dict((i['evidence']['model'], i) for i in finding['evidence'].get('instances', []))


def statuses(finding):
    return dict((model, i['status']) for model, i in by_model(finding).items())


def schema_order(tmp_path, server, **kwargs):
    return registry.run_one(ctx_for(tmp_path, server, 'ollama_schema_order', **kwargs), ollama_schema_order)


def format_think(tmp_path, server, **kwargs):
    return registry.run_one(ctx_for(tmp_path, server, 'ollama_format_think', **kwargs), ollama_format_think)
