// bitsandbytes' quantize_blockwise (the double quantization's second pass, on the absmax
// minus their mean) in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (bnb_encode.cpp quantize_blockwise) on every target. Both kernels do whole vectors and
// say how many values they did; the reference does the rest with its own statements.
//  - absmax: std::max(am, fabs(x)) lane by lane as a compare and select (a NaN never
//    replaces the running value, as in std::max's argument order), then the max across
//    lanes: the values are non-negative and never NaN, so the order does not matter.
//  - the LUT index (norm_to_lut_index): x * inv, the clamp as written (NaN kept, index 0),
//    ((v + 1) * 0.5) * 65535 + 0.5 unfused in f32 lanes, truncated; then the lookup in the
//    64 KiB table as a gather of 4 bytes at that byte offset (the table is padded), the
//    low byte kept (little-endian on every target we build).
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/bnb_blockwise_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/torch_sum.h"

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
HWY_NOINLINE uint64_t BnbBlockwiseCodes(const float*, uint64_t, float, const uint8_t*, uint8_t*) { return 0; }
HWY_NOINLINE bool BnbCascadeSum(const float*, int64_t, float*) { return false; }
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

HWY_NOINLINE uint64_t BnbBlockwiseCodes(const float* HWY_RESTRICT in, uint64_t n, float inv,
                                        const uint8_t* HWY_RESTRICT lut, uint8_t* HWY_RESTRICT codes) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  const auto scale = hn::Set(df, inv), one = hn::Set(df, 1.0f), minus_one = hn::Set(df, -1.0f);
  const auto half = hn::Set(df, 0.5f), steps = hn::Set(df, 65535.0f);
  const auto low = hn::Set(di, 0xFF);
  const int32_t* table = reinterpret_cast<const int32_t*>(lut);  // read at byte offsets, 4 bytes each
  uint64_t i = 0;
  for (; i + N <= n; i += N) {
    auto v = hn::Mul(hn::LoadU(df, in + i), scale);
    v = hn::IfThenElse(hn::Lt(v, minus_one), minus_one, hn::IfThenElse(hn::Lt(one, v), one, v));
    const auto u = hn::Add(hn::Mul(hn::Mul(hn::Add(v, one), half), steps), half);
    const auto idx = hn::IfThenElseZero(hn::RebindMask(di, hn::Eq(v, v)), hn::ConvertTo(di, u));  // 0..65535
    const auto code = hn::And(hn::GatherOffset(di, table, idx), low);  // the LUT's byte at idx (little-endian)
    hn::StoreU(hn::DemoteTo(d8, code), d8, codes + i);
  }
  return i;
}

// cascade_sum_run's vector path with torch's 8 lanes as two 4-lane vectors: the same adds,
// lane by lane, in the same order (torch_sum.h), then the same scalar tail and lane sum.
struct Lanes8 {
  hn::Vec128<float> lo, hi;
};

HWY_NOINLINE bool BnbCascadeSum(const float* HWY_RESTRICT x, int64_t n, float* HWY_RESTRICT sum) {
  const hn::Full128<float> d4;
  const int64_t vec_size = n / 8;
  const auto load = [&](int64_t j) { return Lanes8{hn::LoadU(d4, x + j * 8), hn::LoadU(d4, x + j * 8 + 4)}; };
  const auto add = [](Lanes8& a, const Lanes8& b) {
    a.lo = hn::Add(a.lo, b.lo);
    a.hi = hn::Add(a.hi, b.hi);
  };
  const Lanes8 acc = torch_sum::row_sum(load, vec_size, Lanes8{hn::Zero(d4), hn::Zero(d4)}, add);
  HWY_ALIGN float lanes[8];
  hn::Store(acc.lo, d4, lanes);
  hn::Store(acc.hi, d4, lanes + 4);
  float final_acc = 0;
  for (int64_t k = vec_size * 8; k < n; ++k) final_acc += x[k];
  for (int l = 0; l < 8; ++l) final_acc += lanes[l];
  *sum = final_acc;
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

HWY_EXPORT(BnbBlockwiseAbsmax);
HWY_EXPORT(BnbBlockwiseCodes);
HWY_EXPORT(BnbCascadeSum);

namespace simd {

uint64_t bnb_blockwise_absmax(const float* in, uint64_t n, float* am) {
  return HWY_DYNAMIC_DISPATCH(BnbBlockwiseAbsmax)(in, n, am);
}

uint64_t bnb_blockwise_codes(const float* in, uint64_t n, float inv, const uint8_t* lut, uint8_t* codes) {
  return HWY_DYNAMIC_DISPATCH(BnbBlockwiseCodes)(in, n, inv, lut, codes);
}

bool bnb_cascade_sum(const float* x, int64_t n, float* sum) { return HWY_DYNAMIC_DISPATCH(BnbCascadeSum)(x, n, sum); }

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
