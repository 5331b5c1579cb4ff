// ggml_quantize_chunk's F16 and BF16 targets: ggml's own element conversions
// (ggml_fp32_to_fp16_row, ggml_fp32_to_bf16_row_ref), which differ from amn's casts only
// in the NaNs they write (quantize_search.h).
#include <cstring>

#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_search.h"

namespace amn::ggml {
namespace {
template <uint16_t (*kConvert)(float)>
size_t convert_rows(const float* src, void* dst, int64_t nrows, int64_t n_per_row) {
  const int64_t n = nrows * n_per_row;
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = kConvert(src[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
  return static_cast<size_t>(n) * 2;
}
}  // namespace

size_t quantize_f16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return convert_rows<fp32_to_fp16>(src, dst, nrows, n_per_row);
}

size_t quantize_bf16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return convert_rows<fp32_to_bf16>(src, dst, nrows, n_per_row);
}

}  // namespace amn::ggml
