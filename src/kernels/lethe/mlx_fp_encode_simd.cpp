// MLX's fp modes (mxfp4, nvfp4, mxfp8) in Highway (encode_simd.h), compiled here once per
// Highway target (foreach_target.h re-includes this file); the same bytes as the reference
// (mlx_fp_encode.cpp) on every target. What is vectorized:
//  - scales, one group per lane (GroupScales): s = amax / max in the dtype; nvfp4 its E4M3
//    byte and value; mxfp4 / mxfp8 the exponent rint(log2(s)) looked up rather than
//    computed: per binade of s it is E below a threshold and E + 1 from it on, and the
//    thresholds are found at first use with the reference's own mlx_fp_exponent (this
//    platform's log2f), so the lookup is that function wherever it is monotonic; then
//    2^e exact and the byte, the non-finite cases spelled out;
//  - amax: AbsMaxBits (encode-inl.h), the integer max of the sign-cleared bits: the float
//    max for non-negative floats, and above 0x7F800000 when the group holds a NaN, which
//    MLX's reduction makes the amax.
//  - codes, lane by lane as the reference's statements: w / divisor with its two NaN
//    cases spelled out (a NaN w passes through, 0 / 0 is x86's negative default NaN: WASM
//    leaves a made NaN's sign unspecified), rounded to the weight's dtype (RoundToBF16 with
//    MLX's +NaN, RoundToF16 keeping a NaN's sign); then MLX's ToFP8 (saturating to 0x7E,
//    sign kept; MlxE4M3Signed: one add, the sign from w where the divisor is
//    positive and finite) or the E2M1 argmin: for |x| < 256 the count of midpoints |x| passes
//    (Fp4Code), else the 16 distances |x - lut[k]| each rounded to the dtype and the
//    first index of the smallest (a tournament, Fp4CodeScan; NaN: 0); FP4 codes of
//    whole groups as bytes, then packed two per byte in i16 lanes. FP4 quotients by
//    power-of-two divisors are products with the exact reciprocal.
//  - --reuse-scales: the same codes with the stored scales, then exact_code: a value that
//    a code's value times the scale gives exactly (same bits, not NaN) takes that code
//    (the computed one first, then mxfp8's 0x7F / 0xFF, or FP4's first k). For a scale
//    whose products are exact and found again by the quotient (ExactByQuotient: every
//    E8M0 / E4M3 scale but the extreme ones) that is only FP4's -0.0 -> 8 and mxfp8's
//    +-480 * scale -> 0x7F / 0xFF, one compare each.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mlx_fp_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <algorithm>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/quant/fp4_values.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool MlxFpAmax(const float*, uint64_t, uint64_t, float*) { return false; }
HWY_NOINLINE bool MlxFpCodes(const float*, uint64_t, uint64_t, DType, DType, bool, const float*, const float*, uint8_t*) {
  return false;
}
HWY_NOINLINE bool MlxFpScales(const float*, uint64_t, bool, float, DType, const int32_t*, uint8_t*, float*) {
  return false;
}
#else

HWY_NOINLINE bool MlxFpAmax(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group,
                            float* HWY_RESTRICT amax) {
  if (group == 0 || group > 512 || group % 2 != 0) return false;  // MLX's are 16 and 32
  for (uint64_t g = 0; g < groups; ++g) {
    uint32_t bits = AbsMaxBits(values + g * group, group);
    if (bits > 0x7F800000u) bits = 0x7FC00000u;  // the reference's quiet_NaN()
    std::memcpy(&amax[g], &bits, 4);
  }
  return true;
}

enum class Round { kF32, kBF16, kF16 };

// in_dtype(t, v): MLX's static_cast to t and back.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF InDtype(DF df, VF v) {
  if constexpr (kRound == Round::kF32) return v;
  if constexpr (kRound == Round::kF16) return RoundToF16(df, v);
  // _MLX_BFloat16 makes every NaN +NaN (RoundToBF16 gives -NaN).
  const hn::RebindToUnsigned<DF> du;
  return hn::IfThenElse(hn::Eq(v, v), RoundToBF16(df, v), hn::BitCast(df, hn::Set(du, 0x7FC00000u)));
}

