// The MXFP4 encoder in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (mxfp4_encode.cpp) on every target. Per group of 32: the values rounded to BF16 with
// kernels/cast.h's bits, their amax as the max of the sign-cleared bits (a NaN among them
// gives a positive NaN, whose scale is 0 whatever its payload, as the reference's first
// NaN's), the scale and its factor as the reference computes them, then each quotient's
// E2M1 code by downcast_to_mxfp_torch's bit steps in u32 lanes (the subnormal shift as a
// per-lane shift by min(shift, 31): the pre-shift mantissa is below 2^23, so every shift
// of 23 or more gives 0, as the reference's shifts past 31 do). Even and odd elements are
// loaded apart, so each lane packs its pair, the even one low.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mxfp4_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstring>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/mxfp4_encode.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool Mxfp4Rows(const float*, uint64_t, uint64_t, uint8_t*, uint8_t*, bool) { return false; }
#else

// Targets without per-lane shifts shift the subnormal mantissa with an exact F32 multiply
// instead: Highway 1.0.3 emulates each shift in five select steps on WASM, and with
// power-of-two multiplies and shuffles on SSSE3 / SSE4 (which run this path too, so that
// the native tests compare it with the scalar code).
constexpr bool kFloatShift = HWY_TARGET == HWY_WASM || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3;

// mxfp4_code of each lane, in u32 lanes.
template <class DU, class V = hn::VFromD<DU>>
HWY_INLINE V Mxfp4Code(DU du, V q) {
  const auto one = hn::Set(du, 1u);
  const V sign = hn::And(q, hn::Set(du, 0x80000000u));
  const V e = hn::And(hn::ShiftRight<23>(q), hn::Set(du, 0xFFu));
  const V m_orig = hn::And(q, hn::Set(du, 0x7FFFFFu));
  // e < 127: shift = 127 - e - 1, the mantissa with its implicit bit shifted down.
  const auto subnormal = hn::Not(cast::GreaterSmall(du, e, 126));
  const V shift = hn::Min(hn::Sub(hn::Set(du, 126u), e), hn::Set(du, 31u));  // only read where e < 127
  const V pre = hn::Or(hn::Set(du, 0x400000u), hn::ShiftRight<1>(m_orig));
  V shifted;  // pre >> shift
  hn::Mask<DU> lost;  // (pre & ((1 << shift) - 1)) != 0
  if constexpr (kFloatShift) {
    // pre * 2^-shift in F32 is exact (pre < 2^23, 2^-31 normal): its integer part is
    // pre >> shift (read from the mantissa of that part + 2^23) and it has a fraction
    // exactly when bits were shifted out.
    const hn::Rebind<float, DU> df;
    const auto p = hn::Mul(hn::ConvertTo(df, hn::BitCast(hn::RebindToSigned<DU>(), pre)),
                           hn::BitCast(df, hn::ShiftLeft<23>(hn::Sub(hn::Set(du, 127u), shift))));
    const auto t = hn::Trunc(p);
    shifted = hn::Sub(hn::BitCast(du, hn::Add(t, hn::Set(df, 8388608.0f))), hn::Set(du, 0x4B000000u));
    lost = hn::RebindMask(du, hn::Ne(p, t));
  } else {
    shifted = hn::Shr(pre, shift);
    lost = hn::Not(hn::Eq(hn::And(pre, hn::Sub(hn::Shl(one, shift), one)), hn::Zero(du)));
  }
  const auto sticky_sub = hn::Or(hn::Eq(hn::And(m_orig, one), one), lost);
  const V m = hn::IfThenElse(subnormal, shifted, m_orig);
  const V e2 = hn::Sub(hn::Max(e, hn::Set(du, 126u)), hn::Set(du, 126u));
  const V m2bits = hn::And(hn::ShiftRight<21>(m), hn::Set(du, 3u));
  const V lsb_keep = hn::And(hn::ShiftRight<1>(m2bits), one);
  const V guard = hn::And(m2bits, one);
  const auto sticky =
      hn::Or(hn::And(subnormal, sticky_sub), hn::Not(hn::Eq(hn::And(m, hn::Set(du, 0x1FFFFFu)), hn::Zero(du))));
  const V round_inc = hn::And(guard, hn::Or(hn::IfThenElseZero(sticky, one), lsb_keep));
  const V tmp = hn::Min(hn::ShiftRight<1>(hn::Add(hn::Or(hn::ShiftLeft<2>(e2), m2bits), round_inc)), hn::Set(du, 7u));
  return hn::Or(hn::ShiftRight<28>(sign), tmp);
}

HWY_NOINLINE bool Mxfp4Rows(const float* HWY_RESTRICT values, uint64_t rows, uint64_t cols, uint8_t* HWY_RESTRICT blocks,
                            uint8_t* HWY_RESTRICT scales, bool reuse) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  if (32 % (2 * N) != 0) return false;
  const uint64_t groups = rows * (cols / 32);  // whole groups per row: one run of groups
  HWY_ALIGN float g[32];
  for (uint64_t k = 0; k < groups; ++k) {
    const float* x = values + k * 32;
    auto m = hn::Zero(di);
    for (size_t i = 0; i < 32; i += N) {
      const auto v = RoundToBF16(df, hn::LoadU(df, x + i));  // w.to(bfloat16)
      hn::Store(v, df, g + i);
      m = hn::Max(m, hn::And(hn::BitCast(di, v), hn::Set(di, 0x7FFFFFFF)));
    }
    if (!reuse) {
      const uint32_t bits = static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m)));
      float amax;
      std::memcpy(&amax, &bits, 4);
      scales[k] = mxfp4_scale_of_amax(amax);
    }
    const auto qs = hn::Set(df, mxfp4_quant_scale(scales[k]));
    for (size_t h = 0; h < 32; h += 2 * N) {
      hn::VFromD<decltype(df)> even, odd;
      hn::LoadInterleaved2(df, g + h, even, odd);
      const auto ce = Mxfp4Code(du, hn::BitCast(du, hn::Mul(even, qs)));
      const auto co = Mxfp4Code(du, hn::BitCast(du, hn::Mul(odd, qs)));
      hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, hn::Or(ce, hn::ShiftLeft<4>(co)))), d8, blocks + k * 16 + h / 2);
    }
  }
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

HWY_EXPORT(Mxfp4Rows);

namespace simd {

bool mxfp4_rows(const float* values, uint64_t rows, uint64_t cols, uint8_t* blocks, uint8_t* scales, bool reuse) {
  return HWY_DYNAMIC_DISPATCH(Mxfp4Rows)(values, rows, cols, blocks, scales, reuse);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
