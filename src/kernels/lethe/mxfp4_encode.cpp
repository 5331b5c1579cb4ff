// MXFP4 encoder: the scalar reference (mxfp4_encode.h), downcast_to_mxfp_torch's statements
// in order (fixtures/lethe/mxfp4/README.md quotes the source).
#include "kernels/lethe/mxfp4_encode.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bytes.h"
#include "core/dtype.h"
#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/torch_ops.h"

namespace amn::lethe {
namespace {

}  // namespace

// 1 / 2^(code - 127) as quant_scale: 0 for a zero scale (torch.where(dequant_scale_rounded
// == 0, 0, 1.0 / dequant_scale_rounded)).
float mxfp4_quant_scale(uint8_t code) {
  if (code == 0) return 0.0f;
  return 1.0f / bit_cast<float>(static_cast<uint32_t>(code) << 23);
}

uint8_t mxfp4_scale(const float* group) {
  float amax = 0;  // abs_groups.max(dim=-1): NaN propagates
  for (int i = 0; i < 32; ++i) {
    const float a = std::fabs(group[i]);
    if (std::isnan(a) || std::isnan(amax)) amax = std::isnan(amax) ? amax : a;
    else if (a > amax) amax = a;
  }
  return mxfp4_scale_of_amax(amax);
}

uint8_t mxfp4_scale_of_amax(float amax) {
  const float dequant_scale = amax / 6.0f;  // max_val / max_quant_val
  const uint32_t ds = bit_cast<uint32_t>(dequant_scale);
  const uint32_t rounded = (ds + 0x007FFFFFu) & 0x7F800000u;  // ROUND_UP, int32 wraps
  return static_cast<uint8_t>(rounded >> 23);
}

uint8_t mxfp4_code(float quotient) {
  const uint32_t q = bit_cast<uint32_t>(quotient);
  const uint32_t sign = q & 0x80000000u;
  const uint32_t e = (q >> 23) & 0xFF;
  const uint32_t m_orig = q & 0x7FFFFF;
  constexpr uint32_t kE8Bias = 127, kE2Bias = 1;
  uint32_t m = m_orig;
  bool sticky = false;
  if (e < kE8Bias) {  // subnormal in E2M1: shift the mantissa (with its implicit bit) down
    const uint32_t shift = kE8Bias - e - 1;
    const uint32_t pre = 0x400000u | (m_orig >> 1);
    const bool bit0_dropped = (m_orig & 1) != 0;
    const uint32_t mask = shift >= 31 ? 0x7FFFFFFFu : (1u << shift) - 1;  // (1 << clamp(31)) - 1 in int32
    sticky = bit0_dropped || (pre & mask) != 0;
    m = shift >= 32 ? 0 : pre >> shift;
  }
  const uint32_t e2 = std::max(e, kE8Bias - kE2Bias) - (kE8Bias - kE2Bias);
  const uint32_t m2bits = (m >> 21) & 3;
  const uint32_t lsb_keep = (m2bits >> 1) & 1;
  const uint32_t guard = m2bits & 1;
  sticky = sticky || (m & ((1u << 21) - 1)) != 0;
  const uint32_t round_inc = guard & (static_cast<uint32_t>(sticky) | lsb_keep);
  const uint32_t tmp = std::min<uint32_t>((((e2 << 2) | m2bits) + round_inc) >> 1, 7);
  return static_cast<uint8_t>((sign >> 28) | tmp);
}

void mxfp4_quantize_rows(const float* values, uint64_t rows, uint64_t cols, uint8_t* blocks, uint8_t* scales,
                         bool reuse) {
  if (!reference_impl_forced() && simd::mxfp4_rows(values, rows, cols, blocks, scales, reuse)) return;  // SIMD
  const uint64_t groups = cols / 32;
  float g[32];
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t k = 0; k < groups; ++k) {
      for (int i = 0; i < 32; ++i) g[i] = round_to(values[r * cols + k * 32 + i], DType::BF16);  // w.to(bfloat16)
      uint8_t& s = scales[r * groups + k];
      if (!reuse) s = mxfp4_scale(g);
      const float qs = mxfp4_quant_scale(s);
      uint8_t* out = blocks + (r * groups + k) * 16;
      for (int j = 0; j < 16; ++j)
        out[j] = static_cast<uint8_t>(mxfp4_code(g[2 * j] * qs) | (mxfp4_code(g[2 * j + 1] * qs) << 4));
    }
}

}  // namespace amn::lethe