// mlx_f32_to_e4m3 (MLX's ToFP8) in u32 lanes of |v|'s code ORed with `sign` (0 or
// 0x80000000 per lane): >= 448.0f (Inf, NaN of either sign too) saturates to 0x7E. Both
// references are c10's rounding below 448, so this is E4M3Clamped without its NaN
// increment (encode-inl.h): one add, no select.
template <class DF, class VF = hn::VFromD<DF>, class VU = hn::VFromD<hn::RebindToUnsigned<DF>>>
HWY_INLINE VU MlxE4M3Signed(DF df, VF v, VU sign) {
  return E4M3ClampedSigned<false>(df, v, sign);
}
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> MlxE4M3(DF df, VF v) {
  const hn::RebindToUnsigned<DF> du;
  return MlxE4M3Signed(df, v, hn::And(hn::BitCast(du, v), hn::Set(du, 0x80000000u)));
}

// fp4_code itself: the first k with the smallest in_dtype(|x - lut[k]|), as a tournament (four
// levels of pairs instead of a chain of 15 dependent selects): a pair keeps its right
// entry only if that one is strictly smaller, so each level keeps the first index of its
// minimum, as the reference's scan does. NaN: x is NaN in every distance or in none
// (x - lut[k] of a finite x never is), and an all-NaN tournament keeps index 0.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> Fp4CodeScan(DF df, VF x) {
  const hn::RebindToUnsigned<DF> du;
  using VU = hn::VFromD<decltype(du)>;
  auto dist = [&](uint32_t k) { return hn::Abs(InDtype<kRound>(df, hn::Sub(x, hn::Set(df, quant::kE2M1Signed[k])))); };
  // right < left ? right : left. WASM: Highway's Min(right, left) is exactly that
  // (f32x4.pmin, one minps), where IfThenElse is a v128.bitselect: three instructions
  // on x86, against one blend natively, and the tournament is mostly selects.
  const auto keep_smaller = [](auto m, VF left, VF right) {
#if HWY_TARGET == HWY_WASM
    (void)m;
    return hn::Min(right, left);
#else
    return hn::IfThenElse(m, right, left);
#endif
  };
  VF v[8];
  VU idx[8];
  for (uint32_t i = 0; i < 8; ++i) {
    const VF left = dist(2 * i), right = dist(2 * i + 1);
    const auto m = hn::Lt(right, left);
    v[i] = keep_smaller(m, left, right);
#if HWY_TARGET == HWY_WASM
    idx[i] = hn::Sub(hn::Set(du, 2 * i), hn::VecFromMask(du, hn::RebindMask(du, m)));  // 2i, or 2i + 1 (mask -1)
#else
    idx[i] = hn::IfThenElse(hn::RebindMask(du, m), hn::Set(du, 2 * i + 1), hn::Set(du, 2 * i));
#endif
  }
  for (uint32_t n = 8; n > 1; n /= 2)
    for (uint32_t i = 0; i < n / 2; ++i) {
      const auto m = hn::Lt(v[2 * i + 1], v[2 * i]);
      v[i] = keep_smaller(m, v[2 * i], v[2 * i + 1]);
      idx[i] = hn::IfThenElse(hn::RebindMask(du, m), idx[2 * i + 1], idx[2 * i]);
    }
  return idx[0];
}

