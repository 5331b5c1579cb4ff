#!/usr/bin/python3
"""The producers' own CPU quantizers, the peers of bench/bench_forget.cpp, on the very same input.

    bench_forget --write-inputs DIR    # writes DIR/input.f32.bin and our outputs
    AMN_HARNESS=... AMN_MXFP_HARNESS=... /usr/bin/python3 bench/forget_torch.py DIR [rows cols]

The peers' code is not in this repository (nothing fetched is committed): it is the scratch
harness the lethe fixtures were made with (fixtures/lethe/*/README.md say what it lifts, from
which commit, and what it substitutes), imported from AMN_HARNESS (default
/tmp/amn-quant-harness) and AMN_MXFP_HARNESS (default /tmp/forget3_mxfp). It execs the
producers' functions unchanged under Debian's torch 1.13:
  nf4, fp4 (_dq)    bitsandbytes functional.quantize_4bit, blocksize 64, whose CPU path is the
                    `default` backend's torch kernel (absmax per block, scaled, bucketize against
                    the midpoints); _dq: compress_statistics=True, the absmax mean offset and
                    quantize_blockwise(256) through bitsandbytes' own C++ CPU kernel
                    (csrc/cpu_ops.cpp, built outside the repository)
  int8              Int8Params._quantize: the weight to float16, then int8_vectorwise_quant
  fp8_block         transformers' FineGrainedFP8 Fp8Quantize.convert (128 x 128 tiles)
  fp8_channel/tensor  llm-compressor model_free_ptq: memoryless_minmax observer,
                    compressed-tensors calculate_qparams and _quantize (FP8 E4M3, F32 weight)
  mxfp4             triton_kernels' downcast_to_mxfp_torch (transformers' quantize_to_mxfp4:
                    the weight to bfloat16 first), along the rows
  nvfp4             model_free_ptq with the NVFP4 preset: global scale, E4M3 group scales,
                    cast_to_fp4, pack_fp4_to_uint8
MLX does not run here (no Linux wheel for this Python): no MLX peer.

torch 1.13 has no float8 dtypes: the harness replaces `.to(torch.float8_e4m3fn)` by c10's
fp8e4m3fn_from_fp32_value transliterated in NumPy (boolean masks over the whole tensor),
slower than the real cast of torch >= 2.1. So the FP8 rows also give the time of that emulated
cast alone (timed on the same values it casts) and the peer's rate without it: the peer's
floor, which flatters the peer (the real cast is not free). Timing: one thread
(torch.set_num_threads(1), as ours), best of 5 runs, Melem/s of the input's elements; then
the count of output bytes that differ from ours, per output (0: the same bytes).
"""
import os
import sys
import time

import numpy as np
import torch

sys.path[:0] = [os.environ.get("AMN_HARNESS", "/tmp/amn-quant-harness"),
                os.environ.get("AMN_MXFP_HARNESS", "/tmp/forget3_mxfp")]
import harness as h  # noqa: E402
import ct_quant as c  # noqa: E402
import mxfp_torch  # noqa: E402

RUNS = 5


def best(fn):
    t, out = 1e30, None
    for _ in range(RUNS):
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def as_bytes(x):
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    if isinstance(x, (c.F8Tensor, h._F8Tensor)):
        return np.ascontiguousarray(x.codes).reshape(-1).view(np.uint8)
    return x.detach().contiguous().reshape(-1).numpy().view(np.uint8)


def differ(d, case, parts):
    """{part: bytes differing from DIR/<case>.<part>.bin} ("size" when the sizes differ)."""
    out = []
    for part, theirs in parts.items():
        ours = np.fromfile(os.path.join(d, f"{case}.{part}.bin"), dtype=np.uint8)
        b = as_bytes(theirs)
        out.append(f"{part} {int(np.count_nonzero(ours != b)) if b.size == ours.size else 'size'}")
    return ", ".join(out)


