// What the encoders share of torch's arithmetic: an op on BF16 / F16 tensors computes in F32
// and rounds once to the tensor's dtype, and amax lets a NaN through.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cast.h"

namespace amn::lethe {

// The F32 result of a torch op on `src` tensors, rounded to `src` (kept as F32).
inline float round_to(float v, DType src) {
  switch (src) {
    case DType::BF16: return scalar::bf16_to_f32(scalar::f32_to_bf16(v));
    case DType::F16: return scalar::f16_to_f32(scalar::f32_to_f16(v));
    default: return v;
  }
}

// amax |x| over `count` values; NaN propagates (torch.amax and the binary max after it do):
// the first NaN, as |NaN|.
inline float absmax_scan(const float* values, uint64_t count) {
  float m = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const float a = std::fabs(values[i]);
    if (std::isnan(a)) return a;
    m = std::max(m, a);
  }
  return m;
}

// bitsandbytes' `absmax.clamp(min=1e-38)`, the divisor of a block's values (a NaN stays
// NaN). A negative absmax is kept as given: bitsandbytes never computes one, but a
// double-quantized reference's absmax can resolve below zero (it stores absmax - mean), and
// with --reuse-scales dividing by it picks the code its dequantizer multiplies back, where
// clamping would saturate every new value of the block.
inline float bnb_absmax_divisor(float a) { return std::isnan(a) || a < 0.0f ? a : std::max(a, 1e-38f); }

// amax |x| as absmax_scan returns it, by the SIMD kernel (encode_simd.h) unless the
// reference is forced (kernels/cast.h: AMN_FORCE_IMPL=scalar); torch_ops.cpp.
float absmax(const float* values, uint64_t count);

// The reference of absmax: absmax_scan without an early exit, in 8 lanes so that the
// compiler vectorizes it (max is exact, so the lanes' order does not matter); values with a
// NaN go through absmax_scan for the NaN it returns.
inline float absmax_reference(const float* values, uint64_t count) {
  constexpr int kLanes = 8;
  float m[kLanes] = {};
  int32_t nan[kLanes] = {};
  uint64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float a = std::fabs(values[i + l]);
      nan[l] |= a != a;
      m[l] = a > m[l] ? a : m[l];
    }
  float r = 0;
  int32_t any_nan = 0;
  for (int l = 0; l < kLanes; ++l) {
    r = m[l] > r ? m[l] : r;
    any_nan |= nan[l];
  }
  for (; i < count; ++i) {
    const float a = std::fabs(values[i]);
    any_nan |= a != a;
    r = a > r ? a : r;
  }
  return any_nan ? absmax_scan(values, count) : r;
}

}  // namespace amn::lethe