// fp4_code by thresholds, for every x with |x| < 256 (the other lanes, Inf and NaN among
// them, go to Fp4CodeScan): the scan's answer is the number n of E2M1 midpoints (0.25,
// 0.75, 1.25, 1.75, 2.5, 3.5, 5) that |x| exceeds, 8 + n for a negative x, and 0 when n is
// 0 (then +0.0's distance ties -0.0's and the scan keeps the first). Near each midpoint
// both distances are exact (Sterbenz), so a tie is a true midpoint and goes to the lower
// code; elsewhere the dtype's rounding is monotonic and cannot make another code win;
// rounding x - lut[k] to f32, BF16 or F16 first breaks this from 512 on (BF16), so 256 is
// the bound. Checked against fp4_code for every F32 x with |x| < 256 (code dtype F32: every
// float, since nvfp4 chooses F32 codes for BF16 / F16 weights too) and every BF16 / F16
// value below it (a one-off exhaustive run on x86; each dtype's code is IEEE arithmetic,
// the same on every target). 7 compares and adds instead of 16 distances and a
// tournament of 15 selects.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> Fp4Code(DF df, VF x) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, x);
  const auto y = hn::BitCast(df, hn::And(bits, hn::Set(du, 0x7FFFFFFFu)));
  if (HWY_UNLIKELY(!hn::AllTrue(df, hn::Lt(y, hn::Set(df, 256.0f))))) return Fp4CodeScan<kRound>(df, x);
  const auto first = hn::VecFromMask(du, hn::RebindMask(du, hn::Lt(hn::Set(df, 0.25f), y)));
  auto minus_n = first;  // -n: each exceeded midpoint's mask is -1
  for (const float m : {0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f})
    minus_n = hn::Add(minus_n, hn::VecFromMask(du, hn::RebindMask(du, hn::Lt(hn::Set(df, m), y))));
  const auto eight_if_negative = hn::And(hn::ShiftRight<28>(bits), hn::Set(du, 8u));
  return hn::Or(hn::Sub(hn::Zero(du), minus_n), hn::And(first, eight_if_negative));
}

// quant::mlx_e4m3_to_f32 of the low byte of each u32 lane: (1 + m/8) * 2^(e-7) from the
// bits, m * 2^-9 (exact) for e == 0, the sign ORed in (-0.0 for 0x80, as -v gives).
template <class DF, class VU>
HWY_INLINE hn::VFromD<DF> MlxE4M3ToF32(DF df, VU code) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto mag = hn::And(code, hn::Set(du, 0x7Fu));
  const auto normal = hn::BitCast(df, hn::Add(hn::ShiftLeft<20>(mag), hn::Set(du, UINT32_C(120) << 23)));
  const auto sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)), hn::Set(df, 0.001953125f));
  const auto v = hn::IfThenElse(hn::RebindMask(df, hn::Lt(hn::BitCast(di, mag), hn::Set(di, 8))), sub, normal);
  return hn::Or(v, hn::BitCast(df, hn::ShiftLeft<24>(hn::And(code, hn::Set(du, 0x80u)))));
}

// same(a, b) of the reference (equal, and the same sign): the same bits, not NaN.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::Mask<DF> Same(DF df, VF a, VF b) {
  const hn::RebindToUnsigned<DF> du;
  return hn::And(hn::RebindMask(df, hn::Eq(hn::BitCast(du, a), hn::BitCast(du, b))), hn::Eq(a, a));
}

