// What the ggml encoders' Highway kernels share (quantize_legacy_simd.cpp,
// quantize_fp4_simd.cpp): C's float-to-int conversion as ggml's x86-64 build performs it,
// narrowing to bytes, and a block's largest magnitude as the reference's
// `if (amax < fabsf(v)) amax = fabsf(v)` finds it. Included through hwy/foreach_target.h
// by those files, once per target (skeleton-inl.h style).
#if defined(AMN_KERNELS_GGML_QUANTIZE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_GGML_QUANTIZE_SIMD_INL_H_
#undef AMN_KERNELS_GGML_QUANTIZE_SIMD_INL_H_
#else
#define AMN_KERNELS_GGML_QUANTIZE_SIMD_INL_H_
#endif

#include <climits>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Up to 16 lanes: a block of 32 is two AVX-512 vectors, four AVX2, eight 128-bit.
using DF = hn::CappedTag<float, 16>;
using DI = hn::RebindToSigned<DF>;

// trunc_to_i32 (quantize_search.h) in every lane: truncation, INT32_MIN out of range and
// for NaN (targets convert those differently, so they are selected explicitly).
HWY_INLINE hn::Vec<DI> TruncI32(hn::Vec<DF> v) {
  const DF d;
  const DI di;
  const auto in_range = hn::And(hn::Ge(v, hn::Set(d, -2147483648.0f)), hn::Lt(v, hn::Set(d, 2147483648.0f)));
  return hn::IfThenElse(hn::RebindMask(di, in_range), hn::ConvertTo(di, v), hn::Set(di, INT32_MIN));
}

// C's roundf (half away from zero) in every lane, from Trunc: v - trunc(v) is exact.
template <class V>
HWY_INLINE V RoundAway(V v) {
  const hn::DFromV<V> d;
  const auto t = hn::Trunc(v);
  const auto away = hn::Ge(hn::Abs(hn::Sub(v, t)), hn::Set(d, 0.5f));
  return hn::Add(t, hn::IfThenElseZero(away, hn::CopySign(hn::Set(d, 1.0f), v)));
}

// (int8_t) of an int32: its low byte, sign-extended.
HWY_INLINE hn::Vec<DI> LowInt8(hn::Vec<DI> v) { return hn::ShiftRight<24>(hn::ShiftLeft<24>(v)); }

// The low byte of each int32 lane, stored as consecutive bytes (di: the lanes' tag).
template <class D32 = DI>
HWY_INLINE void StoreLowBytes(hn::Vec<D32> v, uint8_t* HWY_RESTRICT p) {
  const D32 di;
  const hn::Rebind<uint8_t, D32> du8;
  hn::StoreU(hn::DemoteTo(du8, hn::And(v, hn::Set(di, 0xFF))), du8, p);
}

// A mask's bits (lane i in bit i) as a number: at most 16 lanes.
template <class D>
HWY_INLINE uint32_t MaskBits(D d, hn::Mask<D> mask) {
#if HWY_TARGET == HWY_WASM
  // i32x4.bitmask is one instruction (movmskps); Highway 1.0.3 stores the lanes and ORs them.
  if constexpr (sizeof(hn::TFromD<D>) == 4 && hn::MaxLanes(d) == 4) return wasm_i32x4_bitmask(mask.raw);
#endif
  uint8_t bits[8] = {};
  hn::StoreMaskBits(d, mask, bits);
  return uint32_t{bits[0]} | uint32_t{bits[1]} << 8;
}

// The largest |x| of n values (a multiple of the lane count) as the reference's strict
// `amax < fabsf(v)` loop from 0 finds it: NaN never wins, so NaN lanes count as 0; a
// maximum is exact in any order. Returned in every lane.
HWY_INLINE hn::Vec<DF> AbsMax(const float* HWY_RESTRICT x, int n) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  auto amax = hn::Zero(d);
  for (int j = 0; j < n; j += N) {
    const auto a = hn::Abs(hn::LoadU(d, x + j));
    amax = hn::Max(amax, hn::IfThenElseZero(hn::Eq(a, a), a));
  }
  return hn::MaxOfLanes(d, amax);
}
#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // include guard
