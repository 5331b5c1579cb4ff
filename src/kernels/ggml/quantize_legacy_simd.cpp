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
//   selected explicitly, since targets convert such values differently;
// - the per-block scalar steps (d, 1 / d, the F16 conversions) run for 16 blocks at once,
//   a block per lane, each lane the scalar code's operations (Fp16Bits restates ggml's
//   fp32_to_fp16 bit for bit).
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
#include <type_traits>

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
  uint32_t at = 0;  // bit j: |x[j]| is the largest
  for (int j = 0; j < QK; j += N) at |= MaskBits(d, hn::Eq(hn::Abs(hn::LoadU(d, x + j)), amax)) << j;
  return x[hwy::Num0BitsBelowLS1Bit_Nonzero32(at)];
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

// ggml's fp32_to_fp16 (quantize_search.cpp) in every lane, operation for operation: the
// two F32 multiplies and the add round as the scalar code's do; the integer steps are the
// same bits (the unsigned compares made on values below 2^31).
HWY_INLINE hn::Vec<DI> Fp16Bits(hn::Vec<DF> f) {
  const DF d;
  const DI di;
  const hn::RebindToUnsigned<DF> du;
  auto base = hn::Mul(hn::Mul(hn::Abs(f), hn::Set(d, 0x1.0p+112f)), hn::Set(d, 0x1.0p-110f));
  const auto w = hn::BitCast(du, f);
  const auto shl1_w = hn::Add(w, w);
  const auto sign = hn::And(w, hn::Set(du, 0x80000000u));
  auto bias = hn::And(shl1_w, hn::Set(du, 0xFF000000u));
  const auto bias_low = hn::Lt(hn::BitCast(di, hn::ShiftRight<24>(bias)), hn::Set(di, 0x71));
  bias = hn::IfThenElse(hn::RebindMask(du, bias_low), hn::Set(du, 0x71000000u), bias);
  base = hn::Add(hn::BitCast(d, hn::Add(hn::ShiftRight<1>(bias), hn::Set(du, 0x07800000u))), base);
  const auto bits = hn::BitCast(du, base);
  const auto nonsign = hn::Add(hn::And(hn::ShiftRight<13>(bits), hn::Set(du, 0x7C00u)), hn::And(bits, hn::Set(du, 0xFFFu)));
  // shl1_w > 0xFF000000: a NaN.
  const auto nan = hn::Gt(hn::BitCast(di, hn::And(w, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000));
  const auto low = hn::IfThenElse(nan, hn::Set(di, 0x7E00), hn::BitCast(di, nonsign));
  return hn::Or(hn::BitCast(di, hn::ShiftRight<16>(sign)), low);
}

// Levels of a half block for Q4_0 / Q5_0 / Q4_1 (offset 8.5, 16.5 or 0.5, limit 15 or
// 31): MIN(limit, (int8_t)(x * id + offset)), x minus min first when there is one.
HWY_INLINE hn::Vec<DI> Levels(hn::Vec<DF> x, hn::Vec<DF> min, hn::Vec<DF> id, float offset, int limit, bool has_min) {
  const DF d;
  const DI di;
  if (has_min) x = hn::Sub(x, min);
  const auto l = LowInt8(TruncI32(hn::Add(hn::Mul(x, id), hn::Set(d, offset))));
  return hn::Min(hn::Set(di, limit), l);
}

#if HWY_TARGET == HWY_WASM
// The WASM path (measured under V8's TurboFan, docs/benchmarks.md): the generic code
// below ran at 0.2-0.47x AVX-512, a quarter of the lanes and more instructions per lane
// than natively: i32x4.trunc_sat_f32x4 becomes five SSE instructions, TruncI32's range
// selection six more, a horizontal max per block two shuffles and an extract, and
// SignedAbsmax reads each block twice. Here:
// - statistics in one pass, four blocks at a time, the lane reductions done across the
//   four (Reduce4: one vector of the four blocks' results), with f32x4.pmax / pmin,
//   which are the reference's `if (v > acc) acc = v` / `if (v < acc) acc = v` exactly
//   (NaN never wins) in one maxps / minps;
// - a block is "tame" when its values are finite (their sum is: an overflowing sum only
//   sends a block to the generic code) and its scaled magnitudes are bounded (below):
//   then every level is a small integer that neither the int conversion's range nor the
//   (int8_t) wrap can touch, and it is computed as the float trunc (roundps) and read off
//   the bits of t + 1.5 * 2^23 (exact for |t| < 2^22), narrowed with saturating packs
//   that cannot saturate. Other blocks take the generic path below, as on every target.
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;

HWY_INLINE VF KeepGreater(VF acc, VF v) { return VF{wasm_f32x4_pmax(acc.raw, v.raw)}; }  // acc < v ? v : acc
HWY_INLINE VF KeepLess(VF acc, VF v) { return VF{wasm_f32x4_pmin(acc.raw, v.raw)}; }     // v < acc ? v : acc

// Lane b: op over the lanes of the b-th argument (op exact and order-free on these values).
template <class Op>
HWY_INLINE VF Reduce4(VF a, VF b, VF c, VF e, Op op) {
  const DF d;
  const VF ab = op(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));  // a02 b02 a13 b13
  const VF ce = op(hn::InterleaveLower(d, c, e), hn::InterleaveUpper(d, c, e));
  return op(hn::ConcatLowerLower(d, ce, ab), hn::ConcatUpperUpper(d, ce, ab));
}

