// ggml_quantize_chunk's F16 and BF16 targets: ggml's own element conversions
// (ggml_fp32_to_fp16_row, ggml_fp32_to_bf16_row_ref), which differ from amn's casts only
// in the NaNs they write (quantize_search.h).
#include <algorithm>
#include <cstring>

#include "kernels/cast.h"

#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_search.h"

namespace amn::ggml {

// quantize_bf16_simd.cpp: n values with the current Highway target; false, nothing
// written, on Highway's one-lane target.
bool quantize_bf16_simd(const float* x, uint8_t* out, size_t n);

namespace {
// Runs of values without a NaN go through amn's SIMD cast (cast_floats: the same
// rounding as ggml's, round to nearest even, for every number); a run holding a NaN
// through ggml's own conversion, for the NaN it writes.
template <uint16_t (*kConvert)(float)>
size_t convert_rows(const float* src, void* dst, int64_t nrows, int64_t n_per_row, DType to) {
  constexpr int64_t kRun = 4096;
  const int64_t n = nrows * n_per_row;
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t at = 0; at < n; at += kRun) {
    const int64_t count = std::min(kRun, n - at);
    bool nan = false;
    for (int64_t i = 0; i < count; ++i) nan |= src[at + i] != src[at + i];
    if (!nan) {
      cast_floats(DType::F32, to, reinterpret_cast<const uint8_t*>(src + at), out + 2 * at, static_cast<uint64_t>(count));
      continue;
    }
    for (int64_t i = at; i < at + count; ++i) {
      const uint16_t h = kConvert(src[i]);
      std::memcpy(out + 2 * i, &h, 2);
    }
  }
  return static_cast<size_t>(n) * 2;
}
}  // namespace

size_t quantize_f16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return convert_rows<fp32_to_fp16>(src, dst, nrows, n_per_row, DType::F16);
}

// One pass with Highway (quantize_bf16_simd.cpp: ggml's conversion, NaN included) unless
// the reference is forced (kernels/cast.h: AMN_FORCE_IMPL=scalar).
size_t quantize_bf16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  const size_t n = static_cast<size_t>(nrows * n_per_row);
  if (!reference_impl_forced() && quantize_bf16_simd(src, static_cast<uint8_t*>(dst), n)) return 2 * n;
  return convert_rows<fp32_to_bf16>(src, dst, nrows, n_per_row, DType::BF16);
}

}  // namespace amn::ggml
