"""anamnesis vs the producers' own loaders, in one session on the same files (GitHub issue 5).

  /usr/bin/python3 bench/numpy_torch.py [--inputs DIR] [--amn PATH] [--native PATH] [--runs N]

Inputs come from bench/make_bench_inputs.py (made in a temporary folder when --inputs is
not given): torchvision's ResNet-50 and ViT-B/16 state dicts as torch.save ZIP files and as
np.savez archives, and one 256 MiB .npy. Times, best of N wall-clock runs after a warm-up:

- inspect: `amn inspect --json` (a process per run), the same in-process (bench_numpy_torch)
  and in the npm package under Node (bench/numpy_torch.mjs), against
  torch.load(weights_only=True) or, for .npz, numpy reading every array's header;
- convert to safetensors: `amn convert` against torch.load / numpy.load plus a small
  pure-Python safetensors writer (the safetensors package is not installed here); amn is
  timed durable (the default: fsync of the file and its folder) and with --no-sync (the
  same temporary name and rename, no fsync), to show what durability costs;
- NPY header parse: per header, against numpy.load(mmap_mode='r'), numpy's own header
  reader on an open file, and npyjs in Node.

Prints markdown tables for docs/benchmarks.md. Run with Debian's python3 (torch 1.13,
numpy 1.24); speed is never asserted.
"""
import argparse
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = ("resnet50", "vit_b_16")


def best(runs, fn):
    fn()  # warm-up: page cache, imports, allocator
    t = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


# --- the Python peers -------------------------------------------------------------------

SAFETENSORS_DTYPES = {
    np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
    np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
    np.dtype("int8"): "I8", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL",
}


def write_safetensors(path, arrays, sync=False):
    """The safetensors format as its spec states it: u64 header length, JSON header
    (padded with spaces to 8 bytes), then each tensor's little-endian C-order bytes."""
    header, offset, blobs = {}, 0, []
    for name, a in arrays.items():
        a = a if a.flags.c_contiguous else a.copy(order="C")  # ascontiguousarray makes 0-d 1-d
        if a.dtype.byteorder == ">":
            a = a.byteswap().newbyteorder()
        header[name] = {"dtype": SAFETENSORS_DTYPES[a.dtype.newbyteorder("=")],
                        "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in blobs:
            f.write(memoryview(a.reshape(-1)).cast("B"))
        if sync:  # what amn's output does before its rename: file, then folder
            f.flush()
            os.fsync(f.fileno())
    if sync:
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        os.fsync(folder)
        os.close(folder)


def torch_load(path):
    return torch.load(path, map_location="cpu", weights_only=True)


def torch_convert(path, out, sync=False):
    write_safetensors(out, {k: v.contiguous().numpy() for k, v in torch_load(path).items()}, sync)


def numpy_convert(path, out, sync=False):
    with np.load(path) as z:
        write_safetensors(out, {k: z[k] for k in z.files}, sync)


def numpy_npz_headers(path):
    """What inspecting an .npz takes with numpy's own code: every array's header, no data."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            with z.open(name) as f:
                version = np.lib.format.read_magic(f)
                out[name] = np.lib.format._read_array_header(f, version)
    return out


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        header.pop("__metadata__", None)
        return {k: (v["dtype"], v["shape"], base + v["data_offsets"][0], base + v["data_offsets"][1])
                for k, v in header.items()}


def same_tensors(a, b):
    """True when two safetensors files hold the same names, dtypes, shapes and bytes."""
    ha, hb = read_safetensors(a), read_safetensors(b)
    if {k: v[:2] for k, v in ha.items()} != {k: v[:2] for k, v in hb.items()}:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for k, (_, _, s, e) in ha.items():
            fa.seek(s)
            fb.seek(hb[k][2])
            if fa.read(e - s) != fb.read(hb[k][3] - hb[k][2]):
                return False
    return True


def in_child(runs, fn, *args, repeat=1, env=None):
    """Best of `runs` child interpreters, each timing `repeat` calls of numpy_torch.fn(*args)
    (imports not timed)."""
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); import numpy_torch as m; "
            "r = int(sys.argv[3]); f = getattr(m, sys.argv[2]); ts = []\n"
            "for _ in range(r):\n"
            "    t = time.perf_counter(); f(*sys.argv[4:]); ts.append(time.perf_counter() - t)\n"
            "print(min(ts))")
    # One thread, like amn; and no bench/__pycache__ left behind by the children's import.
    env = dict(env or os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    out = float("inf")
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code, HERE, fn, str(repeat), *args], env=env,
                           check=True, capture_output=True, text=True)
        out = min(out, float(r.stdout))
    return out


def fresh(runs, fn, *args):
    """One call per new interpreter: what a script that loads one checkpoint sees. Its
    allocator has no freed memory to reuse, so every tensor page is faulted in, which on
    this VM costs ~20 us per 4 KiB page."""
    return in_child(runs, fn, *args)


def warm(runs, fn, *args):
    """The best of repeated calls in one interpreter whose glibc keeps freed memory (tensors
    under 32 MiB from the heap, never trimmed): no page faults, the peer's best case."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TRIM_THRESHOLD_=str(1 << 40))
    return in_child(1, fn, *args, repeat=runs + 1, env=env)


def convert_then_remove(kind, src, out, sync=""):
    """One conversion for fresh(): kind is "torch" or "numpy"; sync non-empty to fsync."""
    if os.path.exists(out):
        os.remove(out)
    (torch_convert if kind == "torch" else numpy_convert)(src, out, bool(sync))


# --- anamnesis --------------------------------------------------------------------------

def run(cmd, env=None):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)


