// MLX affine encoding in Highway (encode_simd.h) for 2, 3, 4, 5, 6 and 8 bits, compiled here once per
// Highway target (foreach_target.h re-includes this file); the same bytes as the reference
// (mlx_encode.cpp) on every target:
//  - ranges: lane-wise max / min written as MLX's std::max / std::min compare (a NaN never
//    replaces the running value), then across lanes. Only a zero's sign could depend on
//    the order, and it reaches neither scale nor bias (mlx_affine_params_of_range).
//  - codes: rint((w - bias) / scale) (Round: ties to even), std::max(q, 0) and
//    std::min(q, n_bins) as written (NaN kept), NaN -> 0, packed LSB first (4 bits: the
//    even element low, loaded apart from the odd one; 2, 3, 5 and 6 bits: the codes of
//    2N values stored as bytes, then every 8 of them packed into `bits` bytes in a u64).
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/mlx_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <limits>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool MlxRanges(const float*, uint64_t, uint64_t, uint32_t, float*, float*) { return false; }
HWY_NOINLINE void MlxCodes(const float*, uint64_t, uint64_t, uint32_t, const float*, const float*, uint8_t*) {}
#else

HWY_NOINLINE bool MlxRanges(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                            float* HWY_RESTRICT w_min, float* HWY_RESTRICT w_max) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  const bool known = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
  if (!known || group % (2 * N) != 0) return false;
  const auto inf = hn::Set(df, std::numeric_limits<float>::infinity());
  for (uint64_t g = 0; g < groups; ++g) {
    const float* w = values + g * group;
    auto hi = hn::Neg(inf), lo = inf;
    for (uint64_t j = 0; j < group; j += N) {
      const auto x = hn::LoadU(df, w + j);
      hi = hn::IfThenElse(hn::Lt(hi, x), x, hi);  // std::max(w_max, x)
      lo = hn::IfThenElse(hn::Lt(x, lo), x, lo);  // std::min(w_min, x)
    }
    w_max[g] = hn::GetLane(hn::MaxOfLanes(df, hi));
    w_min[g] = hn::GetLane(hn::MinOfLanes(df, lo));
  }
  return true;
}

// The code of each lane, in i32 lanes.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> MlxCode(DF df, VF w, VF scale, VF bias, VF n_bins) {
  const hn::RebindToSigned<DF> di;
  auto q = hn::Round(hn::Div(hn::Sub(w, bias), scale));
  q = hn::IfThenElse(hn::Lt(q, hn::Zero(df)), hn::Zero(df), q);  // std::max(q, 0.0f)
  q = hn::IfThenElse(hn::Lt(n_bins, q), n_bins, q);              // std::min(q, n_bins)
  return hn::IfThenElseZero(hn::RebindMask(di, hn::Eq(q, q)), hn::ConvertTo(di, q));
}

HWY_NOINLINE void MlxCodes(const float* HWY_RESTRICT values, uint64_t groups, uint64_t group, uint32_t bits,
                           const float* HWY_RESTRICT scale, const float* HWY_RESTRICT bias, uint8_t* HWY_RESTRICT packed) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  const auto n_bins = hn::Set(df, static_cast<float>((1u << bits) - 1));
  for (uint64_t g = 0; g < groups; ++g) {
    const float* w = values + g * group;
    const auto s = hn::Set(df, scale[g]), b = hn::Set(df, bias[g]);
    if (bits == 8) {
      uint8_t* out = packed + g * group;
      for (uint64_t j = 0; j < group; j += N) hn::StoreU(hn::DemoteTo(d8, MlxCode(df, hn::LoadU(df, w + j), s, b, n_bins)), d8, out + j);
    } else if (bits != 4) {
      // 2N codes (a multiple of 8) as bytes, then each 8 LSB first into `bits` bytes.
      uint8_t* out = packed + g * group * bits / 8;
      HWY_ALIGN uint8_t c[2 * hn::MaxLanes(df)];
      for (uint64_t j = 0; j < group; j += 2 * N) {
        hn::StoreU(hn::DemoteTo(d8, MlxCode(df, hn::LoadU(df, w + j), s, b, n_bins)), d8, c);
        hn::StoreU(hn::DemoteTo(d8, MlxCode(df, hn::LoadU(df, w + j + N), s, b, n_bins)), d8, c + N);
        for (size_t k = 0; k < 2 * N; k += 8) {
          uint64_t word = 0;
          for (size_t e = 0; e < 8; ++e) word |= uint64_t{c[k + e]} << (e * bits);
          for (uint32_t byte = 0; byte < bits; ++byte) *out++ = static_cast<uint8_t>(word >> (8 * byte));
        }
      }
    } else {
      uint8_t* out = packed + g * group / 2;
      for (uint64_t j = 0; j < group; j += 2 * N) {
        hn::VFromD<decltype(df)> even, odd;
        hn::LoadInterleaved2(df, w + j, even, odd);
        const auto pair = hn::Or(MlxCode(df, even, s, b, n_bins), hn::ShiftLeft<4>(MlxCode(df, odd, s, b, n_bins)));
        hn::StoreU(hn::DemoteTo(d8, pair), d8, out + j / 2);
      }
    }
  }
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

HWY_EXPORT(MlxRanges);
HWY_EXPORT(MlxCodes);

namespace simd {

bool mlx_ranges(const float* values, uint64_t groups, uint64_t group, uint32_t bits, float* w_min, float* w_max) {
  return HWY_DYNAMIC_DISPATCH(MlxRanges)(values, groups, group, bits, w_min, w_max);
}

void mlx_codes(const float* values, uint64_t groups, uint64_t group, uint32_t bits, const float* scale,
               const float* bias, uint8_t* packed) {
  HWY_DYNAMIC_DISPATCH(MlxCodes)(values, groups, group, bits, scale, bias, packed);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
