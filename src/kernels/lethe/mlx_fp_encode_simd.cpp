// MLX's fp modes (mxfp4, nvfp4, mxfp8) in Highway (encode_simd.h), compiled here once per
// Highway target (foreach_target.h re-includes this file); the same bytes as the reference
// (mlx_fp_encode.cpp) on every target. Each group's scale byte and divisor stay the
// reference's scalar code (one log2 per 16 or 32 values); what is vectorized:
//  - amax: AbsMaxBits (encode-inl.h), the integer max of the sign-cleared bits: the float
//    max for non-negative floats, and above 0x7F800000 when the group holds a NaN, which
//    MLX's reduction makes the amax.
//  - codes, lane by lane as the reference's statements: w / divisor with its two NaN
//    cases spelled out (a NaN w passes through, 0 / 0 is x86's negative default NaN: WASM
//    leaves a made NaN's sign unspecified), rounded to the weight's dtype (RoundToBF16 with
//    MLX's +NaN, RoundToF16 keeping a NaN's sign); then MLX's ToFP8 (saturating to 0x7E,
//    sign kept) or the E2M1 argmin: the 16 distances |x - lut[k]| each rounded to the
//    dtype, replaced only by a strictly smaller one (ties to the lower index, NaN: 0).
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mlx_fp_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstring>

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
HWY_NOINLINE void MlxFpCodes(const float*, uint64_t, uint64_t, DType, DType, bool, const float*, uint8_t*) {}
#else

HWY_NOINLINE bool MlxFpAmax(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group,
                            float* HWY_RESTRICT amax) {
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

// mlx_f32_to_e4m3 (MLX's ToFP8) in u32 lanes: both branches, then selects.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> MlxE4M3(DF df, VF v) {
  const hn::RebindToUnsigned<DF> du;
  auto f = hn::BitCast(du, v);
  const auto sign = hn::And(f, hn::Set(du, 0x80000000u));
  f = hn::Xor(f, sign);
  const auto saturate = cast::GreaterSmall(du, f, (UINT32_C(543) << 21) - 1);  // >= 448.0f, NaN too
  const auto normal = cast::GreaterSmall(du, f, (UINT32_C(121) << 23) - 1);    // >= 2^-6
  constexpr uint32_t kDenormMask = UINT32_C(141) << 23;
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, f), hn::BitCast(df, hn::Set(du, kDenormMask)))),
                           hn::Set(du, kDenormMask));
  const auto mant_odd = hn::And(hn::ShiftRight<20>(f), hn::Set(du, 1u));
  const auto rounded =
      hn::ShiftRight<20>(hn::Add(hn::Add(f, hn::Set(du, (static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFFu)), mant_odd));
  auto r = hn::IfThenElse(normal, rounded, sub);
  r = hn::IfThenElse(saturate, hn::Set(du, 0x7Eu), hn::And(r, hn::Set(du, 0xFFu)));
  return hn::Or(r, hn::ShiftRight<24>(sign));
}

// fp4_code: the first k with the smallest in_dtype(|x - lut[k]|).
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> Fp4Code(DF df, VF x) {
  const hn::RebindToUnsigned<DF> du;
  auto best = hn::Zero(du);
  auto v = hn::Abs(InDtype<kRound>(df, hn::Sub(x, hn::Set(df, quant::kE2M1Signed[0]))));
  for (uint32_t k = 1; k < 16; ++k) {
    const auto d = hn::Abs(InDtype<kRound>(df, hn::Sub(x, hn::Set(df, quant::kE2M1Signed[k]))));
    const auto smaller = hn::Lt(d, v);
    v = hn::IfThenElse(smaller, d, v);
    best = hn::IfThenElse(hn::RebindMask(du, smaller), hn::Set(du, k), best);
  }
  return best;
}

template <Round kT, Round kCode>
HWY_INLINE void Codes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, bool fp8,
                      const float* HWY_RESTRICT divisor, uint8_t* HWY_RESTRICT codes) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto default_nan = hn::BitCast(df, hn::Set(du, 0xFFC00000u));
  uint8_t c[256];
  for (uint64_t g = 0; g < groups; ++g) {
    const float* w = values + g * group;
    const auto d = hn::Set(df, divisor[g]);
    const bool zero_divisor = divisor[g] == 0;
    // divide(w, divisor), then in_dtype(t, ...).
    auto quotient = [&](hn::VFromD<decltype(df)> x) {
      auto q = hn::IfThenElse(hn::Eq(x, x), hn::Div(x, d), x);
      if (zero_divisor) q = hn::IfThenElse(hn::Eq(x, hn::Zero(df)), default_nan, q);
      return InDtype<kT>(df, q);
    };
    if (fp8) {
      EachVector(df, w, group, codes + g * group, [&](auto x) { return MlxE4M3(df, quotient(x)); });
      continue;
    }
    for (uint64_t j0 = 0; j0 < group; j0 += sizeof(c)) {
      const uint64_t n = group - j0 < sizeof(c) ? group - j0 : sizeof(c);
      EachVector(df, w + j0, n, c, [&](auto x) { return Fp4Code<kCode>(df, quotient(x)); });
      uint8_t* out = codes + (g * group + j0) / 2;
      for (uint64_t j = 0; j < n; j += 2) out[j / 2] = static_cast<uint8_t>(c[j] | (c[j + 1] << 4));
    }
  }
}

HWY_INLINE Round RoundOf(DType t) { return t == DType::BF16 ? Round::kBF16 : t == DType::F16 ? Round::kF16 : Round::kF32; }

HWY_NOINLINE void MlxFpCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, DType t,
                             DType code_dtype, bool fp8, const float* HWY_RESTRICT divisor,
                             uint8_t* HWY_RESTRICT codes) {
  // (t, code dtype): nvfp4 chooses its codes in F32 whatever t is; the others in t.
  const Round rt = RoundOf(t), rc = RoundOf(code_dtype);
  if (rt == Round::kF32) return Codes<Round::kF32, Round::kF32>(values, groups, group, fp8, divisor, codes);
  if (rt == Round::kBF16) {
    if (rc == Round::kF32) return Codes<Round::kBF16, Round::kF32>(values, groups, group, fp8, divisor, codes);
    return Codes<Round::kBF16, Round::kBF16>(values, groups, group, fp8, divisor, codes);
  }
  if (rc == Round::kF32) return Codes<Round::kF16, Round::kF32>(values, groups, group, fp8, divisor, codes);
  return Codes<Round::kF16, Round::kF16>(values, groups, group, fp8, divisor, codes);
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

namespace simd {

bool mlx_fp_amax(const float* values, uint64_t groups, uint64_t group, float* amax) {
  return HWY_DYNAMIC_DISPATCH(MlxFpAmax)(values, groups, group, amax);
}

void mlx_fp_codes(const float* values, uint64_t groups, uint64_t group, DType t, DType code_dtype, bool fp8,
                  const float* divisor, uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(MlxFpCodes)(values, groups, group, t, code_dtype, fp8, divisor, codes);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