// --reuse-scales' exact_code: the code if its value times `scale` is w (same()), else
// mxfp8's top code of w's sign (0x7F / 0xFF: 480 * scale), else FP4's first k whose
// value times scale is w, else the code. The products of constants are per group (the
// reference's float products, the same in a lane or not).
template <bool kFp8, class DF, class VF = hn::VFromD<DF>, class VU = hn::VFromD<hn::RebindToUnsigned<DF>>>
HWY_INLINE VU ExactCode(DF df, VF w, float scale, VU code) {
  const hn::RebindToUnsigned<DF> du;
  if constexpr (kFp8) {
    const auto exact = Same(df, hn::Mul(MlxE4M3ToF32(df, code), hn::Set(df, scale)), w);
    const auto neg = hn::RebindMask(df, hn::Ne(hn::And(hn::BitCast(du, w), hn::Set(du, 0x80000000u)), hn::Zero(du)));
    const float top = 480.0f * scale, bottom = -480.0f * scale;
    const auto top_value = hn::IfThenElse(neg, hn::Set(df, bottom), hn::Set(df, top));
    const auto top_code = hn::IfThenElse(hn::RebindMask(du, neg), hn::Set(du, 0xFFu), hn::Set(du, 0x7Fu));
    const auto r = hn::IfThenElse(hn::RebindMask(du, Same(df, top_value, w)), top_code, code);
    return hn::IfThenElse(hn::RebindMask(du, exact), code, r);
  } else {
    auto r = code;
    auto exact = hn::FirstN(du, 0);  // none yet
    for (int k = 15; k >= 0; --k) {  // downwards: the first k that matches is selected last
      const auto hit = hn::RebindMask(du, Same(df, hn::Set(df, quant::kE2M1Signed[k] * scale), w));
      const auto kk = hn::Set(du, static_cast<uint32_t>(k));
      r = hn::IfThenElse(hit, kk, r);
      exact = hn::Or(exact, hn::And(hit, hn::Eq(code, kk)));
    }
    return hn::IfThenElse(exact, code, r);
  }
}

// 1 / d if d is a power of two whose reciprocal is a normal float (2^-126 ... 2^126), else
// 0. Then x * (1 / d) is x / d: the same exact quotient, rounded once (subnormal results
// included). mxfp4 / mxfp8's divisors are powers of two, and a multiply is cheaper.
HWY_INLINE float ExactReciprocal(float d) {
  uint32_t b;
  std::memcpy(&b, &d, 4);
  const uint32_t e = b >> 23;  // the sign too: a negative d has none
  return (b & 0x7FFFFFu) == 0 && e >= 1 && e <= 253 ? 1.0f / d : 0.0f;
}

// kMul: x * reciprocal (ExactReciprocal's), else x / divisor.
template <bool kMul, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF DivideBy(DF df, VF x, float divisor, float reciprocal) {
  if constexpr (kMul) return hn::Mul(x, hn::Set(df, reciprocal));
  return hn::Div(x, hn::Set(df, divisor));
}

// divide(w, divisor), then in_dtype(t, ...).
template <Round kT, bool kMul, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF Quotient(DF df, VF x, float divisor, float reciprocal) {
  const hn::RebindToUnsigned<DF> du;
  auto q = hn::IfThenElse(hn::Eq(x, x), DivideBy<kMul>(df, x, divisor, reciprocal), x);
  if (divisor == 0) q = hn::IfThenElse(hn::Eq(x, hn::Zero(df)), hn::BitCast(df, hn::Set(du, 0xFFC00000u)), q);
  return InDtype<kT>(df, q);
}

// Quotient for an FP4 code, or for an E4M3 code whose sign is taken from w (SignOf): a
// NaN quotient's sign does not matter there (every NaN is FP4 code 0, Fp4Code's scan, and
// E4M3's saturation clears it), so the NaN cases need no selects.
template <Round kT, bool kMul, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF Fp4Quotient(DF df, VF x, float divisor, float reciprocal) {
  const auto q = DivideBy<kMul>(df, x, divisor, reciprocal);
  if constexpr (kT == Round::kF32) return q;
  if constexpr (kT == Round::kF16) return RoundToF16(df, q);
  return RoundToBF16(df, q);
}

// The sign of Quotient(w) in dtype t when the divisor is positive and finite: w's (a
// quotient by d > 0 keeps it, NaN passes through with it, and rounding to F16 keeps it),
// but BF16 makes every NaN +NaN (InDtype).
template <Round kT, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> SignOf(DF /* df */, VF w) {
  const hn::RebindToUnsigned<DF> du;
  const auto sign = hn::And(hn::BitCast(du, w), hn::Set(du, 0x80000000u));
  if constexpr (kT == Round::kBF16) return hn::And(sign, hn::VecFromMask(du, hn::RebindMask(du, hn::Eq(w, w))));
  return sign;
}

