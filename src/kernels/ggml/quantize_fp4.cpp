// MXFP4 and NVFP4 encoders: ggml's quantize_row_mxfp4_ref / quantize_row_nvfp4_ref (which
// quantize_mxfp4 / quantize_nvfp4 call; neither reads an imatrix). Unless the reference is
// forced (kernels/cast.h: AMN_FORCE_IMPL=scalar), the Highway kernels of
// quantize_fp4_simd.cpp write the same bytes.
#include <cmath>

#include "kernels/ggml/quantize_fp4_simd.h"
#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"

namespace amn::ggml {
namespace {

// best_index_mxfp4: the first of the 16 codes with the smallest |kvalue * e - x| (a tie
// keeps the earlier code, so +0 beats -0).
uint8_t best_index_fp4(float x, float e) {
  int best_index = 0;
  float best_err = std::fabs(float(kvalues_fp4[0]) * e - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(float(kvalues_fp4[i]) * e - x);
    if (err < best_err) {
      best_index = i;
      best_err = err;
    }
  }
  return uint8_t(best_index);
}

// floorf(log2f(amax)) for amax > 0. log2f's last bit is not the same in every libm; its
// floor only depends on whether log2 rounds up to the next integer, which the double
// log2 rounded to F32 decides as a correctly rounded log2f does.
float floor_log2(float amax) { return std::floor(float(std::log2(double(amax)))); }

}  // namespace

uint8_t mxfp4_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  // A normal amax = m * 2^e whose mantissa is not within 2^-15 of 2: log2 is e + log2(m)
  // with log2(m) below 1 - 2^-15, which no F32 rounding near |e + 1| <= 128 (an ulp of
  // at most 2^-16) carries up to e + 1, so the floor is e, without the libm call (a block
  // at a time, it was the encoder's largest cost). Closer to 2, and subnormals, through log2.
  const uint32_t bits = bit_cast<uint32_t>(amax);
  const int biased = int(bits >> 23);  // amax > 0: no sign bit
  const float floor = biased != 0 && biased != 0xFF && (bits & 0x7FFFFF) < 0x7FFF00 ? float(biased - 127) : floor_log2(amax);
  // (uint8_t)float in C: GCC on x86-64 truncates to int32 and keeps the low byte.
  return uint8_t(trunc_to_i32(floor - 2 + 127));
}

// ggml_fp32_to_ue4m3: x > 0 to unsigned E4M3 (bias 7), saturating at 0x7E (448);
// rounding adds the first dropped mantissa bit (half up); subnormals round x * 2^9.
uint8_t f32_to_ue4m3(float x) {
  if (!(x > 0.0f)) return 0;
  if (x > 448.0f) x = 448.0f;
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const int fp32_exp = int((bits >> 23) & 0xFF) - 127;
  const int fp32_man = int((bits >> 20) & 0x7);
  int ue4m3_exp = fp32_exp + 7;
  if (ue4m3_exp <= 0) {
    int man = trunc_to_i32(x * 512.0f + 0.5f);
    if (man > 7) man = 7;
    if (man < 1) return 0;
    return uint8_t(man);
  }
  if (ue4m3_exp >= 15) return 0x7E;
  const int round_bit = int((bits >> 19) & 1);
  int ue4m3_man = fp32_man + round_bit;
  if (ue4m3_man > 7) {
    ue4m3_man = 0;
    ue4m3_exp++;
    if (ue4m3_exp >= 15) return 0x7E;
  }
  return uint8_t((ue4m3_exp << 3) | ue4m3_man);
}

// Per 32: the shared exponent e = floor(log2(amax)) - 2 + 127 (so amax lands near the top
// code 6 = kvalue 12 / 2), then each element's nearest code at d = 2^(e - 128).
size_t quantize_mxfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  constexpr int qk = 32;
  const int64_t nb = nrows * (n_per_row / qk);
  if (!reference_impl_forced() && quantize_fp4_simd(GgmlType::MXFP4, src, static_cast<uint8_t*>(dst), size_t(nb))) {
    return size_t(nb) * sizeof(block_mxfp4);
  }
  for (int64_t i = 0; i < nb; ++i) {
    const float* x = src + i * qk;
    float amax = 0.0f;
    for (int j = 0; j < qk; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    const uint8_t e = mxfp4_exponent(amax);
    const float d = e8m0_to_f32_half(e);
    block_mxfp4 b{};
    b.e = e;
    for (int j = 0; j < qk / 2; ++j) {
      b.qs[j] = uint8_t(best_index_fp4(x[j], d) | (best_index_fp4(x[qk / 2 + j], d) << 4));
    }
    quant::store_block(dst, size_t(i), b);
  }
  return size_t(nb) * sizeof(block_mxfp4);
}

// Per 16 (four per block of 64): a UE4M3 scale from amax / 6, then the nearest code at
// the scale as decoded.
size_t quantize_nvfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  constexpr int qk = 64, qk_sub = 16;
  const int64_t nb = nrows * (n_per_row / qk);
  if (!reference_impl_forced() && quantize_fp4_simd(GgmlType::NVFP4, src, static_cast<uint8_t*>(dst), size_t(nb))) {
    return size_t(nb) * sizeof(block_nvfp4);
  }
  for (int64_t i = 0; i < nb; ++i) {
    block_nvfp4 b{};
    for (int s = 0; s < qk / qk_sub; ++s) {
      const float* xb = src + i * qk + s * qk_sub;
      float amax = 0.0f;
      for (int j = 0; j < qk_sub; ++j) {
        if (amax < std::fabs(xb[j])) amax = std::fabs(xb[j]);
      }
      const uint8_t ue = f32_to_ue4m3(amax / 6.0f);
      b.d[s] = ue;
      const float d = ue4m3_to_f32_half(ue);
      for (int j = 0; j < qk_sub / 2; ++j) {
        b.qs[s * (qk_sub / 2) + j] = uint8_t(best_index_fp4(xb[j], d) | (best_index_fp4(xb[qk_sub / 2 + j], d) << 4));
      }
    }
    quant::store_block(dst, size_t(i), b);
  }
  return size_t(nb) * sizeof(block_nvfp4);
}

}  // namespace amn::ggml
