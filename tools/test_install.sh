#!/usr/bin/env bash
# make test-install: installs the native build into a scratch prefix and uses it as a
# user would: builds examples/ with find_package(anamnesis CONFIG), runs each on bundled
# fixtures and checks what it prints, builds one again with pkg-config alone, and checks
# that the library exports the API and nothing else.
#   tools/test_install.sh [build folder, default: build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix=$(realpath -m "$build/prefix")
work=$(realpath -m "$build/install-test")
rm -rf "$prefix" "$work"
mkdir -p "$work"
cmake --install "$build/native" --prefix "$prefix" >/dev/null

cmake -S examples -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
ninja --quiet -C "$work/examples"
inspect=$work/examples/inspect/inspect_model
remember=$work/examples/remember/remember_model
convert=$work/examples/convert/convert_model
diff=$work/examples/diff/diff_models

failures=0
# expect NAME STATUS LINE COMMAND...: COMMAND exits with STATUS and prints LINE as one whole
# line (stdout and stderr together).
expect() {
  local name=$1 status=$2 line=$3
  shift 3
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qxF -- "$line" <<<"$out"; then
    echo "test-install: FAIL $name: exit $rc (expected $status); expected the line: $line" >&2
    head -20 <<<"$out" | sed 's/^/    /' >&2
    failures=$((failures + 1))
  else
    echo "test-install: ok   $name"
  fi
}

mlp=fixtures/models/tiny-mlp
sharded=fixtures/models/tiny-sharded
gptq=fixtures/quantized/gptq/w4_g128_sym_v1
q_proj=model.layers.0.self_attn.q_proj.weight

expect "inspect a file" 0 "model.layers.0.fc2.weight BF16 [32x128] 8192 bytes" "$inspect" "$mlp/model.safetensors"
expect "inspect a sharded folder" 0 "safetensors, 18 tensors" "$inspect" "$sharded"
expect "inspect lists a quantized weight once" 0 \
  "$q_proj F16 [256x512] 70144 bytes (gptq: 4-bit, group 128, sym, gptq (v1) zeros (quantize_config.json))" \
  "$inspect" "$gptq/model.safetensors"
expect "inspect a missing file" 1 "error [io]: cannot open no-such.safetensors: no such file or folder" \
  "$inspect" no-such.safetensors

expect "remember a BF16 tensor as F32" 0 \
  "model.layers.0.fc2.weight F32, 4096 values: 0.00497437 0.0446777 -0.00263977 -0.0859375" \
  "$remember" "$mlp" model.layers.0.fc2.weight
# Every value of a GPTQ weight, dequantized by the library to F32, against the expected
# F32 values (expected.safetensors' <name>@f32: the exact product, rounded once, as
# GPTQModel's convert_gptq_file computes it; %.6g prints every value the same way on both
# sides), compared as a digest of the printed values (131,072 of them, names cut off).
digest() { bash -c 'set -o pipefail; "$@" | cut -d: -f2- | sha256sum | cut -c1-64' _ "$@"; }
expect "the producer's GPTQ values print" 0 "$q_proj F32, 131072 values: -0.0266724 -0.0177765" \
  "$remember" "$gptq/expected.safetensors" "$q_proj" 2
want=$(digest "$remember" "$gptq/expected.safetensors" "$q_proj@f32" 1000000)
expect "remember a GPTQ weight as its producer does" 0 "$want" \
  digest "$remember" "$gptq/model.safetensors" "$q_proj" 1000000
expect "remember a missing tensor" 1 "error [not_found]: no tensor named 'nope'" "$remember" "$mlp" nope

out=$work/tiny-sharded-bf16
expect "convert a sharded folder" 0 "read back: 18 of 18 tensors identical" "$convert" "$sharded" "$out"
expect "convert writes shards and an index" 0 "  $out/model.safetensors.index.json" "$convert" "$sharded" "$out"
expect "convert refuses to write over its input" 1 \
  "error [invalid_argument]: $sharded holds an input of this conversion (model.safetensors.index.json)" \
  "$convert" "$sharded" "$sharded"

# diff, stats and hash. The numbers are not amn's: the diff's are gguf-py's dequantizers'
# (fixtures/diff/tiny-Q4_K_M.expected.json), the statistics numpy's over gguf-py's reading
# of the F16 tensor, the values' SHA-256 hashlib's (fixtures/gguf/same_values/expected.json).
f16=fixtures/gguf_ftype/tiny_llama_f16.gguf
q4=fixtures/gguf_ftype/tiny-Q4_K_M.gguf
same=fixtures/gguf/same_values
expect "diff an F16 GGUF against its Q4_K_M" 3 \
  "token_embd.weight different max|d| 0.0218 cosine 0.9976 snr 23.15 dB" "$diff" "$f16" "$q4"
expect "diff counts the statuses" 3 "30 tensors: 23 different 7 identical" "$diff" "$f16" "$q4"
expect "stats of the tensor with the lowest SNR" 3 \
  "lowest SNR: blk.0.attn_q.weight; in A: min -0.6084 max 0.4128 mean -0.0002097 std 0.0296" "$diff" "$f16" "$q4"
expect "diff a model with itself" 0 "30 tensors: 30 identical" "$diff" "$q4" "$q4"
expect "Q8_0 blocks and F32 hold the same values" 3 \
  "same values: sha256 8a707661754c87e17fab02a52cd9c640259774b3b40ec86d728e305ffaaf537e" "$diff" "$same/q8_0.gguf" "$same/f32.gguf"
expect "diff a missing file" 1 "error [io]: cannot open no-such.gguf: no such file or folder" "$diff" "$q4" no-such.gguf

# pkg-config, from the installed anamnesis.pc alone (it finds its prefix from its own folder).
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
flags=$(pkg-config --cflags --libs anamnesis)
read -r -a words <<<"$flags"
summary=""
for w in "${words[@]}"; do
  case $w in
    -I*) summary+=" -I$(realpath -m "${w#-I}")" ;;
    -L*) summary+=" -L$(realpath -m "${w#-L}")" ;;
    *) summary+=" $w" ;;
  esac
done
expect "pkg-config --cflags --libs" 0 " -I$prefix/include -L$prefix/lib -lanamnesis" echo "$summary"
g++ -std=c++17 -o "$work/inspect_pc" examples/inspect/inspect_model.cpp "${words[@]}" -Wl,-rpath,"$prefix/lib"
expect "an example built with pkg-config" 0 "safetensors, 11 tensors" "$work/inspect_pc" "$mlp"

# Only the API is exported: every defined dynamic symbol is in namespace anamnesis.
lib=$(realpath "$prefix/lib/libanamnesis.so")
others=$(nm -DC --defined-only "$lib" | cut -d' ' -f3- | grep -v '^anamnesis::' || true)
expect "the library exports only namespace anamnesis" 0 "" echo "$others"

if [ "$failures" -ne 0 ]; then
  echo "test-install: $failures check(s) failed" >&2
  exit 1
fi
echo "test-install: the installed package builds and runs every example"