// Four blocks' statistics (a null pointer: a block past the end, all zero): the largest
// and the smallest value (with kAbs the largest |x|, and lo 0) from hi0 and lo0 by the
// reference's strict compares, and the blocks' sums, finite when every value is.
template <bool kAbs>
HWY_INLINE void Stats4(const float* const* xs, float hi0, float lo0, float* hi, float* lo, float* sum) {
  const DF d;
  VF h[4], l[4], s[4];
  for (int b = 0; b < 4; ++b) {
    h[b] = hn::Set(d, hi0), l[b] = hn::Set(d, lo0), s[b] = hn::Zero(d);
    if (!xs[b]) continue;
    for (int j = 0; j < QK; j += 4) {
      const VF v = hn::LoadU(d, xs[b] + j);
      s[b] = hn::Add(s[b], v);
      if constexpr (kAbs) {
        h[b] = KeepGreater(h[b], hn::Abs(v));
      } else {
        h[b] = KeepGreater(h[b], v);
        l[b] = KeepLess(l[b], v);
      }
    }
  }
  const auto vmax = [](VF a, VF b) { return KeepGreater(a, b); };
  const auto vmin = [](VF a, VF b) { return KeepLess(a, b); };
  const auto vadd = [](VF a, VF b) { return hn::Add(a, b); };
  hn::StoreU(Reduce4(h[0], h[1], h[2], h[3], vmax), d, hi);
  hn::StoreU(kAbs ? hn::Zero(d) : Reduce4(l[0], l[1], l[2], l[3], vmin), d, lo);  // Q8_0: no min, 0
  hn::StoreU(Reduce4(s[0], s[1], s[2], s[3], vadd), d, sum);
}

// The integer in t's bits (|t| < 2^22 an integer): t + 1.5 * 2^23 is exact.
HWY_INLINE VI SmallInt(VF t) {
  const DF d;
  const DI di;
  return hn::Sub(hn::BitCast(di, hn::Add(t, hn::Set(d, 0x1.8p23f))), hn::Set(di, 0x4B400000));
}

// Four vectors of values in [-128, 127] (or [0, 255] unsigned) as 16 bytes.
template <bool kSigned>
HWY_INLINE void Store16Bytes(VI a, VI b, VI c, VI e, uint8_t* HWY_RESTRICT p) {
  if constexpr (kSigned) {
    wasm_v128_store(p, wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(a.raw, b.raw), wasm_i16x8_narrow_i32x4(c.raw, e.raw)));
  } else {
    wasm_v128_store(p, wasm_u8x16_narrow_i16x8(wasm_u16x8_narrow_i32x4(a.raw, b.raw), wasm_u16x8_narrow_i32x4(c.raw, e.raw)));
  }
}
#endif  // HWY_TARGET == HWY_WASM

