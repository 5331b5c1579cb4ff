#!/usr/bin/env python3
"""Writes a llama-architecture F16 GGUF of about 1.1 GiB for the whole-file quantize
comparison (bench/quantize_file.sh): llama-quantize and amn forget on the same file.

Made by llama.cpp's own gguf-py (its GGUFWriter, tensor infos first, then each tensor's
data streamed), never by anamnesis: run it with gguf-py on PYTHONPATH and numpy, and write
to a temporary folder, never into the repository.

    PYTHONPATH=.../gguf-py python3 bench/make_llama_f16.py OUT.gguf [LAYERS]

Shapes are TinyLlama 1.1B's (hidden 2048, feed-forward 5632, 32 heads, 4 KV heads,
vocabulary 32000) with 10 layers instead of 22 (LAYERS to change it): every weight row is
2048 or 5632 long, so every K-quant fits and llama-quantize's Q4_K_M mix needs no
fallback. Values are seeded normals (sigma 0.02; norms around 1): speed depends on
shapes, not values.
"""
import sys

import numpy as np
import gguf

N_EMBD, N_FF, N_HEAD, N_HEAD_KV, N_VOCAB = 2048, 5632, 32, 4, 32000
HEAD_DIM = N_EMBD // N_HEAD


def main(path, n_layer):
    rng = np.random.default_rng(16)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("amn-bench-llama")
    w.add_context_length(2048)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(N_VOCAB)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)

    # (name, numpy shape: rows x columns, GGUF ne = [columns, rows]; or one dimension)
    tensors = [("token_embd.weight", (N_VOCAB, N_EMBD))]
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors += [
            (p + "attn_norm.weight", (N_EMBD,)),
            (p + "attn_q.weight", (N_EMBD, N_EMBD)),
            (p + "attn_k.weight", (N_HEAD_KV * HEAD_DIM, N_EMBD)),
            (p + "attn_v.weight", (N_HEAD_KV * HEAD_DIM, N_EMBD)),
            (p + "attn_output.weight", (N_EMBD, N_EMBD)),
            (p + "ffn_norm.weight", (N_EMBD,)),
            (p + "ffn_gate.weight", (N_FF, N_EMBD)),
            (p + "ffn_up.weight", (N_FF, N_EMBD)),
            (p + "ffn_down.weight", (N_EMBD, N_FF)),
        ]
    tensors += [("output_norm.weight", (N_EMBD,)), ("output.weight", (N_VOCAB, N_EMBD))]

    def values(shape):
        if len(shape) == 1:
            return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    for name, shape in tensors:
        dtype = np.float32 if len(shape) == 1 else np.float16
        w.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for _, shape in tensors:
        w.write_tensor_data(values(shape))
    w.close()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_llama_f16.py OUT.gguf [LAYERS]")
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 10)
