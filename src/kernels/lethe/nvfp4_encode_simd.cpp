// The NVFP4 encoder in Highway (encode_simd.h), compiled here once per Highway target
// (foreach_target.h re-includes this file); the same bytes as the reference
// (nvfp4_encode.cpp) on every target:
//  - block scales: each group's amax as AbsMaxBits, then per vector of groups the
//    reference's arithmetic (amax / 6 rounded to the weight's dtype, times the global
//    scale, the clamp, E4M3, code 0 -> 0x20). A group with a NaN keeps its largest bits,
//    a positive NaN as the reference's |first NaN|: only a NaN's sign reaches the code.
//  - codes: x / (e4m3(scale) / global) per element (a true division, as the reference),
//    the E2M1 index as the count of thresholds passed (NaN passes none and is not < 0:
//    code 0), the sign bit for v < 0, and -0.0 inputs as code 8 when asked. Even and odd
//    elements are loaded apart, so each lane packs its pair, the even one low.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/nvfp4_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstring>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/quant/fp8.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool Nvfp4Scales(const float*, uint64_t, uint64_t, DType, float, uint8_t*) { return false; }
HWY_NOINLINE bool Nvfp4Rows(const float*, uint64_t, uint64_t, const uint8_t*, float, uint8_t*, bool) { return false; }
#else

template <DType kSrc>
HWY_INLINE void Nvfp4ScalesOf(const float* HWY_RESTRICT amax, size_t groups, float global_scale,
                              uint8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  const auto six = hn::Set(df, 6.0f);
  const auto global = hn::Set(df, global_scale);
  EachVector(df, amax, groups, out, [&](hn::VFromD<decltype(df)> a) {
    auto s = hn::Div(a, six);  // max_val_pos / (float(bit_range) / 2)
    if constexpr (kSrc == DType::BF16) s = RoundToBF16(df, s);
    if constexpr (kSrc == DType::F16) s = RoundToF16(df, s);
    const auto code = E4M3Clamped(df, hn::Mul(global, s));
    // torch.where(scales == 0, 0.125, scales): codes 0x00 and 0x80 -> 0x20
    return hn::IfThenElse(hn::Eq(hn::And(code, hn::Set(du, 0x7Fu)), hn::Zero(du)), hn::Set(du, 0x20u), code);
  });
}

HWY_NOINLINE bool Nvfp4Scales(const float* HWY_RESTRICT values, uint64_t cols, uint64_t rows, DType src,
                              float global_scale, uint8_t* HWY_RESTRICT scale_e4m3) {
  constexpr size_t kChunk = 256;  // groups whose amax is gathered before their scales
  HWY_ALIGN float amax[kChunk];
  const uint64_t groups = rows * (cols / 16);  // rows are whole groups: one run of groups
  for (uint64_t g0 = 0; g0 < groups; g0 += kChunk) {
    const size_t m = static_cast<size_t>(groups - g0 < kChunk ? groups - g0 : kChunk);
    for (size_t g = 0; g < m; ++g) {
      const uint32_t bits = AbsMaxBits(values + (g0 + g) * 16, 16);
      std::memcpy(&amax[g], &bits, 4);
    }
    if (src == DType::BF16) {
      Nvfp4ScalesOf<DType::BF16>(amax, m, global_scale, scale_e4m3 + g0);
    } else if (src == DType::F16) {
      Nvfp4ScalesOf<DType::F16>(amax, m, global_scale, scale_e4m3 + g0);
    } else {
      Nvfp4ScalesOf<DType::F32>(amax, m, global_scale, scale_e4m3 + g0);
    }
  }
  return true;
}

// The E2M1 code of each lane (nvfp4_code), in u32 lanes.
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToSigned<DF>> E2M1(DF df, VF v) {
  const hn::RebindToSigned<DF> di;
  const auto a = hn::Abs(v);
  const auto m = [&](auto mask) { return hn::BitCast(di, hn::VecFromMask(df, mask)); };  // -1 where true
  auto i = hn::Add(m(hn::Gt(a, hn::Set(df, 0.25f))), m(hn::Ge(a, hn::Set(df, 0.75f))));
  i = hn::Add(i, hn::Add(m(hn::Gt(a, hn::Set(df, 1.25f))), m(hn::Ge(a, hn::Set(df, 1.75f)))));
  i = hn::Add(i, hn::Add(m(hn::Gt(a, hn::Set(df, 2.5f))), m(hn::Ge(a, hn::Set(df, 3.5f)))));
  i = hn::Sub(hn::Zero(di), hn::Add(i, m(hn::Gt(a, hn::Set(df, 5.0f)))));
  return hn::Or(i, hn::And(m(hn::Lt(v, hn::Zero(df))), hn::Set(di, 8)));
}

HWY_NOINLINE bool Nvfp4Rows(const float* HWY_RESTRICT values, uint64_t cols, uint64_t rows,
                            const uint8_t* HWY_RESTRICT scale_e4m3, float global_scale, uint8_t* HWY_RESTRICT packed,
                            bool signed_zero) {
  const hn::CappedTag<float, 8> df;  // 2 x 8 lanes: one group of 16 (or two halves of one)
  const hn::RebindToSigned<decltype(df)> di;
  const hn::RebindToUnsigned<decltype(df)> du;
  const hn::Rebind<uint8_t, decltype(df)> d8;
  const size_t N = hn::Lanes(df);
  if (16 % (2 * N) != 0) return false;
  const auto neg_zero = hn::Set(du, 0x80000000u);
  const uint64_t groups = rows * (cols / 16);
  for (uint64_t g = 0; g < groups; ++g) {
    // scale / global_scale, in F32
    const auto se = hn::Set(df, quant::fp8_to_f32(DType::F8_E4M3, scale_e4m3[g]) / global_scale);
    const float* x = values + g * 16;
    for (size_t h = 0; h < 16; h += 2 * N) {
      hn::VFromD<decltype(df)> even, odd;
      hn::LoadInterleaved2(df, x + h, even, odd);
      auto ce = E2M1(df, hn::Div(even, se));
      auto co = E2M1(df, hn::Div(odd, se));
      if (signed_zero) {
        ce = hn::IfThenElse(hn::RebindMask(di, hn::Eq(hn::BitCast(du, even), neg_zero)), hn::Set(di, 8), ce);
        co = hn::IfThenElse(hn::RebindMask(di, hn::Eq(hn::BitCast(du, odd), neg_zero)), hn::Set(di, 8), co);
      }
      hn::StoreU(hn::DemoteTo(d8, hn::Or(ce, hn::ShiftLeft<4>(co))), d8, packed + g * 8 + h / 2);
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

HWY_EXPORT(Nvfp4Scales);
HWY_EXPORT(Nvfp4Rows);

namespace simd {

bool nvfp4_scales(const float* values, uint64_t cols, uint64_t rows, DType src, float global_scale,
                  uint8_t* scale_e4m3) {
  return HWY_DYNAMIC_DISPATCH(Nvfp4Scales)(values, cols, rows, src, global_scale, scale_e4m3);
}

bool nvfp4_rows(const float* values, uint64_t cols, uint64_t rows, const uint8_t* scale_e4m3, float global_scale,
                uint8_t* packed, bool signed_zero) {
  return HWY_DYNAMIC_DISPATCH(Nvfp4Rows)(values, cols, rows, scale_e4m3, global_scale, packed, signed_zero);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
