// ggml_quantize_chunk's BF16 target (ggml_fp32_to_bf16_row_ref: GGML_FP32_TO_BF16 per
// value) in one pass with Highway: the same integer steps on each value's bits as
// fp32_to_bf16 (quantize_search.h), a NaN kept quiet with its top bits, every other
// value rounded to nearest even, so every target writes the scalar code's bytes.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/quantize_bf16_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ggml/quantize_search.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Converts n values; false on Highway's one-lane target (nothing written).
HWY_NOINLINE bool Bf16Values(const float* HWY_RESTRICT x, uint8_t* HWY_RESTRICT out, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  (void)x, (void)out, (void)n;
  return false;
#else
  const hn::ScalableTag<uint32_t> du;
  const hn::RebindToSigned<decltype(du)> di;
  const hn::Rebind<uint16_t, decltype(di)> du16;
  const size_t N = hn::Lanes(du);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto u = hn::LoadU(du, reinterpret_cast<const uint32_t*>(x + i));
    const auto nan = hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7fffffffu))), hn::Set(di, 0x7f800000));
    const auto quiet = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 64u));
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), lsb)));
    const auto bits = hn::IfThenElse(hn::RebindMask(du, nan), quiet, rounded);  // each below 2^16
    uint16_t lanes[64];
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di, bits)), du16, lanes);
    std::memcpy(out + 2 * i, lanes, 2 * N);
  }
  for (; i < n; ++i) {
    const uint16_t h = fp32_to_bf16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
  return true;
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

HWY_EXPORT(Bf16Values);

bool quantize_bf16_simd(const float* x, uint8_t* out, size_t n) {
  return HWY_DYNAMIC_DISPATCH(Bf16Values)(x, out, n);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
