#!/usr/bin/python3
"""The PyTorch CPU peers of bench/bench_quant.cpp, timed on the very same bytes.

    bench_quant --write-inputs DIR    # writes DIR/<case>.<part>.bin and our BF16 output
    /usr/bin/python3 bench/quant_torch.py DIR [rows cols]

Each case does the producing library's own dequantization arithmetic in torch (Debian's
python3-torch 1.13, which has no float8 dtypes, so FP8 codes go through a 256-entry
lookup table, as a uint8 view must):
  fp8_block         transformers Fp8Dequantize / DeepSeek weight_dequant: f32(w) * the
                    128 x 128 block's F32 scale, then .to(bfloat16)
  fp8_channel_bf16  compressed-tensors _dequantize: w.to(bfloat16) * scale[row] (BF16)
  nf4, fp4          bitsandbytes' torch backend (dequantize_4bit): codes unpacked high
                    nibble first, code[idx] gathered, * absmax per block of 64, to bfloat16
  int8              bitsandbytes int8_vectorwise_dequant: A * SCB[:, None] * (1 / 127),
                    then .to(bfloat16)
  mxfp4             transformers convert_moe_packed_tensors: lut[lo], lut[hi] interleaved,
                    torch.ldexp(.., scale - 127), in bfloat16 (its default dtype)
  mxfp8_mlx         MLX mxfp8 (fp_dequantize's fallback, in bfloat16): from_fp8(code) *
                    2^(scale - 127) per 32, as torch ops (MLX does not run here)
  nvfp4             ModelOpt NVFP4QTensor.dequantize: e2m1 values * (scale * global) per
                    16, then .to(bfloat16)
Timed by torch_timing.py (one thread, best of 5, Melem/s, then the output bytes that
differ from ours). The torch backend of bitsandbytes and transformers' MXFP4 round the
code values to BF16 before multiplying, so theirs differ by design: ours is bit-exact
with the CUDA / C++ kernels and with fixtures.
"""
import numpy as np
import torch

from torch_timing import load, run


def e4m3_table():
    v = []
    for c in range(256):
        s = -1.0 if c & 0x80 else 1.0
        e, m = (c >> 3) & 0xF, c & 7
        if (c & 0x7F) == 0x7F:
            v.append(float("nan"))
        elif e == 0:
            v.append(s * m * 2.0**-9)
        else:
            v.append(s * (1 + m / 8) * 2.0 ** (e - 7))
    return torch.tensor(v, dtype=torch.float32)


NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
FP4 = [0.0, 0.005208333333, 0.66666667, 1.0, 0.33333333, 0.5, 0.16666667, 0.25,
       -0.0, -0.005208333333, -0.66666667, -1.0, -0.33333333, -0.5, -0.16666667, -0.25]
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
E2M1_MODELOPT = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def cases(d, rows, cols):
    lut8 = e4m3_table()

    w = load(d, "fp8_block", "weight").view(rows, cols)
    s = load(d, "fp8_block", "scale", np.float32).view((rows + 127) // 128, (cols + 127) // 128)

    def fp8_block():
        x = lut8[w.long()].view(rows // 128, 128, cols // 128, 128)
        return (x * s[:, None, :, None]).view(rows, cols).to(torch.bfloat16)
    yield "fp8_block", fp8_block

    wc = load(d, "fp8_channel_bf16", "weight").view(rows, cols)
    sc = load(d, "fp8_channel_bf16", "scale", np.int16).view(torch.bfloat16).view(rows, 1)
    lut8_bf16 = lut8.to(torch.bfloat16)

    def fp8_channel():
        return lut8_bf16[wc.long()] * sc
    yield "fp8_channel_bf16", fp8_channel

    for name, code in (("nf4", NF4), ("fp4", FP4)):
        packed = load(d, name, "packed")
        absmax = load(d, name, "absmax", np.float32)
        code_t = torch.tensor(code, dtype=torch.float32)

        def bnb4(packed=packed, absmax=absmax, code_t=code_t):
            out_dq = torch.empty(packed.numel() * 2, dtype=torch.long)  # torch 1.13 indexes with int64 only
            out_dq[1::2] = packed & 0xF
            out_dq[::2] = packed >> 4
            q = code_t.to(torch.bfloat16)[out_dq]
            return (q.view(-1, 64) * absmax.view(-1, 1)).view(rows, cols).to(torch.bfloat16)
        yield name, bnb4

    a = load(d, "int8", "weight", np.int8).view(rows, cols)
    scb = load(d, "int8", "scb", np.float32)

    def int8():
        return (a * scb.view(-1, 1) * 7.874015718698502e-3).to(torch.bfloat16)
    yield "int8", int8

    blocks = load(d, "mxfp4", "blocks").view(rows * cols // 32, 16)
    scales = load(d, "mxfp4", "scales").view(rows * cols // 32, 1)
    lut_mx = torch.tensor(E2M1, dtype=torch.bfloat16)

    def mxfp4():
        exp = scales.to(torch.int32) - 127
        out = torch.empty(blocks.shape[0], 32, dtype=torch.bfloat16)
        out[:, 0::2] = lut_mx[(blocks & 0x0F).long()]
        out[:, 1::2] = lut_mx[(blocks >> 4).long()]
        torch.ldexp(out, exp, out=out)
        return out.view(rows, cols)
    yield "mxfp4", mxfp4

    w8 = load(d, "mxfp8_mlx", "weight").view(rows * cols // 32, 32)
    s8 = load(d, "mxfp8_mlx", "scales").view(rows * cols // 32, 1)

    def mxfp8_mlx():
        scale = torch.pow(2.0, s8.to(torch.bfloat16) - 127)
        return (lut8_bf16[w8.long()] * scale).view(rows, cols)
    yield "mxfp8_mlx", mxfp8_mlx

    packed4 = load(d, "nvfp4", "packed").view(rows, cols // 2)
    s4 = load(d, "nvfp4", "scales").view(rows, cols // 16)
    g = load(d, "nvfp4", "global", np.float32)
    e2m1 = torch.tensor(E2M1_MODELOPT, dtype=torch.float32)

    def nvfp4():
        x = torch.stack((e2m1[(packed4 & 0x0F).long()], e2m1[(packed4 >> 4).long()]), dim=-1).view(rows, cols)
        bs = lut8[s4.long()] * g
        return (x.view(rows, cols // 16, 16) * bs[..., None]).view(rows, cols).to(torch.bfloat16)
    yield "nvfp4", nvfp4


if __name__ == "__main__":
    run(cases)
