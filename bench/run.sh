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
# A WASM benchmark in Node, compiled by TurboFan up front (--no-liftoff): the steady state
# of a long-running page or process. V8 otherwise runs Liftoff's baseline code until
# TurboFan's background compile lands, and a benchmark's few long calls time part of it
# (bench/README.md, "WASM under TurboFan"). Builds the target when missing.
wasm_bench() {
  if [ -f "build/wasm-bench/bench/$1.js" ] || ninja -C build/wasm-bench "$1" >/dev/null; then
    echo; echo "WASM SIMD128 (Node):"; echo
    node --no-experimental-fetch --no-liftoff "build/wasm-bench/bench/$1.js"
  fi
}
if [ -f build/wasm-bench/bench/bench_cast.js ] || {
     emcmake cmake -S . -B build/wasm-bench -G Ninja -DAMN_BUILD_BENCH=ON -DAMN_BUILD_TESTS=OFF >/dev/null &&
     ninja -C build/wasm-bench bench_cast >/dev/null; }; then
  wasm_bench bench_cast
fi
echo; echo "## GGUF block dequantization to F32 (Melem/s, single thread)"; echo
"$native/bench/bench_ggml"
wasm_bench bench_ggml
# ggml's own quantizer, when the user names its library (never built here).
if [ -n "${AMN_BENCH_GGML:-}" ]; then
  echo; echo "## GGUF block quantization from F32 against ggml (Melem/s, single thread)"; echo
  "$native/bench/bench_ggml_quantize"
fi
# MLX's own quantizer, when the user names mlx-c's library (never built here).
if [ -n "${AMN_BENCH_MLX:-}" ]; then
  echo; echo "## MLX quantization against MLX's quantize (Melem/s, single thread)"; echo
  "$native/bench/bench_mlx"
fi
# A whole file against llama-quantize, when the user names one and an input
# (AMN_BENCH_QUANTIZE_FILE, e.g. bench/make_llama_f16.py's).
if [ -n "${AMN_BENCH_LLAMA_QUANTIZE:-}" ] && [ -n "${AMN_BENCH_QUANTIZE_FILE:-}" ]; then
  echo; echo "## Whole-file quantize against llama-quantize"; echo
  AMN="$native/amn" bench/quantize_file.sh "$AMN_BENCH_QUANTIZE_FILE"
fi
# A quantized-safetensors benchmark natively, its PyTorch peer on the same inputs (in a
# temporary folder: ~1 GiB of inputs and outputs) when torch imports, then the same
# benchmark in WASM (Node). $1: bench_quant or bench_quant_int; $2: the peer script.
quant_bench() {
  local dir
  dir=$(mktemp -d)
  "$native/bench/$1" --write-inputs "$dir"
  if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo; /usr/bin/python3 "bench/$2" "$dir"
  fi
  rm -rf "$dir"
  wasm_bench "$1"
}
echo; echo "## Quantized safetensors dequantization to BF16 (Melem/s, 4096 x 11008, single thread)"; echo
quant_bench bench_quant quant_torch.py
echo; echo "## Quantized safetensors: integer schemes, to BF16 (Melem/s, 4096 x 11008, single thread)"; echo
quant_bench bench_quant_int quant_int_torch.py
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
