"""PEFT (on CPU PyTorch) as an oracle, run in its own interpreter.

Run apart from pytest because ansible-core replaces sys.intern in any process that imports
its module_utils, and torch._dynamo refuses to start next to that replacement.

    python peft_oracle.py build CASES_JSON ROOT   for each {name: LoraConfig extras}, build a tiny model and
                                                  adapter and save it to ROOT/name
    python peft_oracle.py load DIR [DIR...]       load each adapter onto the same base model
Both print one JSON object keyed by name (or DIR): {"scalings": {module: [rank, scaling]}, "output": [...]}.
"""
import json
import sys

import peft
import torch


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = torch.nn.Linear(16, 16)
        self.v_proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.q_proj(x) + self.v_proj(x)


class Experts(torch.nn.Module):
    """Fused MoE experts as transformers writes them (gate_up_proj registered before down_proj), for
    adapters with target_parameters; every expert's weights take part in the output."""

    def __init__(self, experts=2, hidden=16, inner=8):
        super().__init__()
        self.gate_up_proj = torch.nn.Parameter(torch.randn(experts, hidden, 2 * inner) * 0.1)
        self.down_proj = torch.nn.Parameter(torch.randn(experts, inner, hidden) * 0.1)

    def forward(self, x):
        out = 0
        for expert in range(self.gate_up_proj.shape[0]):
            gate, up = (x @ self.gate_up_proj[expert]).chunk(2, dim=-1)
            out = out + (torch.nn.functional.silu(gate) * up) @ self.down_proj[expert]
        return out


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = Experts()

    def forward(self, x):
        return self.experts(x)


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = Attention()
        self.mlp = Mlp()

    def forward(self, x):
        return x + self.self_attn(x) + self.mlp(x)


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(32, 16)
        self.layers = torch.nn.ModuleList([Layer(), Layer()])

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return x


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Inner()

    def forward(self, ids):
        return self.model(ids)


def base_model():
    torch.manual_seed(0)
    return Tiny().eval()


def report(model):
    scalings = {}
    for name, module in model.named_modules():
        scaling = getattr(module, 'scaling', None)
        if isinstance(scaling, dict) and 'default' in scaling:
            scalings[name[len('base_model.model.'):]] = [module.r['default'], scaling['default']]
    # The forward pass in float64: the weights are float32 values (exact in float64), so two models
    # differ only by what they store, not by the order a CPU's float32 kernels add in (an AVX-512/AMX
    # machine gave 1.4e-5 between a fold and its original in float32).
    with torch.no_grad():
        output = model.double()(torch.tensor([[1, 5, 9, 30]]))
    return {'scalings': scalings, 'output': output.reshape(-1).tolist()}


def main(argv):
    results = {}
    if argv[0] == 'build':
        for name, extra in json.loads(argv[1]).items():
            config = peft.LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj', 'embed_tokens'],
                                     init_lora_weights=False, **extra)
            torch.manual_seed(1)
            model = peft.get_peft_model(base_model(), config).eval()
            model.save_pretrained('%s/%s' % (argv[2], name))
            results[name] = report(model)
    else:
        for path in argv[1:]:
            results[path] = report(peft.PeftModel.from_pretrained(base_model(), path).eval())
    print(json.dumps(results))


if __name__ == '__main__':
    main(sys.argv[1:])
