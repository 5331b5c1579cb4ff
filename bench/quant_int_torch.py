#!/usr/bin/python3
"""The PyTorch CPU peers of bench/bench_quant_int.cpp, timed on the very same bytes.

    bench_quant_int --write-inputs DIR    # writes DIR/<case>.<part>.bin and our BF16 output
    /usr/bin/python3 bench/quant_int_torch.py DIR [rows cols]

Each case is the producing library's own dequantization arithmetic, transcribed op for
op into Debian's python3-torch 1.13 (the libraries themselves are not packaged), then
the nn.Linear orientation [out, in] and .to(bfloat16), as a converter needs:
  gptq_g128, gptq_g128_actorder, gptq_8bit_g128  GPTQModel PackableQuantLinear.
                    dequantize_weight (2/4/8 bits): qweight / qzeros shifted by wf, cast
                    to int8 (int16 for 8 bits), masked; scales[g_idx] * (weight -
                    zeros[g_idx]) in float16
  awq_g128          AutoAWQ packing_utils.dequantize_gemm: unpack_awq, reverse_awq_order,
                    masks, repeat_interleave of zeros and scales, (w - z) * s in float16
  ct_w4a16_g128, ct_w8a16_channel  compressed-tensors unpack_from_int32 (packed_dim 1)
                    then dequantize (group strategy, column order: x_q.to(bf16).unflatten
                    * scale; channel: x_q.to(bf16) * scale)
  ct_int8_naive_channel  int-quantized I8 weights: x_q.to(bf16) * scale
  mlx_4bit_g64, mlx_6bit_g64, mlx_8bit_g64  MLX affine_dequantize as torch ops: codes
                    from the LSB-first stream, w * scales then + biases, each rounded
                    to bfloat16
Timed by torch_timing.py (one thread, best of 5, Melem/s, then the output bytes that
differ from ours: 0 means the same bytes).
"""
import numpy as np
import torch

from torch_timing import load, run

AWQ_REVERSE_ORDER = [0, 4, 1, 5, 2, 6, 3, 7]


def f16(d, case, part):
    return load(d, case, part, np.int16).view(torch.float16)


def bf16(d, case, part):
    return load(d, case, part, np.int16).view(torch.bfloat16)


def gptq(d, name, in_f, out_f, bits):
    """GPTQModel dequantize_weight (int16 codes for 8 bits, as its dequant_dtype)."""
    pack, maxq = 32 // bits, 2 ** bits - 1
    code_dtype = torch.int16 if bits == 8 else torch.int8
    qweight = load(d, name, "qweight", np.int32).view(in_f // pack, out_f)
    qzeros = load(d, name, "qzeros", np.int32).view(in_f // 128, out_f // pack)
    scales = f16(d, name, "scales").view(in_f // 128, out_f)
    g_idx = load(d, name, "g_idx", np.int32)
    wf = torch.tensor(list(range(0, 32, bits)), dtype=torch.int32).unsqueeze(0)
    wf_zero, wf_neg_one = wf.unsqueeze(0), wf.unsqueeze(-1)

    def run():
        zeros = torch.bitwise_right_shift(torch.unsqueeze(qzeros, 2).expand(-1, -1, pack), wf_zero).to(code_dtype)
        zeros = torch.bitwise_and(zeros, maxq).reshape(scales.shape)
        weight = torch.bitwise_and(
            torch.bitwise_right_shift(torch.unsqueeze(qweight, 1).expand(-1, pack, -1), wf_neg_one).to(code_dtype),
            maxq)
        weight = weight.reshape(weight.shape[0] * weight.shape[1], weight.shape[2])
        weights = scales[g_idx.long()] * (weight - zeros[g_idx.long()])
        return weights.t().contiguous().to(torch.bfloat16)
    return run


def ct_packed(d, name, in_f, out_f, bits, group):
    """compressed-tensors unpack_from_int32 then dequantize (group or channel strategy)."""
    pack, maxq = 32 // bits, 2 ** bits - 1
    packed = load(d, name, "weight_packed", np.int32).view(out_f, in_f // pack)
    scale = bf16(d, name, "weight_scale").view(out_f, in_f // group)

    def run():
        unpacked = torch.zeros((packed.shape[0], packed.shape[1] * pack), dtype=torch.int32)
        for i in range(pack):
            unpacked[:, i::pack] = (packed >> (bits * i)) & maxq
        unpacked = unpacked[:, :in_f]
        x_q = (unpacked - 2 ** bits // 2).to(torch.int8)
        if group == in_f:  # channel: x_q.to(scale.dtype) * scale, scale [out, 1]
            return (x_q.to(torch.bfloat16) * scale).to(torch.bfloat16)
        x = x_q.unflatten(-1, (in_f // group, group))
        out = x.to(torch.bfloat16) * scale.unsqueeze(-1)
        return out.flatten(start_dim=-2).to(torch.bfloat16)
    return run


def mlx(d, name, in_f, out_f, bits):
    """MLX affine_dequantize as torch ops: w * scales, then + biases, each rounded to bfloat16."""
    mlx_s = bf16(d, name, "scales").view(out_f, in_f // 64, 1)
    mlx_b = bf16(d, name, "biases").view(out_f, in_f // 64, 1)
    if bits == 6:  # 4 codes in every 3 bytes of the LSB-first stream
        b = load(d, name, "weight").view(out_f, in_f // 4, 3).to(torch.int32)
    else:
        words = load(d, name, "weight", np.int32).view(out_f, in_f * bits // 32)
        shifts = torch.arange(0, 32, bits, dtype=torch.int32)

    def run():
        if bits == 6:
            w = torch.stack((b[..., 0] & 63, (b[..., 0] >> 6) | ((b[..., 1] & 15) << 2),
                             (b[..., 1] >> 4) | ((b[..., 2] & 3) << 4), b[..., 2] >> 2), dim=-1)
        else:
            w = torch.bitwise_and(torch.bitwise_right_shift(words[:, :, None], shifts), 2 ** bits - 1)
        w = w.reshape(out_f, in_f // 64, 64).to(torch.bfloat16)
        return (w * mlx_s + mlx_b).view(out_f, in_f)
    return run


def cases(d, rows, cols):
    in_f, out_f, bits = cols, rows, 4
    pack = 32 // bits
    maxq = 2 ** bits - 1

    for name in ("gptq_g128", "gptq_g128_actorder"):
        yield name, gptq(d, name, in_f, out_f, 4)

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

    yield "ct_w4a16_g128", ct_packed(d, "ct_w4a16_g128", in_f, out_f, 4, 128)
    yield "mlx_4bit_g64", mlx(d, "mlx_4bit_g64", in_f, out_f, 4)
    yield "gptq_8bit_g128", gptq(d, "gptq_8bit_g128", in_f, out_f, 8)
    yield "ct_w8a16_channel", ct_packed(d, "ct_w8a16_channel", in_f, out_f, 8, in_f)

    naive = load(d, "ct_int8_naive_channel", "weight", np.int8).view(out_f, in_f)
    naive_scale = bf16(d, "ct_int8_naive_channel", "weight_scale").view(out_f, 1)

    def ct_naive():  # int-quantized: the I8 weight is x_q
        return (naive.to(torch.bfloat16) * naive_scale).to(torch.bfloat16)
    yield "ct_int8_naive_channel", ct_naive

    for b in (6, 8):
        yield f"mlx_{b}bit_g64", mlx(d, f"mlx_{b}bit_g64", in_f, out_f, b)


if __name__ == "__main__":
    run(cases)