// The legacy encoders, a group of up to 16 blocks at a time: (1) each block's statistics
// (the signed absmax, min and max, or Q8_0's amax); (2) across the group's blocks, a
// block per lane: d, id = d ? 1 / d : 0, and the F16 bits of d (and of the min); (3) each
// block's levels, along the block.
template <GgmlType kType>
void LegacyBlocks(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t blocks) {
  constexpr bool kHasMin = kType == GgmlType::Q4_1 || kType == GgmlType::Q5_1;
  constexpr bool kQ5 = kType == GgmlType::Q5_0 || kType == GgmlType::Q5_1;
  using Block = std::conditional_t<
      kType == GgmlType::Q4_0, block_q4_0,
      std::conditional_t<kType == GgmlType::Q4_1, block_q4_1,
                         std::conditional_t<kType == GgmlType::Q5_0, block_q5_0,
                                            std::conditional_t<kType == GgmlType::Q5_1, block_q5_1, block_q8_0>>>>;
  // d = hi / kDivisor, or (hi - lo) / kDivisor with a min.
  constexpr float kDivisor = kType == GgmlType::Q4_0   ? -8.0f
                             : kType == GgmlType::Q5_0 ? -16.0f
                             : kType == GgmlType::Q4_1 ? float((1 << 4) - 1)
                             : kType == GgmlType::Q5_1 ? float((1 << 5) - 1)
                                                       : float((1 << 7) - 1);
#if HWY_TARGET == HWY_WASM
  // The largest scaled magnitude of a tame block: the levels are then trunc(y + 8.5) in
  // [0, 17] for Q4_0, trunc(y + 16.5) in [0, 33] for Q5_0, trunc(y + 0.5) in [0, 16] and
  // [0, 32] for Q4_1 and Q5_1, roundf(y) in [-127, 127] for Q8_0: no int8 wrap anywhere.
  constexpr float kBound = kType == GgmlType::Q4_0   ? 9.0f
                           : kType == GgmlType::Q5_0 ? 17.0f
                           : kType == GgmlType::Q4_1 ? 16.0f
                           : kType == GgmlType::Q5_1 ? 32.0f
                                                     : 127.25f;
#endif
  constexpr int kGroup = 16;
  const DF d;
  const DI di;
  const int N = static_cast<int>(hn::Lanes(d));
  const auto nibble = hn::Set(di, 0x0F);
  HWY_ALIGN float lo[kGroup], hi[kGroup], ids[kGroup];
  HWY_ALIGN int32_t d16[kGroup], m16[kGroup];
  bool nan[kGroup];
  for (size_t g = 0; g < blocks; g += kGroup) {
    const int count = blocks - g < size_t(kGroup) ? int(blocks - g) : kGroup;
    const float* xg = x + g * QK;
    uint8_t* og = out + g * sizeof(Block);
#if HWY_TARGET == HWY_WASM
    HWY_ALIGN float sums[kGroup];
    uint32_t tie = 0;  // bit k: block k's largest magnitude occurs with both signs
    for (int k = 0; k < kGroup; k += 4) {
      const float* xs[4];
      for (int b = 0; b < 4; ++b) xs[b] = k + b < count ? xg + (k + b) * QK : nullptr;
      if constexpr (kHasMin) {
        Stats4<false>(xs, -FLT_MAX, FLT_MAX, hi + k, lo + k, sums + k);
      } else {
        Stats4<kType == GgmlType::Q8_0>(xs, 0.0f, 0.0f, hi + k, lo + k, sums + k);
      }
      if constexpr (!kHasMin && kType != GgmlType::Q8_0) {
        // The signed absmax from the largest and the smallest value (from 0): the one of
        // the larger magnitude (0 when both are), selected without a branch (random data
        // mispredicts half of them); where +a and -a both occur the first one decides,
        // found below. lo goes back to 0 (no min).
        const auto h = hn::Load(d, hi + k), l = hn::Load(d, lo + k);
        hn::Store(hn::IfThenElse(hn::Gt(h, hn::Neg(l)), h, l), d, hi + k);
        tie |= MaskBits(d, hn::And(hn::Eq(h, hn::Neg(l)), hn::Ne(h, hn::Zero(d)))) << k;
        hn::Store(hn::Zero(d), d, lo + k);
      }
    }
    for (int k = 0; k < kGroup; ++k) {
      nan[k] = false;
      if (k >= count) {
        lo[k] = hi[k] = sums[k] = 0.0f;
        continue;
      }
      const float* xk = xg + k * QK;
      if constexpr (kHasMin) {
        if (lo[k] == 0.0f || hi[k] == 0.0f) {  // a zero's sign: the first zero's, as MinMax
          const float zero = *std::find(xk, xk + QK, 0.0f);
          if (lo[k] == 0.0f) lo[k] = zero;
          if (hi[k] == 0.0f) hi[k] = zero;
        }
      } else if constexpr (kType == GgmlType::Q8_0) {
        // Not finite (maybe a NaN, whose place in MAX(amax, |x|) matters): the scalar code.
        nan[k] = !std::isfinite(sums[k]);
      } else if (tie >> k & 1) {
        hi[k] = SignedAbsmax(xk);
      }
    }
#else
    for (int k = 0; k < kGroup; ++k) {
      lo[k] = hi[k] = 0.0f;
      nan[k] = false;
      if (k >= count) continue;
      const float* xk = xg + k * QK;
      if constexpr (kHasMin) {
        MinMax(xk, lo[k], hi[k]);
      } else if constexpr (kType == GgmlType::Q8_0) {
        auto amax = hn::Zero(d);
        auto numbers = hn::Eq(amax, amax);
        for (int j = 0; j < QK; j += N) {
          const auto v = hn::LoadU(d, xk + j);
          numbers = hn::And(numbers, hn::Eq(v, v));
          amax = hn::Max(amax, hn::Abs(v));
        }
        // A NaN: MAX(amax, |x|)'s fold depends on where; the reference's loop does it.
        nan[k] = !hn::AllTrue(d, numbers);
        hi[k] = hn::GetLane(hn::MaxOfLanes(d, amax));
      } else {
        hi[k] = SignedAbsmax(xk);
      }
    }
#endif
#if HWY_TARGET == HWY_WASM
    uint32_t tame = 0;  // bit k: block k takes the fast path
#endif
    for (int k = 0; k < kGroup; k += N) {
      const auto vlo = hn::Load(d, lo + k);
      const auto dd = hn::Div(kHasMin ? hn::Sub(hn::Load(d, hi + k), vlo) : hn::Load(d, hi + k), hn::Set(d, kDivisor));
      // C's `d ? 1.0f/d : 0.0f`: NaN is true.
      hn::Store(hn::IfThenZeroElse(hn::Eq(dd, hn::Zero(d)), hn::Div(hn::Set(d, 1.0f), dd)), d, ids + k);
      hn::Store(Fp16Bits(dd), di, d16 + k);
      if constexpr (kHasMin) hn::Store(Fp16Bits(vlo), di, m16 + k);
#if HWY_TARGET == HWY_WASM
      // Tame: finite values, and the largest |x * id| (or (x - min) * id) at most kBound;
      // rounding is monotonic, so no element's exceeds the block's. NaN or Inf fails.
      const auto span = kHasMin ? hn::Sub(hn::Load(d, hi + k), vlo) : hn::Abs(hn::Load(d, hi + k));
      const auto bound = hn::Mul(span, hn::Abs(hn::Load(d, ids + k)));
      const auto finite = hn::Lt(hn::Abs(hn::Load(d, sums + k)), hn::Set(d, HUGE_VALF));
      tame |= MaskBits(d, hn::And(finite, hn::Le(bound, hn::Set(d, kBound)))) << k;
#endif
    }
    for (int k = 0; k < count; ++k) {
      const float* xk = xg + k * QK;
      uint8_t* o = og + k * sizeof(Block);
      if (nan[k]) {
        quantize_q8_0_block(xk, o);
        continue;
      }
      const uint16_t h = uint16_t(d16[k]);
      std::memcpy(o + offsetof(Block, d), &h, 2);
      if constexpr (kHasMin) {
        const uint16_t m = uint16_t(m16[k]);
        std::memcpy(o + offsetof(Block, m), &m, 2);
      }
      const auto vid = hn::Set(d, ids[k]);
#if HWY_TARGET == HWY_WASM
      if (tame >> k & 1) {
        uint8_t* qs = o + offsetof(Block, qs);
        VI q[8];
        if constexpr (kType == GgmlType::Q8_0) {
          // roundf(y) is trunc(y + copysign(0.49999997f, y)) for every finite float y
          // (checked exhaustively): no tie is lost to the addition's rounding.
          const auto below_half = hn::Set(d, 0x1.fffffep-2f);
          for (int j = 0; j < 8; ++j) {
            const auto y = hn::Mul(hn::LoadU(d, xk + 4 * j), vid);
            q[j] = SmallInt(hn::Trunc(hn::Add(y, hn::CopySign(below_half, y))));
          }
          Store16Bytes<true>(q[0], q[1], q[2], q[3], qs);
          Store16Bytes<true>(q[4], q[5], q[6], q[7], qs + 16);
        } else {
          constexpr float kOffset = kType == GgmlType::Q4_0 ? 8.5f : kType == GgmlType::Q5_0 ? 16.5f : 0.5f;
          constexpr float kLimit = kQ5 ? 31.0f : 15.0f;
          const auto vmin = hn::Set(d, lo[k]);
          uint32_t qh = 0;
          for (int j = 0; j < 4; ++j) {
            auto x0 = hn::LoadU(d, xk + 4 * j), x1 = hn::LoadU(d, xk + QK / 2 + 4 * j);
            if constexpr (kHasMin) x0 = hn::Sub(x0, vmin), x1 = hn::Sub(x1, vmin);
            auto t0 = hn::Trunc(hn::Add(hn::Mul(x0, vid), hn::Set(d, kOffset)));
            auto t1 = hn::Trunc(hn::Add(hn::Mul(x1, vid), hn::Set(d, kOffset)));
            if constexpr (kType != GgmlType::Q5_1) t0 = hn::Min(t0, hn::Set(d, kLimit)), t1 = hn::Min(t1, hn::Set(d, kLimit));
            if constexpr (kQ5) {
              const VI n0 = SmallInt(t0), n1 = SmallInt(t1);
              q[j] = hn::Or(hn::And(n0, nibble), hn::ShiftLeft<4>(hn::And(n1, nibble)));
              // Bit 4 of each level into the sign bit, four at a time into qh.
              qh |= uint32_t(wasm_i32x4_bitmask(hn::ShiftLeft<27>(n0).raw)) << (4 * j);
              qh |= uint32_t(wasm_i32x4_bitmask(hn::ShiftLeft<27>(n1).raw)) << (QK / 2 + 4 * j);
            } else {
              q[j] = SmallInt(hn::Add(t0, hn::Mul(t1, hn::Set(d, 16.0f))));  // xi0 | xi1 << 4, exact
            }
          }
          Store16Bytes<false>(q[0], q[1], q[2], q[3], qs);
          if constexpr (kQ5) std::memcpy(o + offsetof(Block, qh), &qh, 4);
        }
        continue;
      }
#endif
      if constexpr (kType == GgmlType::Q8_0) {
        for (int j = 0; j < QK; j += N) {
          StoreLowBytes(TruncI32(RoundAway(hn::Mul(hn::LoadU(d, xk + j), vid))), o + offsetof(Block, qs) + j);
        }
        continue;
      } else {
        const auto vmin = hn::Set(d, lo[k]);
        uint32_t qh = 0;
        for (int j = 0; j < QK / 2; j += N) {
          const auto x0 = hn::LoadU(d, xk + j), x1 = hn::LoadU(d, xk + QK / 2 + j);
          hn::Vec<DI> l0, l1;
          if constexpr (kType == GgmlType::Q5_1) {  // (uint8_t)(x0 + 0.5f): no clamp
            const auto half = hn::Set(d, 0.5f);
            l0 = TruncI32(hn::Add(hn::Mul(hn::Sub(x0, vmin), vid), half));
            l1 = TruncI32(hn::Add(hn::Mul(hn::Sub(x1, vmin), vid), half));
          } else {
            constexpr float kOffset = kType == GgmlType::Q4_0 ? 8.5f : kType == GgmlType::Q5_0 ? 16.5f : 0.5f;
            constexpr int kLimit = kQ5 ? 31 : 15;
            l0 = Levels(x0, vmin, vid, kOffset, kLimit, kHasMin);
            l1 = Levels(x1, vmin, vid, kOffset, kLimit, kHasMin);
          }
          if constexpr (kQ5) {
            // The reference's `(xi0 & 0x0F) | ((xi1 & 0x0F) << 4)`, and bit 4 into qh.
            StoreLowBytes(hn::Or(hn::And(l0, nibble), hn::ShiftLeft<4>(hn::And(l1, nibble))), o + offsetof(Block, qs) + j);
            AddHighBits(l0, j, qh);
            AddHighBits(l1, QK / 2 + j, qh);
          } else {
            // The reference's `qs = xi0; qs |= xi1 << 4` on the bytes of the levels.
            StoreLowBytes(hn::Or(l0, hn::ShiftLeft<4>(l1)), o + offsetof(Block, qs) + j);
          }
        }
        if constexpr (kQ5) std::memcpy(o + offsetof(Block, qh), &qh, 4);
      }
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
    case GgmlType::Q4_0: LegacyBlocks<GgmlType::Q4_0>(x, out, blocks); return true;
    case GgmlType::Q4_1: LegacyBlocks<GgmlType::Q4_1>(x, out, blocks); return true;
    case GgmlType::Q5_0: LegacyBlocks<GgmlType::Q5_0>(x, out, blocks); return true;
    case GgmlType::Q5_1: LegacyBlocks<GgmlType::Q5_1>(x, out, blocks); return true;
    case GgmlType::Q8_0: LegacyBlocks<GgmlType::Q8_0>(x, out, blocks); return true;
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
