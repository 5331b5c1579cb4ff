// ggml's legacy encoders without an importance matrix (quantize_row_q4_0_ref, _q4_1_ref,
// _q5_0_ref, _q5_1_ref, _q8_0_ref), vectorized along each block of 32. What makes that
// bit-exact with the scalar restatement (quantize_legacy.cpp):
// - the per-element work (a multiply, an add, a truncation to int32, the low byte, a
//   clamp) is independent from element to element: the same IEEE operations in any lane
//   order, no multiply-add fused (-ffp-contract=off, no MulAdd);
// - the block statistics the reference finds with order-sensitive loops are found
//   exactly: the largest |x| (Q4_0, Q5_0) and min / max (Q4_1, Q5_1) are maxima and
//   minima, exact in any order; which element supplies them matters only for its sign
//   (the first with the largest |x| in Q4_0 / Q5_0; a min or max of zero keeps the first
//   zero's sign), so that element is looked up as the reference's loop would find it.
//   NaN never wins a `<` or `>`, so NaN lanes are left out of the maxima. Q8_0's
//   MAX(amax, |x|) restarts after a NaN: a block with one goes to the scalar code;
// - float to int32 is C's cvttss2si (trunc_to_i32: INT32_MIN out of range and for NaN),
//   selected explicitly, since targets convert such values differently.
// Compiled once per Highway target (foreach_target.h re-includes this file); Highway's
// one-lane target leaves it to the scalar code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_legacy_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize_legacy_simd.h"
#include "kernels/ggml/quantize_search.h"
#include "kernels/ggml/quantize_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
constexpr int QK = 32;

// Bit 4 of each element's level, element j's in bit j: Q5_0's and Q5_1's qh.
HWY_INLINE void AddHighBits(hn::Vec<DI> v, int first, uint32_t& qh) {
  const DI di;
  qh |= MaskBits(di, hn::Ne(hn::And(v, hn::Set(di, 0x10)), hn::Zero(di))) << first;
}

// The value the reference's `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }` ends
// with: the first element of the largest magnitude (NaN never), 0 when that is 0.
HWY_INLINE float SignedAbsmax(const float* HWY_RESTRICT x) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto amax = AbsMax(x, QK);
  if (hn::GetLane(amax) == 0.0f) return 0.0f;
  for (int j = 0; j < QK; j += N) {
    const intptr_t at = hn::FindFirstTrue(d, hn::Eq(hn::Abs(hn::LoadU(d, x + j)), amax));
    if (at >= 0) return x[j + at];
  }
  return 0.0f;  // not reached
}

// The reference's min and max (`if (v < min) min = v; if (v > max) max = v;` from
// FLT_MAX and -FLT_MAX): exact values from the lanes; a zero's sign from the first zero.
HWY_INLINE void MinMax(const float* HWY_RESTRICT x, float& min, float& max) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  auto vmin = hn::Set(d, FLT_MAX);
  auto vmax = hn::Set(d, -FLT_MAX);
  for (int j = 0; j < QK; j += N) {
    const auto v = hn::LoadU(d, x + j);
    vmin = hn::IfThenElse(hn::Lt(v, vmin), v, vmin);
    vmax = hn::IfThenElse(hn::Gt(v, vmax), v, vmax);
  }
  min = hn::GetLane(hn::MinOfLanes(d, vmin));
  max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  if (min == 0.0f || max == 0.0f) {
    const float zero = *std::find(x, x + QK, 0.0f);  // the first zero (there is one)
    if (min == 0.0f) min = zero;
    if (max == 0.0f) max = zero;
  }
}

// Levels of a half block for Q4_0 / Q5_0 / Q4_1 (offset 8.5, 16.5 or 0.5, limit 15 or
// 31): MIN(limit, (int8_t)(x * id + offset)), x minus min first when there is one.
HWY_INLINE hn::Vec<DI> Levels(hn::Vec<DF> x, float min, float id, float offset, int limit, bool has_min) {
  const DF d;
  const DI di;
  if (has_min) x = hn::Sub(x, hn::Set(d, min));
  const auto l = LowInt8(TruncI32(hn::Add(hn::Mul(x, hn::Set(d, id)), hn::Set(d, offset))));
  return hn::Min(hn::Set(di, limit), l);
}

// Q4_0 and Q4_1: two nibbles a byte, element j low, j + 16 high (the reference's
// `qs = xi0; qs |= xi1 << 4`, on the bytes of the possibly negative levels).
template <bool kHasMin>
void Q4Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  constexpr size_t kBytes = kHasMin ? sizeof(block_q4_1) : sizeof(block_q4_0);
  constexpr size_t kQs = kHasMin ? offsetof(block_q4_1, qs) : offsetof(block_q4_0, qs);
  for (size_t b = 0; b < blocks; ++b, x += QK, out += kBytes) {
    float min = 0.0f, dd;
    if constexpr (kHasMin) {
      float max;
      MinMax(x, min, max);
      dd = (max - min) / ((1 << 4) - 1);
      const uint16_t m = fp32_to_fp16(min);
      std::memcpy(out + offsetof(block_q4_1, m), &m, 2);
    } else {
      dd = SignedAbsmax(x) / -8;
    }
    const float id = dd ? 1.0f / dd : 0.0f;
    const uint16_t h = fp32_to_fp16(dd);
    std::memcpy(out, &h, 2);
    const float offset = kHasMin ? 0.5f : 8.5f;
    for (int j = 0; j < QK / 2; j += N) {
      const auto l0 = Levels(hn::LoadU(d, x + j), min, id, offset, 15, kHasMin);
      const auto l1 = Levels(hn::LoadU(d, x + QK / 2 + j), min, id, offset, 15, kHasMin);
      StoreLowBytes(hn::Or(l0, hn::ShiftLeft<4>(l1)), out + kQs + j);
    }
  }
}