def cases(d, a, rows, cols):
    """(name, run, parts(result) -> {part: tensor}, cast: None or a function timing the emulated cast)."""
    bnb = h.bnb_namespace()  # quantize_blockwise: bitsandbytes' C++ CPU kernel
    for qt in ("nf4", "fp4"):
        for nested in (False, True):
            def run(qt=qt, nested=nested):
                return bnb["quantize_4bit"](a, blocksize=64, compress_statistics=nested, quant_type=qt)

            def parts(r, nested=nested):
                packed, qs = r
                if not nested:
                    return {"packed": packed, "absmax": qs.absmax}
                return {"packed": packed, "absmax_codes": qs.absmax, "nested_absmax": qs.state2.absmax,
                        "offset": torch.tensor([float(qs.offset)], dtype=torch.float32)}
            yield qt + ("_dq" if nested else ""), run, parts, None

    yield ("int8", lambda: bnb["int8_vectorwise_quant"](a.contiguous().to(dtype=torch.float16)),
           lambda r: {"weight": r[0], "scb": r[1]}, None)

    convert = h.fp8_quantize_convert([128, 128])
    scale = torch.from_numpy(np.fromfile(os.path.join(d, "fp8_block.scale.bin"), np.float32))
    scale = scale.view(rows // 128, 1, cols // 128, 1)
    clamped = torch.clamp(a.view(rows // 128, 128, cols // 128, 128) * scale, -448.0, 448.0)
    yield ("fp8_block", lambda: convert({"w.weight": a}),
           lambda r: {"weight": r["w.weight"], "scale_inv": r["w.weight_scale_inv"]},
           lambda: h.f32_to_fp8_e4m3fn_c10(clamped))

    ns = c.namespace()
    S = ns["QuantizationStrategy"]
    for name, strategy in (("fp8_channel", S.CHANNEL), ("fp8_tensor", S.TENSOR)):
        args = c.args(ns, strategy=strategy)
        s = torch.from_numpy(np.fromfile(os.path.join(d, f"{name}.scale.bin"), np.float32))
        quotient = torch.clamp(a / (s.view(-1, 1) if strategy == S.CHANNEL else s), -448.0, 448.0)
        yield (name, lambda args=args: c.model_free_weight(ns, a, args),
               lambda r: {"weight": r[0], "scale": r[1]},
               lambda quotient=quotient: h.f32_to_fp8_e4m3fn_c10(quotient))

    yield ("mxfp4", lambda: mxfp_torch.downcast_to_mxfp_torch(a.to(torch.bfloat16), torch.uint8, axis=1),
           lambda r: {"blocks": r[0], "scales": r[1]}, None)

    nv = c.args(ns, num_bits=4, strategy=S.TENSOR_GROUP, group_size=16, scale_dtype=c.F8, zp_dtype=c.F8)

    def nvfp4():
        q, scale, gs = c.model_free_weight(ns, a, nv)
        return ns["pack_fp4_to_uint8"](q), scale.to(c.F8), gs  # NVFP4PackedCompressor.compress
    # the emulated casts here: the group scales (1/16 of the elements), in calculate_qparams and
    # again when they are stored
    group_scales = torch.from_numpy(np.fromfile(os.path.join(d, "nvfp4.scale.bin"), np.uint8).astype(np.float32))
    yield ("nvfp4", nvfp4, lambda r: {"packed": r[0], "scale": r[1], "global_scale": r[2]},
           lambda: (h.f32_to_fp8_e4m3fn_c10(group_scales), h.f32_to_fp8_e4m3fn_c10(group_scales)))


def main():
    d = sys.argv[1]
    rows, cols = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (4096, 11008)
    only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
    torch.set_num_threads(1)
    n = rows * cols
    a = torch.from_numpy(np.fromfile(os.path.join(d, "input.f32.bin"), np.float32)).view(rows, cols)
    print(f"PyTorch {torch.__version__} CPU, one thread, {rows} x {cols} F32, best of {RUNS}, Melem/s; "
          "the FP8 rows: the emulated E4M3 cast's share and the rate without it\n")
    print("| case | producer (torch) | emulated cast, s | without the cast | bytes differing from ours |")
    print("|---|---:|---:|---:|---|")
    for name, run, parts, cast in cases(d, a, rows, cols):
        if only and name not in only:
            continue
        t, r = best(run)
        tc = best(cast)[0] if cast else None
        cast_cells = f"{tc:.2f} | {n / (t - tc) / 1e6:.0f}" if tc is not None else "- | -"
        print(f"| {name} | {n / t / 1e6:.1f} | {cast_cells} | {differ(d, name, parts(r))} |", flush=True)


if __name__ == "__main__":
    main()