// When ExactCode reduces to less, for a group's stored scale and its divisor d =
// in_dtype(t, scale); each needs d == scale, a positive normal scale with at most 4
// significant bits (E8M0's and E4M3's), and the products below finite. Then every
// product of a code's value and the scale is exact, distinct from the others (bits), and
// divided by d gives the code's value back exactly, which the dtype keeps (E2M1's and
// 480 have at most 4 significant bits, in range of F16 and BF16):
//  - FP4 (6 * scale finite): a w that some k's value times scale gives is found by its
//    quotient: Fp4Code gives that k, except for -0.0 (k = 8), whose code is 0. So the
//    result is the code, or 8 where w is -0.0 (same(-0.0 * scale, w)).
//  - mxfp8 (480 * scale finite): a w that is +-480 * scale has quotient +-480, code
//    0x7E | sign, whose value 448 * scale is not w; so the result is 0x7F | sign there
//    (code | 1), and elsewhere the code (exact or not, no other top value matches).
HWY_INLINE uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
HWY_INLINE bool ExactByQuotient(float scale, float d, float top) {
  const uint32_t b = Bits(scale);
  const float product = top * scale;
  return d == scale && (b >> 23) >= 1 && (b >> 23) <= 254 && (b & 0xFFFFFu) == 0 &&
         product < std::numeric_limits<float>::infinity();
}

// reuse: each group's stored scale (F32), whose exact products take their codes.
// kMul: every divisor has an ExactReciprocal (multiplied by, not divided by). Not inlined:
// all 20 instances in MlxFpCodes made one WASM function of 25,000 lines, in which V8 ran
// mlx_mxfp4 / nvfp4's unchanged FP4 loop about 20 % slower.
template <Round kT, Round kCode, bool kReuse, bool kMul>
HWY_NOINLINE void CodesBy(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, bool fp8,
                          const float* HWY_RESTRICT divisor, const float* HWY_RESTRICT reuse,
                          uint8_t* HWY_RESTRICT codes) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const size_t N16 = hn::Lanes(d16);
  uint8_t c[512];  // fp4: codes of whole groups as bytes, then packed
  uint64_t g = 0;
  while (g < groups) {
    const float* w = values + g * group;
    if (fp8) {
      const float reciprocal = kMul ? ExactReciprocal(divisor[g]) : 0.0f;
      const float d = divisor[g];
      // A positive finite divisor (every group's but degenerate ones): the sign from w,
      // the quotient's NaN sign left alone (SignOf).
      if (d > 0 && d < std::numeric_limits<float>::infinity() && (!kReuse || ExactByQuotient(reuse[g], d, 480.0f))) {
        const auto top = hn::Set(du, kReuse ? Bits(480.0f * reuse[g]) : 0u);
        EachVector(df, w, group, codes + g * group, [&](auto x) {
          const auto code = MlxE4M3Signed(df, Fp4Quotient<kT, kMul>(df, x, d, reciprocal), SignOf<kT>(df, x));
          if constexpr (!kReuse) return code;
          const auto abs = hn::And(hn::BitCast(du, x), hn::Set(du, 0x7FFFFFFFu));
          return hn::Or(code, hn::And(hn::VecFromMask(du, hn::Eq(abs, top)), hn::Set(du, 1u)));  // 480 * scale: 0x7F
        });
        ++g;
        continue;
      }
      EachVector(df, w, group, codes + g * group, [&](auto x) {
        const auto code = MlxE4M3(df, Quotient<kT, kMul>(df, x, divisor[g], reciprocal));
        if constexpr (kReuse) return ExactCode<true>(df, x, reuse[g], code);
        return code;
      });
      ++g;
      continue;
    }
    // As many groups as c holds (MlxFpAmax let only even groups up to 512 through).
    const uint64_t m = std::min<uint64_t>(groups - g, sizeof(c) / group);
    for (uint64_t k = 0; k < m; ++k) {
      const float reciprocal = kMul ? ExactReciprocal(divisor[g + k]) : 0.0f;
      const auto code_of = [&](auto x) { return Fp4Code<kCode>(df, Fp4Quotient<kT, kMul>(df, x, divisor[g + k], reciprocal)); };
      if constexpr (!kReuse) {
        EachVector(df, w + k * group, group, c + k * group, code_of);
      } else if (ExactByQuotient(reuse[g + k], divisor[g + k], 6.0f)) {
        EachVector(df, w + k * group, group, c + k * group, [&](auto x) {  // -0.0: code 8
          const auto minus_zero = hn::Eq(hn::BitCast(du, x), hn::Set(du, 0x80000000u));
          return hn::Or(code_of(x), hn::And(hn::VecFromMask(du, minus_zero), hn::Set(du, 8u)));
        });
      } else {
        EachVector(df, w + k * group, group, c + k * group,
                   [&](auto x) { return ExactCode<false>(df, x, reuse[g + k], code_of(x)); });
      }
    }
    // Pairs of bytes (even low) as i16 lanes: (lo | hi << 4) fits a byte.
    const size_t n = m * group;
    uint8_t* out = codes + g * group / 2;
    size_t i = 0;
    for (; i + 2 * N16 <= n; i += 2 * N16) {
      const auto pair = hn::BitCast(d16, hn::LoadU(hn::Repartition<uint8_t, decltype(d16)>(), c + i));
      const auto packed = hn::And(hn::Or(pair, hn::ShiftRight<4>(pair)), hn::Set(d16, 0xFF));
      hn::StoreU(hn::DemoteTo(d8, packed), d8, out + i / 2);
    }
    for (; i < n; i += 2) out[i / 2] = static_cast<uint8_t>(c[i] | (c[i + 1] << 4));
    g += m;
  }
}