def parse_lines(text):
    """key<TAB>file<TAB>seconds<TAB>tensors lines -> {(key, file): seconds}."""
    out = {}
    for line in text.splitlines():
        key, name, seconds, _ = line.split("\t")
        out[(key, name)] = float(seconds)
    return out


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(ROOT, "node_modules", "npyjs", "package.json")) as f:
        npyjs = json.load(f)["version"]
    return (f"- CPU: {cpu} ({os.cpu_count()} cores), {mem:.0f} GiB; {platform.system()} {platform.release()}\n"
            f"- Python {platform.python_version()}, torch {torch.__version__}, numpy {np.__version__}; "
            f"Node {node}, npyjs {npyjs}")


def ms(seconds):
    return f"{seconds * 1e3:.1f}" if seconds >= 0.01 else f"{seconds * 1e3:.2f}"


def ratio(peer, ours):
    return f"{peer / ours:.1f}×"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", help="folder from make_bench_inputs.py (default: made in a temp folder)")
    ap.add_argument("--amn", default=os.path.join(ROOT, "build/bench/amn"))
    ap.add_argument("--native", default=os.path.join(ROOT, "build/bench/bench/bench_numpy_torch"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)  # torch.load is single-threaded anyway; so is amn

    tmp = tempfile.mkdtemp(prefix="amn-np-torch-")
    try:
        inputs = args.inputs
        if not inputs:
            inputs = os.path.join(tmp, "in")
            subprocess.run([sys.executable, os.path.join(HERE, "make_bench_inputs.py"), inputs],
                           check=True, stdout=subprocess.DEVNULL)
        path = lambda name: os.path.join(inputs, name)
        load_before = os.getloadavg()
        print("## NumPy and PyTorch (best of %d, ms)\n" % args.runs)
        print(machine())
        # The floor under every "(process)" column: starting a program that does nothing.
        print(f"- a process that does nothing (/bin/true) takes {ms(best(args.runs, lambda: run(['/bin/true'])))} ms here; "
              f"`python3 -c 'import torch'` takes {ms(best(2, lambda: run([sys.executable, '-c', 'import torch'])))} ms "
              "(not counted in the peers' times below)")
        print()

        # Inspect: header-only, every tensor's name, dtype, shape and offset.
        archives = [f"{m}.pth" for m in MODELS] + [f"{m}.npz" for m in MODELS]
        native = parse_lines(subprocess.run([args.native, "inspect"] + [path(f) for f in archives],
                                            check=True, capture_output=True, text=True).stdout)
        wasm = parse_lines(subprocess.run(["node", os.path.join(HERE, "numpy_torch.mjs"), "inspect"]
                                          + [path(f) for f in archives],
                                          check=True, capture_output=True, text=True, cwd=ROOT).stdout)
        print("| inspect | tensors | amn CLI (process) | amn in-process | amn npm (WASM, Node) "
              "| Python peer | peer, fresh process | peer, warm | fresh peer / amn CLI | warm peer / amn in-process |")
        print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
        for f in archives:
            cli = best(args.runs, lambda: run([args.amn, "inspect", "--json", path(f)]))
            if f.endswith(".pth"):
                peer_name, fn = "torch.load(weights_only=True)", "torch_load"
            else:
                peer_name, fn = "zipfile + numpy header reads", "numpy_npz_headers"
            tensors = len(globals()[fn](path(f)))
            peer_fresh = fresh(args.runs, fn, path(f))
            peer_warm = warm(args.runs, fn, path(f))
            ours = native[("info", f)]
            print(f"| {f} | {tensors} | {ms(cli)} | {ms(ours)} | {ms(wasm[('wasm-info', f)])} | {peer_name} "
                  f"| {ms(peer_fresh)} | {ms(peer_warm)} | {ratio(peer_fresh, cli)} | {ratio(peer_warm, ours)} |")
        print()

        # Convert to safetensors, lossless; both outputs checked to hold the same tensors.
        print("| convert to safetensors | MiB | amn convert (process; fsyncs) | amn convert --no-sync "
              "| Python peer | peer, fresh process | peer, fresh + fsync | peer, warm "
              "| fresh + fsync / amn | fresh peer / amn --no-sync | warm peer / amn --no-sync |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
        for f in archives:
            ours_out, peer_out = os.path.join(tmp, "amn.safetensors"), os.path.join(tmp, "py.safetensors")
            kind = "torch" if f.endswith(".pth") else "numpy"

            def amn_convert(*flags):
                if os.path.exists(ours_out):
                    os.remove(ours_out)
                run([args.amn, "convert", path(f), "--to", "safetensors", "-o", ours_out, "-q", *flags])

            cli = best(args.runs, amn_convert)
            cli_nosync = best(args.runs, lambda: amn_convert("--no-sync"))
            peer_fresh = fresh(args.runs, "convert_then_remove", kind, path(f), peer_out)
            peer_sync = fresh(args.runs, "convert_then_remove", kind, path(f), peer_out, "sync")
            peer_warm = warm(args.runs, "convert_then_remove", kind, path(f), peer_out)
            if not same_tensors(ours_out, peer_out):
                sys.exit(f"{f}: amn convert and the Python writer disagree")
            peer_name = "torch.load + writer" if kind == "torch" else "numpy.load + writer"
            mib = os.path.getsize(path(f)) / 2**20
            print(f"| {f} | {mib:.0f} | {ms(cli)} | {ms(cli_nosync)} | {peer_name} | {ms(peer_fresh)} "
                  f"| {ms(peer_sync)} | {ms(peer_warm)} | {ratio(peer_sync, cli)} | {ratio(peer_fresh, cli_nosync)} "
                  f"| {ratio(peer_warm, cli_nosync)} |")
            os.remove(ours_out)
            os.remove(peer_out)
        print()

        # NPY header parse: per header of one 8192 x 8192 float32 .npy (256 MiB).
        big = path("big.npy")
        headers = 2000
        native = parse_lines(subprocess.run([args.native, "npy", big], check=True,
                                            capture_output=True, text=True).stdout)
        js = parse_lines(subprocess.run(["node", os.path.join(HERE, "numpy_torch.mjs"), "npy", big],
                                        check=True, capture_output=True, text=True, cwd=ROOT).stdout)

        def numpy_mmap():
            for _ in range(headers):
                a = np.load(big, mmap_mode="r")
                del a

        def numpy_header():
            with open(big, "rb") as fh:
                for _ in range(headers):
                    fh.seek(0)
                    np.lib.format._read_array_header(fh, np.lib.format.read_magic(fh))

        cli = best(args.runs, lambda: run([args.amn, "inspect", "--json", big]))
        rows = [
            ("amn CLI `inspect --json` (a process per header)", cli),
            ("amn native: open the file + parse (mmap)", native[("npy-open", "big.npy")]),
            ("amn native: parse, file already open", native[("npy-parse", "big.npy")]),
            ("amn npm (WASM, Node): open(path) + info", js[("wasm-npy-open", "big.npy")]),
            ("amn npm (WASM, Node): open(bytes in memory) + info", js[("wasm-npy-bytes", "big.npy")]),
            ("numpy.load(mmap_mode='r')", best(args.runs, numpy_mmap) / headers),
            ("numpy format: read_magic + header, file already open", best(args.runs, numpy_header) / headers),
            ("npyjs.parse(whole file already in memory)", js[("npyjs-parse", "big.npy")]),
            ("npyjs: readFile + parse (it needs every byte)", js[("npyjs-read", "big.npy")]),
        ]
        print("| NPY header parse (256 MiB file) | µs per header | headers/s |")
        print("|---|---:|---:|")
        for name, s in rows:
            print(f"| {name} | {s * 1e6:,.1f} | {1 / s:,.0f} |")
        print()
        load_after = os.getloadavg()
        print(f"Load average (1/5/15 min) before: {load_before[0]:.1f} / {load_before[1]:.1f} / {load_before[2]:.1f}, "
              f"after: {load_after[0]:.1f} / {load_after[1]:.1f} / {load_after[2]:.1f} "
              f"({os.cpu_count()} cores, shared with other work).")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