// Q5_0 and Q5_1: the low nibbles as Q4, bit 4 of element j in bit j of qh.
template <bool kHasMin>
void Q5Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  const DF d;
  const DI di;
  const int N = static_cast<int>(hn::Lanes(d));
  constexpr size_t kBytes = kHasMin ? sizeof(block_q5_1) : sizeof(block_q5_0);
  constexpr size_t kQh = kHasMin ? offsetof(block_q5_1, qh) : offsetof(block_q5_0, qh);
  constexpr size_t kQs = kHasMin ? offsetof(block_q5_1, qs) : offsetof(block_q5_0, qs);
  const auto nibble = hn::Set(di, 0x0F);
  for (size_t b = 0; b < blocks; ++b, x += QK, out += kBytes) {
    float min = 0.0f, dd;
    if constexpr (kHasMin) {
      float max;
      MinMax(x, min, max);
      dd = (max - min) / ((1 << 5) - 1);
      const uint16_t m = fp32_to_fp16(min);
      std::memcpy(out + offsetof(block_q5_1, m), &m, 2);
    } else {
      dd = SignedAbsmax(x) / -16;
    }
    const float id = dd ? 1.0f / dd : 0.0f;
    const uint16_t h = fp32_to_fp16(dd);
    std::memcpy(out, &h, 2);
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; j += N) {
      hn::Vec<DI> l0, l1;
      if constexpr (kHasMin) {  // (uint8_t)(x0 + 0.5f): no clamp
        const auto vmin = hn::Set(d, min), vid = hn::Set(d, id), half = hn::Set(d, 0.5f);
        l0 = TruncI32(hn::Add(hn::Mul(hn::Sub(hn::LoadU(d, x + j), vmin), vid), half));
        l1 = TruncI32(hn::Add(hn::Mul(hn::Sub(hn::LoadU(d, x + QK / 2 + j), vmin), vid), half));
      } else {
        l0 = Levels(hn::LoadU(d, x + j), 0.0f, id, 16.5f, 31, false);
        l1 = Levels(hn::LoadU(d, x + QK / 2 + j), 0.0f, id, 16.5f, 31, false);
      }
      StoreLowBytes(hn::Or(hn::And(l0, nibble), hn::ShiftLeft<4>(hn::And(l1, nibble))), out + kQs + j);
      AddHighBits(l0, j, qh);
      AddHighBits(l1, QK / 2 + j, qh);
    }
    std::memcpy(out + kQh, &qh, 4);
  }
}

// Q8_0: roundf(x * id) to int8 (C's roundf: half away from zero, built from Trunc).
void Q8Blocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  const DF d;
  const int N = static_cast<int>(hn::Lanes(d));
  for (size_t b = 0; b < blocks; ++b, x += QK, out += sizeof(block_q8_0)) {
    auto amax = hn::Zero(d);
    auto numbers = hn::Eq(amax, amax);
    for (int j = 0; j < QK; j += N) {
      const auto v = hn::LoadU(d, x + j);
      numbers = hn::And(numbers, hn::Eq(v, v));
      amax = hn::Max(amax, hn::Abs(v));
    }
    if (!hn::AllTrue(d, numbers)) {  // a NaN: MAX's order matters, the reference's loop
      quantize_q8_0_block(x, out);
      continue;
    }
    const float dd = hn::GetLane(hn::MaxOfLanes(d, amax)) / ((1 << 7) - 1);
    const float id = dd ? 1.0f / dd : 0.0f;
    const uint16_t h = fp32_to_fp16(dd);
    std::memcpy(out, &h, 2);
    const auto vid = hn::Set(d, id);
    for (int j = 0; j < QK; j += N) {
      StoreLowBytes(TruncI32(RoundAway(hn::Mul(hn::LoadU(d, x + j), vid))), out + offsetof(block_q8_0, qs) + j);
    }
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry point: false (nothing written) for a type without a kernel here,
// and on Highway's one-lane target.
HWY_NOINLINE bool QuantizeLegacy(GgmlType type, const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out,
                                 size_t blocks) {
#if HWY_TARGET == HWY_SCALAR
  (void)type, (void)x, (void)out, (void)blocks;
  return false;
#else
  switch (type) {
    case GgmlType::Q4_0: Q4Blocks<false>(x, out, blocks); return true;
    case GgmlType::Q4_1: Q4Blocks<true>(x, out, blocks); return true;
    case GgmlType::Q5_0: Q5Blocks<false>(x, out, blocks); return true;
    case GgmlType::Q5_1: Q5Blocks<true>(x, out, blocks); return true;
    case GgmlType::Q8_0: Q8Blocks(x, out, blocks); return true;
    default: return false;
  }
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace ggml {

HWY_EXPORT(QuantizeLegacy);

bool quantize_legacy_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks) {
  return HWY_DYNAMIC_DISPATCH(QuantizeLegacy)(type, x, out, blocks);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