// The groups' FP4 codes multiplied by the reciprocals when every divisor is a power of
// two that has one (mxfp4's, unless a group is not finite), else divided (nvfp4's E4M3
// divisors): chosen per call, as a per-group choice cost nvfp4 more than it saved. mxfp8
// divides: multiplying measured no faster there (natively a little slower).
template <Round kT, Round kCode, bool kReuse>
HWY_INLINE void Codes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, bool fp8,
                      const float* HWY_RESTRICT divisor, const float* HWY_RESTRICT reuse, uint8_t* HWY_RESTRICT codes) {
  bool mul = !fp8;
  for (uint64_t g = 0; g < groups && mul; ++g) mul = mul && ExactReciprocal(divisor[g]) != 0;
  if (mul) CodesBy<kT, kCode, kReuse, true>(values, groups, group, fp8, divisor, reuse, codes);
  else CodesBy<kT, kCode, kReuse, false>(values, groups, group, fp8, divisor, reuse, codes);
}

HWY_INLINE Round RoundOf(DType t) { return t == DType::BF16 ? Round::kBF16 : t == DType::F16 ? Round::kF16 : Round::kF32; }

template <bool kReuse>
HWY_INLINE void CodesOf(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, DType t, DType code_dtype,
                        bool fp8, const float* HWY_RESTRICT divisor, const float* HWY_RESTRICT reuse,
                        uint8_t* HWY_RESTRICT codes) {
  // (t, code dtype): nvfp4 chooses its codes in F32 whatever t is; the others in t.
  const Round rt = RoundOf(t), rc = RoundOf(code_dtype);
  if (rt == Round::kF32) return Codes<Round::kF32, Round::kF32, kReuse>(values, groups, group, fp8, divisor, reuse, codes);
  if (rt == Round::kBF16) {
    if (rc == Round::kF32) return Codes<Round::kBF16, Round::kF32, kReuse>(values, groups, group, fp8, divisor, reuse, codes);
    return Codes<Round::kBF16, Round::kBF16, kReuse>(values, groups, group, fp8, divisor, reuse, codes);
  }
  if (rc == Round::kF32) return Codes<Round::kF16, Round::kF32, kReuse>(values, groups, group, fp8, divisor, reuse, codes);
  return Codes<Round::kF16, Round::kF16, kReuse>(values, groups, group, fp8, divisor, reuse, codes);
}

