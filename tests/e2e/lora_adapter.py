"""Write a small LoRA adapter GGUF for the Gemma 3 270M test model with the gguf package.

The tensors follow llama.cpp's adapter layout: blk.N.<module>.weight.lora_a with
numpy shape (rank, n_in) and .lora_b with (n_out, rank); small random values
(std 0.05 at rank 8) are enough to change greedy output.
"""
import numpy as np
from gguf import GGUFReader, GGUFWriter

MODULES = ('attn_v', 'attn_output', 'ffn_down')


def write_adapter(model_path, out_path, rank=8, alpha=8.0, seed=0, std=0.05):
    reader = GGUFReader(model_path)
    shapes = dict((t.name, [int(x) for x in t.shape]) for t in reader.tensors)
    writer = GGUFWriter(out_path, 'gemma3')
    writer.add_string('general.type', 'adapter')
    writer.add_string('adapter.type', 'lora')
    writer.add_float32('adapter.lora.alpha', float(alpha))
    rng = np.random.default_rng(seed)
    layer = 0
    while 'blk.%d.attn_v.weight' % layer in shapes:
        for module in MODULES:
            n_in, n_out = shapes['blk.%d.%s.weight' % (layer, module)]
            writer.add_tensor('blk.%d.%s.weight.lora_a' % (layer, module), rng.normal(0, std, (rank, n_in)).astype(np.float32))
            writer.add_tensor('blk.%d.%s.weight.lora_b' % (layer, module), rng.normal(0, std, (n_out, rank)).astype(np.float32))
        layer += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


if __name__ == '__main__':
    import sys
    write_adapter(sys.argv[1], sys.argv[2])
