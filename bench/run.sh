#!/usr/bin/env bash
# Runs every benchmark and prints markdown for docs/benchmarks.md. `make bench` calls it
# with the native bench build folder; the WASM figures come from the npm package (Node).
# Not part of `make test`: speed is measured here, never asserted in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
native=${1:-build/bench}
export NODE_PATH=/usr/share/nodejs
echo "## Machine"; echo
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores), $(free -g | awk '/Mem:/{print $2}') GiB"
echo "- $(uname -sr); $(c++ --version | head -1); $(emcc --version 2>/dev/null | head -1 | cut -c1-60); Node $(node --version)"
echo; echo "## Float casts (Melem/s, single thread)"; echo
"$native/bench/bench_cast"
if [ -f build/wasm-bench/bench/bench_cast.js ] || {
     emcmake cmake -S . -B build/wasm-bench -G Ninja -DAMN_BUILD_BENCH=ON -DAMN_BUILD_TESTS=OFF >/dev/null &&
     ninja -C build/wasm-bench bench_cast >/dev/null; }; then
  echo; echo "WASM SIMD128 (Node):"; echo
  node --no-experimental-fetch build/wasm-bench/bench/bench_cast.js
fi
echo; echo "## GGUF block dequantization to F32 (Melem/s, single thread)"; echo
"$native/bench/bench_ggml"
echo; echo "## Quantized safetensors dequantization to BF16 (Melem/s, 4096 x 11008, single thread)"; echo
qdir=$(mktemp -d)  # ~1 GiB of inputs and outputs, shared with the PyTorch peer
"$native/bench/bench_quant" --write-inputs "$qdir"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo; /usr/bin/python3 bench/quant_torch.py "$qdir"
fi
rm -rf "$qdir"
if [ -f build/wasm-bench/bench/bench_quant.js ] || ninja -C build/wasm-bench bench_quant >/dev/null; then
  echo; echo "WASM SIMD128 (Node):"; echo
  node --no-experimental-fetch build/wasm-bench/bench/bench_quant.js
fi
echo; echo "## Quantized safetensors: integer schemes, to BF16 (Melem/s, 4096 x 11008, single thread)"; echo
qidir=$(mktemp -d)  # ~0.4 GiB of inputs and outputs, shared with the PyTorch peer
"$native/bench/bench_quant_int" --write-inputs "$qidir"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo; /usr/bin/python3 bench/quant_int_torch.py "$qidir"
fi
rm -rf "$qidir"
if [ -f build/wasm-bench/bench/bench_quant_int.js ] || ninja -C build/wasm-bench bench_quant_int >/dev/null; then
  echo; echo "WASM SIMD128 (Node):"; echo
  node --no-experimental-fetch build/wasm-bench/bench/bench_quant_int.js
fi
echo; echo "## safetensors header parse (median of 15, ms)"; echo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node bench/make_big_header.mjs "$tmp/big.safetensors" >/dev/null
node bench/header.mjs "$tmp/big.safetensors"
"$native/bench/bench_header" "$tmp/big.safetensors"
# NumPy / PyTorch peers (Debian's python3-torch, -torchvision, -numpy; npyjs from npm): about
# 1 GB of inputs in a temp folder, made by the producers themselves (make_bench_inputs.py).
if /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo; /usr/bin/python3 bench/numpy_torch.py --amn "$native/amn" --native "$native/bench/bench_numpy_torch"
fi