HWY_NOINLINE bool MlxFpCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, DType t,
                             DType code_dtype, bool fp8, const float* HWY_RESTRICT divisor,
                             const float* HWY_RESTRICT reuse, uint8_t* HWY_RESTRICT codes) {
  if (group == 0 || group > 512 || group % 2 != 0) return false;  // as MlxFpAmax
  if (reuse) CodesOf<true>(values, groups, group, t, code_dtype, fp8, divisor, reuse, codes);
  else CodesOf<false>(values, groups, group, t, code_dtype, fp8, divisor, reuse, codes);
  return true;
}

// 2^e for integer lanes e in [-149, 128], exact (128: +inf): the bits for e >= -126, else
// 2^(e + 64) * 2^-64 (a power of two times a power of two: exact in the subnormal range).
template <class DF, class VI>
HWY_INLINE hn::VFromD<DF> Pow2(DF df, VI e) {
  const hn::RebindToSigned<DF> di;
  const auto normal = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(e, hn::Set(di, 127))));
  const auto sub = hn::Mul(hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(e, hn::Set(di, 127 + 64)))),
                           hn::Set(df, 5.421010862427522e-20f));  // 2^-64
  return hn::IfThenElse(hn::RebindMask(df, hn::Lt(e, hn::Set(di, -126))), sub, normal);
}

// group_scale for a vector of groups (one per lane): s = in_dtype(t, amax / maxval) (a NaN
// amax, MLX's +NaN, passed through rather than divided: WASM may flip a made NaN's sign).
// nvfp4: the E4M3 byte of s and, as divisor, its value in t. mxfp4 / mxfp8: s's exponent
// e = rint(in_dtype(t, log2(s))) from `thresholds` (mlx_fp_exponent_thresholds: e is the
// binade's E, plus 1 from the threshold's bits on), 0 for s == 0; the byte (e + 127) & 0xFF
// and the divisor in_dtype(t, 2^e); an infinite or NaN s (e is the int32 conversion's
// INT32_MIN, as a float in t: F16 makes it -inf) gives byte 0x80 in F32 (-2^31 + 127 rounds
// to -(2^31 - 128)), 0 in BF16 and F16, and divisor 0.
template <Round kT, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF GroupScales(DF df, VF amax, bool nvfp4, float maxval, const int32_t* HWY_RESTRICT thresholds,
                          hn::VFromD<hn::RebindToUnsigned<DF>>& byte) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto s = InDtype<kT>(df, hn::IfThenElse(hn::Eq(amax, amax), hn::Div(amax, hn::Set(df, maxval)), amax));
  if (nvfp4) {
    byte = MlxE4M3(df, s);
    return InDtype<kT>(df, MlxE4M3ToF32(df, byte));
  }
  const auto bits = hn::BitCast(di, s);
  // The binade's E: from the bits, a subnormal's from s * 2^64 (exact, normal).
  const auto scaled = hn::BitCast(di, hn::Mul(s, hn::Set(df, 18446744073709551616.0f)));
  const auto subnormal = hn::Lt(bits, hn::Set(di, 0x00800000));
  auto e = hn::IfThenElse(subnormal, hn::Sub(hn::ShiftRight<23>(scaled), hn::Set(di, 191)),
                          hn::Sub(hn::ShiftRight<23>(bits), hn::Set(di, 127)));
  const auto finite = hn::Lt(bits, hn::Set(di, 0x7F800000));  // s >= 0: not Inf, not NaN
  const auto zero = hn::Eq(bits, hn::Zero(di));
  const auto index = hn::IfThenElseZero(hn::And(finite, hn::Not(zero)), hn::Add(e, hn::Set(di, 149)));
  const auto threshold = hn::GatherIndex(di, thresholds, index);
  e = hn::Sub(e, hn::VecFromMask(di, hn::Not(hn::Lt(bits, threshold))));  // + 1 from the threshold on
  e = hn::IfThenElseZero(hn::Not(zero), e);
  const uint32_t odd_byte = kT == Round::kF32 ? 0x80u : 0u;
  byte = hn::IfThenElse(hn::RebindMask(du, finite), hn::And(hn::BitCast(du, hn::Add(e, hn::Set(di, 127))), hn::Set(du, 0xFFu)),
                        hn::Set(du, odd_byte));
  return hn::IfThenElseZero(hn::RebindMask(df, finite), InDtype<kT>(df, Pow2(df, e)));
}

