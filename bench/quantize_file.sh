#!/usr/bin/env bash
# Whole-file quantize: llama.cpp's llama-quantize against `amn forget --to gguf` on the same
# F16 GGUF, with the same thread count, timed alternately round by round (so that a shared
# machine disturbs both alike), then every output tensor's bytes compared (amn hash
# --gguf-hash: llama.cpp gguf-hash's per-tensor lines, of both outputs).
#
#   AMN_BENCH_LLAMA_QUANTIZE=/path/llama-quantize bench/quantize_file.sh IN.gguf [TYPE] [THREADS] [ROUNDS]
#
# TYPE: a llama-quantize file type (default Q4_K_M); THREADS: default every core; ROUNDS:
# default 3. llama-quantize is not built by this repository: point at a build of it (its
# shared libraries are found beside it: LD_LIBRARY_PATH is set to its folder). IN: e.g.
# bench/make_llama_f16.py's 1.1 GiB model. AMN: the amn to run (default build/native/amn).
# Outputs go to a temporary folder, removed at the end. Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
in=${1:?usage: AMN_BENCH_LLAMA_QUANTIZE=/path/llama-quantize bench/quantize_file.sh IN.gguf [TYPE] [THREADS] [ROUNDS]}
type=${2:-Q4_K_M}
threads=${3:-$(nproc)}
rounds=${4:-3}
amn=${AMN:-build/native/amn}
quantize=${AMN_BENCH_LLAMA_QUANTIZE:?set AMN_BENCH_LLAMA_QUANTIZE to a llama-quantize}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
run_llama() { LD_LIBRARY_PATH="$(dirname "$quantize")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$quantize" "$in" "$tmp/llama.gguf" "$type" "$threads"; }
run_amn() { "$amn" forget "$in" --to gguf --scheme "$type" --threads "$threads" -o "$tmp/amn.gguf" --force --no-sync -q; }

echo "Whole-file quantize of $(basename "$in") ($(du -h "$in" | cut -f1)) to $type, $threads threads, $rounds rounds alternately"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($(nproc) cores)"
echo
echo "| round | llama-quantize (s) | amn (s) | llama-quantize / amn |"
echo "|---:|---:|---:|---:|"
best_llama=1e9 best_amn=1e9
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then l=$(seconds run_llama); a=$(seconds run_amn); else a=$(seconds run_amn); l=$(seconds run_llama); fi
  printf '| %d | %.2f | %.2f | %.2f |\n' "$r" "$l" "$a" "$(echo "$l / $a" | bc -l)"
  best_llama=$(awk -v a="$l" -v b="$best_llama" 'BEGIN { print (a < b ? a : b) }')
  best_amn=$(awk -v a="$a" -v b="$best_amn" 'BEGIN { print (a < b ? a : b) }')
done
printf '| best | %.2f | %.2f | %.2f |\n' "$best_llama" "$best_amn" "$(echo "$best_llama / $best_amn" | bc -l)"
echo
# gguf-hash's lines: "<hash>  <file>:<tensor>" per tensor, then the whole model's; the
# tensor lines of both outputs, file names left out.
tensor_hashes() { "$amn" hash "$1" --gguf-hash | grep -F "$1:" | sed "s|$1:||" | sort; }
tensor_hashes "$tmp/llama.gguf" >"$tmp/llama.hashes"
tensor_hashes "$tmp/amn.gguf" >"$tmp/amn.hashes"
n=$(grep -c . "$tmp/llama.hashes" || true)
if [ "$n" -gt 0 ] && cmp -s "$tmp/llama.hashes" "$tmp/amn.hashes"; then
  echo "tensors: identical ($n hash lines: xxh64, sha1, sha256 of every tensor's bytes)"
else
  echo "tensors: DIFFERENT"; diff "$tmp/llama.hashes" "$tmp/amn.hashes" | head -20; exit 1
fi
