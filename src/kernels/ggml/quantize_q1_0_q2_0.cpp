// Q1_0 and Q2_0 encoders: ggml's quantize_row_q1_0_ref / quantize_row_q2_0_ref, called by
// quantize_q1_0 / quantize_q2_0 (the imatrix only changes how ggml walks the rows, not
// the bytes, so it is ignored here). Unless the reference is forced (kernels/cast.h:
// AMN_FORCE_IMPL=scalar), the Highway kernels (quantize_low_bit_simd.cpp) write the same
// bytes.
#include <cmath>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"
#include "kernels/ggml/quantize_low_bit_simd.h"

namespace amn::ggml {

// Per 128: d = mean |x| (summed in order), and a set bit for every x >= 0.
size_t quantize_q1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  constexpr int qk = 128;
  const int64_t nb = nrows * (n_per_row / qk);
  if (!reference_impl_forced() && quantize_low_bit_simd(GgmlType::Q1_0, src, static_cast<uint8_t*>(dst), size_t(nb))) {
    return size_t(nb) * sizeof(block_q1_0);
  }
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float sum_abs = 0.0f;
    for (int j = 0; j < qk; ++j) sum_abs += std::fabs(x[j]);
    block_q1_0 b{};
    b.d = fp32_to_fp16(sum_abs / float(qk));
    for (int j = 0; j < qk; ++j) {
      if (x[j] >= 0.0f) b.qs[j / 8] |= uint8_t(1 << (j % 8));
    }
    quant::store_block(dst, size_t(i), b);
  }
  return size_t(nb) * sizeof(block_q1_0);
}

// Per 64: d = max |x|; q = clamp(round(x / d) + 1, 0, 3) (roundf: half away from zero).
size_t quantize_q2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  constexpr int qk = 64;
  const int64_t nb = nrows * (n_per_row / qk);
  if (!reference_impl_forced() && quantize_low_bit_simd(GgmlType::Q2_0, src, static_cast<uint8_t*>(dst), size_t(nb))) {
    return size_t(nb) * sizeof(block_q2_0);
  }
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) {
      const float a = std::fabs(x[j]);
      if (a > amax) amax = a;
    }
    const float d = amax;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    block_q2_0 b{};
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < qk; ++j) {
      const int32_t r = trunc_to_i32(std::round(x[j] * id));
      const int q = r < 0 ? 0 : r > 2 ? 3 : r + 1;  // (int)roundf + 1, clamped to [0, 3]
      b.qs[j / 4] |= uint8_t(q << ((j % 4) * 2));
    }
    quant::store_block(dst, size_t(i), b);
  }
  return size_t(nb) * sizeof(block_q2_0);
}

}  // namespace amn::ggml
