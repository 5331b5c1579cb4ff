// TQ1_0 and TQ2_0 encoders (ternary): ggml's quantize_row_tq1_0_ref /
// quantize_row_tq2_0_ref, which quantize_tq1_0 / quantize_tq2_0 call (no imatrix); the
// Highway kernels (quantize_low_bit_simd.cpp) write the same bytes.
#include <cmath>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_low_bit_simd.h"
#include "kernels/ggml/quantize_iq_common.h"

namespace amn::ggml {
namespace {

// The trit of x at scale 1/d: lroundf(x * id) + 1, so -1, 0, +1 -> 0, 1, 2.
int trit_of(float x, float id) { return quant::lround_to_int(x * id) + 1; }

// n trits (the first most significant, as ggml multiplies by 3 before adding) as a
// base-3 fraction of 256, rounded up: the decoder's (q * 3^k * 3) >> 8 reads trit k.
uint8_t pack_trits(const float* x, size_t stride, int n, float id, bool shift_once) {
  uint8_t q = 0;
  for (int k = 0; k < n; ++k) {
    q = uint8_t(q * 3);
    q = uint8_t(q + trit_of(x[k * stride], id));
  }
  if (shift_once) q = uint8_t(q * 3);
  return uint8_t((uint16_t(q) * 256 + (243 - 1)) / 243);
}

float absmax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
  return amax;
}

}  // namespace

// Per 256: d = max |x|; 48 bytes of 5 trits (32 bytes over 160 elements, 16 over 80),
// then 4 bytes of 4 trits (shifted up one trit).
void quantize_tq1_0_block(const float* x, uint8_t* out) {
  const float d = absmax(x, QK_K);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  block_tq1_0 b{};
  b.d = fp32_to_fp16(d);
  constexpr size_t kQs = sizeof(b.qs), kQh = sizeof(b.qh);
  for (size_t j = 0; j < kQs - kQs % 32; j += 32) {
    for (size_t m = 0; m < 32; ++m) b.qs[j + m] = pack_trits(x + m, 32, 5, id, false);
    x += 5 * 32;
  }
  for (size_t j = kQs - kQs % 32; j < kQs; j += 16) {
    for (size_t m = 0; m < 16; ++m) b.qs[j + m] = pack_trits(x + m, 16, 5, id, false);
    x += 5 * 16;
  }
  for (size_t j = 0; j < kQh; ++j) b.qh[j] = pack_trits(x + j, kQh, 4, id, true);
  quant::store_block(out, 0, b);
}

// Per 256: d = max |x|; 2 bits per trit, element m + 32n of each run of 128 at bits 2n of
// byte m.
void quantize_tq2_0_block(const float* x, uint8_t* out) {
  const float d = absmax(x, QK_K);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  block_tq2_0 b{};
  b.d = fp32_to_fp16(d);
  for (size_t j = 0; j < sizeof(b.qs); j += 32) {
    for (size_t m = 0; m < 32; ++m) {
      uint8_t q = 0;
      for (size_t n = 0; n < 4; ++n) q = uint8_t(q + ((trit_of(x[m + n * 32], id) & 3) << (2 * n)));
      b.qs[j + m] = q;
    }
    x += 4 * 32;
  }
  quant::store_block(out, 0, b);
}

// Every block by the Highway kernel unless the reference is forced (kernels/cast.h:
// AMN_FORCE_IMPL=scalar), or the block function above.
template <class Block>
size_t encode_blocks(GgmlType type, void (*block)(const float*, uint8_t*), const float* src, void* dst, int64_t nb) {
  auto* out = static_cast<uint8_t*>(dst);
  if (reference_impl_forced() || !quantize_low_bit_simd(type, src, out, size_t(nb))) {
    for (int64_t i = 0; i < nb; ++i) block(src + i * QK_K, out + i * sizeof(Block));
  }
  return size_t(nb) * sizeof(Block);
}

size_t quantize_tq1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return encode_blocks<block_tq1_0>(GgmlType::TQ1_0, quantize_tq1_0_block, src, dst, nrows * (n_per_row / QK_K));
}

size_t quantize_tq2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return encode_blocks<block_tq2_0>(GgmlType::TQ2_0, quantize_tq2_0_block, src, dst, nrows * (n_per_row / QK_K));
}

}  // namespace amn::ggml
