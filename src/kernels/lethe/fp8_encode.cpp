// FP8 encoders: the scalar reference (fp8_encode.h), Fp8Quantize.convert's statements in order.
#include "kernels/lethe/fp8_encode.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bytes.h"
#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"

namespace amn::lethe {

uint8_t f32_to_e4m3fn(float x) {
  // c10/util/Float8_e4m3fn.h fp8e4m3fn_from_fp32_value, statement by statement.
  constexpr uint32_t fp8_max = UINT32_C(1087) << 20;  // 480.0f
  constexpr uint32_t denorm_mask = UINT32_C(141) << 23;
  uint32_t f_bits = bit_cast<uint32_t>(x);
  uint8_t result = 0;
  const uint32_t sign = f_bits & UINT32_C(0x80000000);
  f_bits ^= sign;
  if (f_bits >= fp8_max) {
    result = 0x7f;
  } else if (f_bits < (UINT32_C(121) << 23)) {
    // below 2^-6: add 2^(141-127) so the FPU rounds the subnormal mantissa
    f_bits = bit_cast<uint32_t>(bit_cast<float>(f_bits) + bit_cast<float>(denorm_mask));
    result = static_cast<uint8_t>(f_bits - denorm_mask);
  } else {
    const uint8_t mant_odd = (f_bits >> 20) & 1;
    f_bits += (static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFF;
    f_bits += mant_odd;
    result = static_cast<uint8_t>(f_bits >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

void fp8_block_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, Fp8Block block, float* scale,
                      float* scale_inv) {
  const uint64_t tile_cols = (cols + block.cols - 1) / block.cols;
  const uint64_t tile_rows = (r1 - r0 + block.rows - 1) / block.rows;
  // Each tile's amax by the SIMD kernel (as bits; a tile with a NaN is scanned below for
  // the NaN the reference returns) unless the reference is forced.
  std::vector<uint32_t> amax_bits;
  if (!reference_impl_forced()) {
    amax_bits.resize(tile_rows * tile_cols);
    if (!simd::fp8_tile_absmax_bits(values, cols, r1 - r0, block.rows, block.cols, amax_bits.data())) amax_bits.clear();
  }
  for (uint64_t tr = 0; tr < tile_rows; ++tr) {
    const uint64_t ra = tr * block.rows, rb = std::min(r1 - r0, ra + block.rows);
    for (uint64_t tc = 0; tc < tile_cols; ++tc) {
      const uint64_t ca = tc * block.cols, cb = std::min(cols, ca + block.cols);
      float max_abs = 0;  // reshaped.abs().amax(dim=(-3, -1)): NaN propagates
      const bool simd_max = !amax_bits.empty() && amax_bits[tr * tile_cols + tc] <= 0x7F800000u;
      if (simd_max) max_abs = bit_cast<float>(amax_bits[tr * tile_cols + tc]);
      for (uint64_t r = ra; r < rb && !simd_max && !std::isnan(max_abs); ++r)
        for (uint64_t c = ca; c < cb; ++c) {
          const float a = std::fabs(values[r * cols + c]);
          if (std::isnan(a)) {
            max_abs = a;
            break;
          }
          max_abs = std::max(max_abs, a);
        }
      float s = 1.0f;
      if (max_abs > 0) {  // torch.where(max_abs > 0, ...): false for NaN
        const float recip = 1.0f / max_abs;
        s = recip * 448.0f;
      }
      scale[tr * tile_cols + tc] = s;
      scale_inv[tr * tile_cols + tc] = 1.0f / s;  // (1.0 / scales): reciprocal() * 1.0
    }
  }
}

void fp8_block_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, Fp8Block block,
                             const float* scale, uint8_t* out) {
  if (!reference_impl_forced() && simd::fp8_block_rows(values, cols, r1 - r0, block.rows, block.cols, scale, out))
    return;  // the SIMD kernel
  const uint64_t tile_cols = (cols + block.cols - 1) / block.cols;
  for (uint64_t r = 0; r < r1 - r0; ++r) {
    const float* s = scale + (r / block.rows) * tile_cols;
    for (uint64_t c = 0; c < cols; ++c) {
      const float x = values[r * cols + c];
      float v = x * s[c / block.cols];
      if (!std::isnan(v)) {
        v = std::min(448.0f, std::max(-448.0f, v));  // torch.clamp keeps NaN
      } else if (!std::isnan(x)) {
        // An invalid product (0 x Inf from a subnormal tile's infinite scale, Inf x 0 from
        // an infinite tile's zero scale) is the FPU's default NaN: negative on x86, where
        // torch made the fixtures (code 0xFF); aarch64 and WASM make it positive. Written as
        // x86 does, so every target gives the producer's bytes.
        v = -std::numeric_limits<float>::quiet_NaN();
      }
      out[r * cols + c] = f32_to_e4m3fn(v);
    }
  }
}

void fp8_block_scales_from_inv(const float* scale_inv, uint64_t count, float* scale) {
  for (uint64_t i = 0; i < count; ++i) scale[i] = 1.0f / scale_inv[i];
}

}  // namespace amn::lethe
