#!/usr/bin/python3
"""Fails when an #include "..." crosses a layer upward (docs/architecture.md, "Layers"),
or when a file forward-declares a class that a higher layer defines (a lower layer naming
a type it cannot include is the same dependency, spelled differently).

Run from anywhere: python3 tools/check_layers.py [repository root]. CTest runs it
(tests_native/CMakeLists.txt). Every violation is printed; the exit status is 1 when one
is not in KNOWN_VIOLATIONS (or a known one is gone, so that the list cannot go stale).
"""
import os
import re
import sys

# The layers, lowest first. A file may include its own layer and the layers below it,
# never one above or beside it: src/<layer>/..., bindings/ and include/ (the public API).
LAYERS = [
    ["core"],      # Result/Error, limits, byte sources, dtypes, ggml type traits, JSON writer
    ["kernels"],   # casts, ggml blocks, quantization families
    ["formats"],   # one folder per container
    ["schemes"],   # quantized weights in safetensors
    ["convert"],   # planner and executor
    ["report"],    # model-info JSON and tables
    ["session"],   # open, typed requests, output policy
    ["cli", "bindings", "api"],  # the surfaces: none includes another
]
RANK = {layer: rank for rank, names in enumerate(LAYERS) for layer in names}

# Within formats: a format includes no other format except these; the files directly in
# src/formats/ (open.*: which format, which files) may include every format.
FORMAT_USES = {
    "npy": {"zip"},
    "pth": {"zip", "pickle"},
}

# Among the surfaces, one use: the public C++ API opens and writes local files through
# src/cli's native I/O (local_files, convert_local), which the amn binary uses too.
SURFACE_USES = {
    "api": {"cli"},
}

# Violations that exist and are being removed elsewhere, as (file, included file): none
# now (the session layer took scheme detection out of formats, and LogicalOp replaced
# core's forward declaration of SchemeOp).
KNOWN_VIOLATIONS = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
FORWARD = re.compile(r"^\s*(?:class|struct)\s+(\w+)\s*;")
DEFINITION = re.compile(r"^\s*(?:class|struct)\s+(\w+)\b[^;]*\{")
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".c", ".inc")


def layer_of(path):
    """(layer, format or None) of a repository-relative path; None when not layered."""
    parts = path.split("/")
    if parts[0] == "bindings":
        return "bindings", None
    if parts[0] == "include":
        return "api", None
    if parts[0] == "src" and len(parts) > 2 and parts[1] in RANK:
        fmt = parts[2] if parts[1] == "formats" and len(parts) > 3 else None
        return parts[1], fmt
    return None


def resolve(root, including, name):
    """The repository-relative path an include names, or None (a system or third-party
    header: Highway, simdjson, zlib, Catch2)."""
    for base in (os.path.dirname(including), "src", "include"):
        candidate = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate.replace(os.sep, "/")
    return None


def violation(src, dst):
    """Why src may not include dst, or None."""
    a, b = layer_of(src), layer_of(dst)
    if a is None or b is None:
        return None
    (la, fa), (lb, fb) = a, b
    if la != lb:
        if RANK[lb] < RANK[la] or lb in SURFACE_USES.get(la, set()):
            return None
        return f"{la} depends on {lb}" + (" (beside it)" if RANK[lb] == RANK[la] else " (above it)")
    if la == "formats" and fa is not None and fa != fb:
        if fb is None:
            return f"format {fa} includes src/formats/{os.path.basename(dst)}, which includes every format"
        if fb not in FORMAT_USES.get(fa, set()):
            return f"format {fa} includes format {fb}"
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    sources = {}  # path -> lines
    for top in ("src", "bindings", "include"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(SOURCE_EXTENSIONS):
                    src = os.path.relpath(os.path.join(folder, f), root).replace(os.sep, "/")
                    with open(os.path.join(root, src), encoding="utf-8") as text:
                        sources[src] = text.read().splitlines()
    defined_in = {}  # class name -> the headers that define it
    for src, lines in sources.items():
        if src.endswith((".h", ".hpp")):
            for line in lines:
                m = DEFINITION.match(line)
                if m:
                    defined_in.setdefault(m.group(1), set()).add(src)
    found = set()

    def report(src, number, dst, why, what):
        found.add((src, dst))
        known = " (known)" if (src, dst) in KNOWN_VIOLATIONS else ""
        print(f"{src}:{number}: {what} {dst}: {why}{known}")

    for src in sorted(sources):
        for number, line in enumerate(sources[src], 1):
            m = INCLUDE.match(line)
            dst = m and resolve(root, src, m.group(1))
            why = dst and violation(src, dst)
            if why:
                report(src, number, dst, why, "includes")
            m = FORWARD.match(line)
            for dst in sorted(defined_in.get(m.group(1), ())) if m else ():
                why = violation(src, dst)
                if why:
                    report(src, number, dst, why, f"forward-declares {m.group(1)}, defined in")
    new = found - KNOWN_VIOLATIONS
    gone = KNOWN_VIOLATIONS - found
    for src, dst in sorted(gone):
        print(f"KNOWN_VIOLATIONS lists {src} -> {dst}, which is gone: remove it from the list")
    if new or gone:
        print(f"check_layers: {len(new)} new violation(s), {len(gone)} stale known one(s)")
        return 1
    print(f"check_layers: no new violations ({len(found)} known)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
