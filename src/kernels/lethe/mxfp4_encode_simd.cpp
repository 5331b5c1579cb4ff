// The MXFP4 encoder in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (mxfp4_encode.cpp) on every target. Per group of 32: the values rounded to BF16 with
// kernels/cast.h's bits, their amax as the max of the sign-cleared bits (a NaN among them
// gives a positive NaN, whose scale is 0 whatever its payload, as the reference's first
// NaN's), the scale and its factor as the reference computes them, then each quotient's
// E2M1 code as the count of thresholds that downcast_to_mxfp_torch's bit steps amount to
// (Mxfp4Code). Even and odd elements are loaded apart, so each lane packs its pair, the
// even one low.
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

// mxfp4_code of each lane, in u32 lanes, as a count of thresholds. The reference's bit
// steps round |q| to E2M1 to nearest, ties to the even code, saturating at 6 (Inf and NaN
// included): so the code is the number of the midpoints 0.25, 0.75, 1.25, 1.75, 2.5,
// 3.5, 5 that |q| passes, a tie passing the midpoint when the upper code is the even one
// (0.75, 1.75, 3.5), and |q|'s bits compared as integers (NaN above them all: 7), with
// the sign bit as code bit 3. Equal to mxfp4_code for all 2^32 inputs (a one-off
// exhaustive run); 7 compares and adds instead of the bit steps and their per-lane shift.
template <class DU, class V = hn::VFromD<DU>>
HWY_INLINE V Mxfp4Code(DU du, V q) {
  const hn::RebindToSigned<DU> di;
  const auto a = hn::BitCast(di, hn::And(q, hn::Set(du, 0x7FFFFFFFu)));
  constexpr int32_t kAbove[7] = {0x3E800000, 0x3F400000 - 1, 0x3FA00000, 0x3FE00000 - 1,
                                 0x40200000, 0x40600000 - 1, 0x40A00000};  // |q| > these bits
  auto minus = hn::Zero(di);  // -code: each passed threshold's mask is -1
  for (const int32_t t : kAbove) minus = hn::Add(minus, hn::VecFromMask(di, hn::Gt(a, hn::Set(di, t))));
  return hn::Or(hn::ShiftRight<28>(hn::And(q, hn::Set(du, 0x80000000u))), hn::BitCast(du, hn::Neg(minus)));
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