template <Round kT>
HWY_INLINE void ScalesOf(const float* HWY_RESTRICT amax, uint64_t groups, bool nvfp4, float maxval,
                         const int32_t* HWY_RESTRICT thresholds, uint8_t* HWY_RESTRICT scale_bytes,
                         float* HWY_RESTRICT divisor) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  hn::VFromD<decltype(du)> byte;
  uint64_t g = 0;
  for (; g + N <= groups; g += N) {
    hn::StoreU(GroupScales<kT>(df, hn::LoadU(df, amax + g), nvfp4, maxval, thresholds, byte), df, divisor + g);
    hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, byte)), d8, scale_bytes + g);
  }
  if (g == groups) return;
  HWY_ALIGN float pad[HWY_MAX_BYTES / sizeof(float)] = {};
  HWY_ALIGN float div[HWY_MAX_BYTES / sizeof(float)];
  uint8_t bytes[HWY_MAX_BYTES / sizeof(float)];
  std::memcpy(pad, amax + g, (groups - g) * sizeof(float));
  hn::Store(GroupScales<kT>(df, hn::Load(df, pad), nvfp4, maxval, thresholds, byte), df, div);
  hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, byte)), d8, bytes);
  std::memcpy(divisor + g, div, (groups - g) * sizeof(float));
  std::memcpy(scale_bytes + g, bytes, groups - g);
}

HWY_NOINLINE bool MlxFpScales(const float* HWY_RESTRICT amax, uint64_t groups, bool nvfp4, float maxval, DType t,
                              const int32_t* HWY_RESTRICT thresholds, uint8_t* HWY_RESTRICT scale_bytes,
                              float* HWY_RESTRICT divisor) {
  if (!nvfp4 && thresholds == nullptr) return false;
  const Round rt = RoundOf(t);
  if (rt == Round::kF32) ScalesOf<Round::kF32>(amax, groups, nvfp4, maxval, thresholds, scale_bytes, divisor);
  else if (rt == Round::kBF16) ScalesOf<Round::kBF16>(amax, groups, nvfp4, maxval, thresholds, scale_bytes, divisor);
  else ScalesOf<Round::kF16>(amax, groups, nvfp4, maxval, thresholds, scale_bytes, divisor);
  return true;
}

#endif  // HWY_TARGET == HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace lethe
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace lethe {

HWY_EXPORT(MlxFpAmax);
HWY_EXPORT(MlxFpCodes);
HWY_EXPORT(MlxFpScales);

namespace simd {

bool mlx_fp_amax(const float* values, uint64_t groups, uint64_t group, float* amax) {
  return HWY_DYNAMIC_DISPATCH(MlxFpAmax)(values, groups, group, amax);
}

bool mlx_fp_codes(const float* values, uint64_t groups, uint64_t group, DType t, DType code_dtype, bool fp8,
                  const float* divisor, const float* reuse, uint8_t* codes) {
  return HWY_DYNAMIC_DISPATCH(MlxFpCodes)(values, groups, group, t, code_dtype, fp8, divisor, reuse, codes);
}

bool mlx_fp_scales(const float* amax, uint64_t groups, bool nvfp4, float maxval, DType t, const int32_t* thresholds,
                   uint8_t* scale_bytes, float* divisor) {
  return HWY_DYNAMIC_DISPATCH(MlxFpScales)(amax, groups, nvfp4, maxval, t, thresholds, scale_bytes, divisor);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
