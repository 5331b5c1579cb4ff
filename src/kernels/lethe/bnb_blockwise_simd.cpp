// bitsandbytes' quantize_blockwise (the double quantization's second pass, on the absmax
// minus their mean) in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (bnb_encode.cpp quantize_blockwise) on every target. Both kernels do whole vectors and
// say how many values they did; the reference does the rest with its own statements.
//  - absmax: std::max(am, fabs(x)) lane by lane as a compare and select (a NaN never
//    replaces the running value, as in std::max's argument order), then the max across
//    lanes: the values are non-negative and never NaN, so the order does not matter.
//  - the LUT index (norm_to_lut_index): x * inv, the clamp as written (NaN kept, index 0),
//    ((v + 1) * 0.5) * 65535 + 0.5 unfused in f32 lanes, truncated. The lookup itself
//    (a 64 KiB table) stays the reference's.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/bnb_blockwise_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/lethe/encode_simd.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE uint64_t BnbBlockwiseAbsmax(const float*, uint64_t, float* am) {
  *am = 0.0f;
  return 0;
}
HWY_NOINLINE uint64_t BnbBlockwiseIndex(const float*, uint64_t, float, uint16_t*) { return 0; }
#else

HWY_NOINLINE uint64_t BnbBlockwiseAbsmax(const float* HWY_RESTRICT in, uint64_t n, float* HWY_RESTRICT am) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  auto m0 = hn::Zero(df), m1 = hn::Zero(df);
  uint64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto a = hn::Abs(hn::LoadU(df, in + i)), b = hn::Abs(hn::LoadU(df, in + i + N));
    m0 = hn::IfThenElse(hn::Lt(m0, a), a, m0);  // std::max(am, fabs(x))
    m1 = hn::IfThenElse(hn::Lt(m1, b), b, m1);
  }
  *am = hn::GetLane(hn::MaxOfLanes(df, hn::Max(m0, m1)));
  return i;
}

HWY_NOINLINE uint64_t BnbBlockwiseIndex(const float* HWY_RESTRICT in, uint64_t n, float inv,
                                        uint16_t* HWY_RESTRICT index) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint16_t, decltype(df)> d16;
  const size_t N = hn::Lanes(df);
  const auto scale = hn::Set(df, inv), one = hn::Set(df, 1.0f), minus_one = hn::Set(df, -1.0f);
  const auto half = hn::Set(df, 0.5f), steps = hn::Set(df, 65535.0f);
  uint64_t i = 0;
  for (; i + N <= n; i += N) {
    auto v = hn::Mul(hn::LoadU(df, in + i), scale);
    v = hn::IfThenElse(hn::Lt(v, minus_one), minus_one, hn::IfThenElse(hn::Lt(one, v), one, v));
    const auto u = hn::Add(hn::Mul(hn::Mul(hn::Add(v, one), half), steps), half);
    const auto idx = hn::IfThenElseZero(hn::RebindMask(di, hn::Eq(v, v)), hn::ConvertTo(di, u));
    hn::StoreU(hn::DemoteTo(d16, idx), d16, index + i);  // 0..65535: exact
  }
  return i;
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

HWY_EXPORT(BnbBlockwiseAbsmax);
HWY_EXPORT(BnbBlockwiseIndex);

namespace simd {

uint64_t bnb_blockwise_absmax(const float* in, uint64_t n, float* am) {
  return HWY_DYNAMIC_DISPATCH(BnbBlockwiseAbsmax)(in, n, am);
}

uint64_t bnb_blockwise_index(const float* in, uint64_t n, float inv, uint16_t* index) {
  return HWY_DYNAMIC_DISPATCH(BnbBlockwiseIndex)(in, n, inv, index);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
