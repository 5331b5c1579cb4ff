"""What the PyTorch peers of the quantized-safetensors benchmarks share (quant_torch.py,
quant_int_torch.py): reading the inputs `bench_quant* --write-inputs DIR` wrote, and
timing each case against our BF16 output on the very same bytes.

One thread (as ours), best of RUNS runs, Melem/s; then the count of output bytes that
differ from ours (0 means the same bytes).
"""
import os
import sys
import time

import numpy as np
import torch

RUNS = 5


def load(d, case, part, dtype=np.uint8):
    """DIR/<case>.<part>.bin as a 1-D tensor of dtype."""
    return torch.from_numpy(np.fromfile(os.path.join(d, f"{case}.{part}.bin"), dtype=dtype))


def run(cases):
    """`script DIR [rows cols]`: times every (name, fn) that cases(DIR, rows, cols) yields,
    fn returning the BF16 layer, and prints one markdown row per case."""
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
