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
//    dtype, the first index of the smallest (a tournament, see Fp4Code; NaN: 0); FP4
//    codes of whole groups as bytes, then packed two per byte in i16 lanes.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mlx_fp_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <algorithm>
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

// mlx_f32_to_e4m3 (MLX's ToFP8) in u32 lanes: >= 448.0f (NaN too) saturates to 0x7E.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> MlxE4M3(DF df, VF v) {
  return E4M3Saturating<(UINT32_C(543) << 21), 0x7Eu>(df, v);
}

// fp4_code: the first k with the smallest in_dtype(|x - lut[k]|), as a tournament (four
// levels of pairs instead of a chain of 15 dependent selects): a pair keeps its right
// entry only if that one is strictly smaller, so each level keeps the first index of its
// minimum, as the reference's scan does. NaN: x is NaN in every distance or in none
// (x - lut[k] of a finite x never is), and an all-NaN tournament keeps index 0.
template <Round kRound, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> Fp4Code(DF df, VF x) {
  const hn::RebindToUnsigned<DF> du;
  using VU = hn::VFromD<decltype(du)>;
  auto dist = [&](uint32_t k) { return hn::Abs(InDtype<kRound>(df, hn::Sub(x, hn::Set(df, quant::kE2M1Signed[k])))); };
  VF v[8];
  VU idx[8];
  for (uint32_t i = 0; i < 8; ++i) {
    const VF left = dist(2 * i), right = dist(2 * i + 1);
    const auto m = hn::Lt(right, left);
    v[i] = hn::IfThenElse(m, right, left);
    idx[i] = hn::IfThenElse(hn::RebindMask(du, m), hn::Set(du, 2 * i + 1), hn::Set(du, 2 * i));
  }
  for (uint32_t n = 8; n > 1; n /= 2)
    for (uint32_t i = 0; i < n / 2; ++i) {
      const auto m = hn::Lt(v[2 * i + 1], v[2 * i]);
      v[i] = hn::IfThenElse(m, v[2 * i + 1], v[2 * i]);
      idx[i] = hn::IfThenElse(hn::RebindMask(du, m), idx[2 * i + 1], idx[2 * i]);
    }
  return idx[0];
}

// divide(w, divisor), then in_dtype(t, ...).
template <Round kT, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF Quotient(DF df, VF x, float divisor) {
  const hn::RebindToUnsigned<DF> du;
  auto q = hn::IfThenElse(hn::Eq(x, x), hn::Div(x, hn::Set(df, divisor)), x);
  if (divisor == 0) q = hn::IfThenElse(hn::Eq(x, hn::Zero(df)), hn::BitCast(df, hn::Set(du, 0xFFC00000u)), q);
  return InDtype<kT>(df, q);
}

template <Round kT, Round kCode>
HWY_INLINE void Codes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, bool fp8,
                      const float* HWY_RESTRICT divisor, uint8_t* HWY_RESTRICT codes) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const size_t N16 = hn::Lanes(d16);
  uint8_t c[512];  // fp4: codes of whole groups as bytes, then packed
  uint64_t g = 0;
  while (g < groups) {
    const float* w = values + g * group;
    if (fp8) {
      EachVector(df, w, group, codes + g * group, [&](auto x) { return MlxE4M3(df, Quotient<kT>(df, x, divisor[g])); });
      ++g;
      continue;
    }
    // As many groups as c holds (MlxFpAmax let only even groups up to 512 through).
    const uint64_t m = std::min<uint64_t>(groups - g, sizeof(c) / group);
    for (uint64_t k = 0; k < m; ++k)
      EachVector(df, w + k * group, group, c + k * group,
                 [&](auto x) { return Fp4Code<kCode>(df, Quotient<kT>(df, x, divisor[g + k])); });
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
