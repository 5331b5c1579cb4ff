#!/usr/bin/python3
"""The PyTorch CPU peers of bench/bench_quant_int.cpp, timed on the very same bytes.

    bench_quant_int --write-inputs DIR    # writes DIR/<case>.<part>.bin and our BF16 output
    /usr/bin/python3 bench/quant_int_torch.py DIR [rows cols]

Each case is the producing library's own dequantization arithmetic, transcribed op for
op into Debian's python3-torch 1.13 (the libraries themselves are not packaged), then
the nn.Linear orientation [out, in] and .to(bfloat16), as a converter needs:
  gptq_g128, gptq_g128_actorder  GPTQModel PackableQuantLinear.dequantize_weight (2/4/8
                    bits): qweight / qzeros shifted by wf, cast to int8, masked;
                    scales[g_idx] * (weight - zeros[g_idx]) in float16
  awq_g128          AutoAWQ packing_utils.dequantize_gemm: unpack_awq, reverse_awq_order,
                    masks, repeat_interleave of zeros and scales, (w - z) * s in float16
  ct_w4a16_g128     compressed-tensors unpack_from_int32 (packed_dim 1) then dequantize
                    (group strategy, column order): x_q.to(bf16).unflatten * scale
  mlx_4bit_g64      MLX affine_dequantize as torch ops: codes from the uint32 words,
                    w * scales then + biases, each rounded to bfloat16
One thread (as ours), best of 5 runs, Melem/s; then the count of output bytes that
differ from ours (0 means the same bytes).
"""
import os
import sys
import time

import numpy as np
import torch

RUNS = 5
AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def load(d, case, part, dtype=np.uint8):
    return torch.from_numpy(np.fromfile(os.path.join(d, f"{case}.{part}.bin"), dtype=dtype))


def f16(d, case, part):
    return load(d, case, part, np.int16).view(torch.float16)


def bf16(d, case, part):
    return load(d, case, part, np.int16).view(torch.bfloat16)


def cases(d, rows, cols):
    in_f, out_f, bits = cols, rows, 4
    pack = 32 // bits
    maxq = 2 ** bits - 1

    for name in ("gptq_g128", "gptq_g128_actorder"):
        qweight = load(d, name, "qweight", np.int32).view(in_f // pack, out_f)
        qzeros = load(d, name, "qzeros", np.int32).view(in_f // 128, out_f // pack)
        scales = f16(d, name, "scales").view(in_f // 128, out_f)
        g_idx = load(d, name, "g_idx", np.int32)
        wf = torch.tensor(list(range(0, 32, bits)), dtype=torch.int32).unsqueeze(0)
        wf_zero, wf_neg_one = wf.unsqueeze(0), wf.unsqueeze(-1)

        def gptq(qweight=qweight, qzeros=qzeros, scales=scales, g_idx=g_idx, wf_zero=wf_zero, wf_neg_one=wf_neg_one):
            zeros = torch.bitwise_right_shift(torch.unsqueeze(qzeros, 2).expand(-1, -1, pack), wf_zero).to(torch.int8)
            zeros = torch.bitwise_and(zeros, maxq).reshape(scales.shape)
            weight = torch.bitwise_and(
                torch.bitwise_right_shift(torch.unsqueeze(qweight, 1).expand(-1, pack, -1), wf_neg_one).to(torch.int8),
                maxq)
            weight = weight.reshape(weight.shape[0] * weight.shape[1], weight.shape[2])
            weights = scales[g_idx.long()] * (weight - zeros[g_idx.long()])
            return weights.t().contiguous().to(torch.bfloat16)
        yield name, gptq

    qweight = load(d, "awq_g128", "qweight", np.int32).view(in_f, out_f // pack)
    qzeros = load(d, "awq_g128", "qzeros", np.int32).view(in_f // 128, out_f // pack)
    scales = f16(d, "awq_g128", "scales").view(in_f // 128, out_f)

    def awq():
        shifts = torch.arange(0, 32, bits)
        iweights = torch.bitwise_right_shift(qweight[:, :, None], shifts[None, None, :]).to(torch.int8)
        iweights = iweights.view(iweights.shape[0], -1)
        izeros = torch.bitwise_right_shift(qzeros[:, :, None], shifts[None, None, :]).to(torch.int8)
        izeros = izeros.view(izeros.shape[0], -1)
        # int32 in AutoAWQ; torch 1.13 indexes with int64 only
        order = torch.arange(iweights.shape[-1], dtype=torch.int64).view(-1, pack)[:, AWQ_REVERSE_ORDER].view(-1)
        izeros = izeros[:, order]
        iweights = iweights[:, order]
        iweights = torch.bitwise_and(iweights, maxq)
        izeros = torch.bitwise_and(izeros, maxq)
        s = scales.repeat_interleave(128, dim=0)
        izeros = izeros.repeat_interleave(128, dim=0)
        return ((iweights - izeros) * s).t().contiguous().to(torch.bfloat16)
    yield "awq_g128", awq

    packed = load(d, "ct_w4a16_g128", "weight_packed", np.int32).view(out_f, in_f // pack)
    ct_scale = bf16(d, "ct_w4a16_g128", "weight_scale").view(out_f, in_f // 128)

    def ct():
        unpacked = torch.zeros((packed.shape[0], packed.shape[1] * pack), dtype=torch.int32)
        for i in range(pack):
            unpacked[:, i::pack] = (packed >> (bits * i)) & maxq
        unpacked = unpacked[:, :in_f]
        x_q = (unpacked - 2 ** bits // 2).to(torch.int8)
        x = x_q.unflatten(-1, (in_f // 128, 128))
        out = x.to(torch.bfloat16) * ct_scale.unsqueeze(-1)
        return out.flatten(start_dim=-2).to(torch.bfloat16)
    yield "ct_w4a16_g128", ct

    words = load(d, "mlx_4bit_g64", "weight", np.int32).view(out_f, in_f // pack)
    mlx_s = bf16(d, "mlx_4bit_g64", "scales").view(out_f, in_f // 64, 1)
    mlx_b = bf16(d, "mlx_4bit_g64", "biases").view(out_f, in_f // 64, 1)
    mlx_shifts = torch.arange(0, 32, bits, dtype=torch.int32)

    def mlx():
        w = torch.bitwise_and(torch.bitwise_right_shift(words[:, :, None], mlx_shifts), maxq)
        w = w.view(out_f, in_f // 64, 64).to(torch.bfloat16)
        return (w * mlx_s + mlx_b).view(out_f, in_f)
    yield "mlx_4bit_g64", mlx


def main():
    d = sys.argv[1]
    rows, cols = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (4096, 11008)
    torch.set_num_threads(1)
    n = rows * cols
    print(f"PyTorch {torch.__version__} CPU, one thread, {rows} x {cols}, best of {RUNS}, Melem/s\n")
    print("| case | PyTorch | bytes differing from ours |\n|---|---:|---:|")
    for name, fn in cases(d, rows, cols):
        best = 1e30
        for _ in range(RUNS):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        ours = np.fromfile(os.path.join(d, f"{name}.out_bf16.bin"), dtype=np.uint8)
        theirs = out.contiguous().view(torch.int16).numpy().view(np.uint8).reshape(-1)
        diff = int(np.count_nonzero(ours != theirs))
        print(f"| {name} | {n / best / 1e6:.0f} | {diff} |", flush=True)


if __name__ == "__main__":
    main()
