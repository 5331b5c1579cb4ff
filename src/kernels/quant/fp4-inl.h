// MXFP4 and NVFP4 dequantization in Highway, compiled per target by fp4_simd.cpp; bytes
// identical to the reference (fp4.cpp) on every target. Each group (32 codes and one E8M0
// scale for MXFP4, 16 codes and one E4M3 scale for NVFP4) builds its 16-entry table of
// outputs with the reference's arithmetic (quant-inl.h), then looks its codes up per
// nibble, low nibble first.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_QUANT_FP4_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_QUANT_FP4_INL_H_
#undef AMN_KERNELS_QUANT_FP4_INL_H_
#else
#define AMN_KERNELS_QUANT_FP4_INL_H_
#endif

#include <array>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/quant/fp4.h"
#include "kernels/quant/quant-inl.h"
#include "kernels/quant/fp4_values.h"  // e8m0_to_f32
#include "kernels/quant/fp8.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

// `groups` groups of 32 (rows * groups of the tensor, contiguous).
template <DType kTo>
HWY_NOINLINE void Mxfp4Groups(const float* HWY_RESTRICT lut, uint64_t groups, const uint8_t* HWY_RESTRICT blocks,
                              const uint8_t* HWY_RESTRICT scales, uint8_t* HWY_RESTRICT out) {
  constexpr size_t kB = OutBytes(kTo);
  const D32 d32;
  // Scale 255 is +inf: the reference writes x86's default NaN for 0 * inf itself
  // (fp4.cpp), since ARM and WASM would make another. Codes 0 and 8 are the zeros.
  alignas(16) static constexpr uint32_t kZeroCode[16] = {~0u, 0, 0, 0, 0, 0, 0, 0, ~0u, 0, 0, 0, 0, 0, 0, 0};
  const auto to_out = [&](int, V32 bits) { return F32BitsTo<kTo>(d32, bits); };
  const auto inf_scale = [&](int k, V32 bits) {
    const auto zero = hn::Ne(hn::Load(d32, kZeroCode + 4 * k), hn::Zero(d32));
    return F32BitsTo<kTo>(d32, hn::IfThenElse(zero, hn::Set(d32, 0xFFC00000u), bits));
  };
  for (uint64_t g = 0; g < groups; ++g) {
    const uint8_t s = scales[g];
    const float d = e8m0_to_f32(s);
    const Table16<kB> t = s != 255 ? ProductTable<kB>(lut, d, to_out) : ProductTable<kB>(lut, d, inf_scale);
    StorePacked32<false>(t, blocks + 16 * g, out + 32 * kB * g);
  }
}

// Every E4M3 code's value (fp8_to_f32), built once per target.
HWY_INLINE const float* E4M3Values() {
  static const std::array<float, 256> values = [] {
    std::array<float, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = fp8_to_f32(DType::F8_E4M3, static_cast<uint8_t>(c));
    return v;
  }();
  return values.data();
}

// `groups` groups of 16 (rows * cols / 16, contiguous). ModelOpt: lut[q] * (s * global),
// rounded to the target; compressed-tensors: lut[q] * (s / global) rounded to BF16, then
// cast to the target.
template <DType kTo, bool kModelOpt>
HWY_NOINLINE void Nvfp4Groups(const float* HWY_RESTRICT lut, uint64_t groups, float global,
                              const uint8_t* HWY_RESTRICT packed, const uint8_t* HWY_RESTRICT scales,
                              uint8_t* HWY_RESTRICT out) {
  constexpr size_t kB = OutBytes(kTo);
  const D32 d32;
  const float* e4m3 = E4M3Values();
  const auto finish = [&](int, V32 bits) {
    if constexpr (kModelOpt) {
      return F32BitsTo<kTo>(d32, bits);
    } else {
      const V32 b = cast::F32ToBF16Bits(d32, bits, 0xFFFFu);  // decompress returns BF16
      if constexpr (kTo == DType::BF16) return b;
      else return F32BitsTo<kTo>(d32, hn::ShiftLeft<16>(b));  // BF16 -> F16 / F32 through F32
    }
  };
  for (uint64_t g = 0; g < groups; ++g) {
    const float s = e4m3[scales[g]];
    const float bs = kModelOpt ? s * global : s / global;
    StorePacked16LowFirst(ProductTable<kB>(lut, bs, finish), packed + 8 * g, out + 16 * kB * g);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry points exported by fp4_simd.cpp; false (nothing written) where
// there is no kernel (Highway's one-lane fallback target). Arguments as fp4.h's, and the
// E2M1 values (fp4_values.h) passed in from fp4.cpp: with the table's contents in view,
// GCC rewrites x * -c as -(x * c), which flips the sign of a NaN scale's products (NaN
// E4M3 scale codes) where the reference's (hardware) product keeps it.
HWY_NOINLINE bool Mxfp4Simd(const Mxfp4Params& p, const float* lut, const uint8_t* blocks, const uint8_t* scales,
                            uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)p, (void)lut, (void)blocks, (void)scales, (void)row_begin, (void)row_end, (void)to, (void)out;
  return false;
#else
  const uint64_t groups = (row_end - row_begin) * p.groups;
  if (to == DType::BF16) Mxfp4Groups<DType::BF16>(lut, groups, blocks, scales, out);
  else if (to == DType::F16) Mxfp4Groups<DType::F16>(lut, groups, blocks, scales, out);
  else Mxfp4Groups<DType::F32>(lut, groups, blocks, scales, out);
  return true;
#endif
}

HWY_NOINLINE bool Nvfp4Simd(const Nvfp4Params& p, const float* lut, const uint8_t* packed, const uint8_t* scales,
                            uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)p, (void)lut, (void)packed, (void)scales, (void)row_begin, (void)row_end, (void)to, (void)out;
  return false;
#else
  const uint64_t groups = (row_end - row_begin) * (p.cols / 16);
  const float g = p.global_scale;
  if (p.layout == Nvfp4Layout::modelopt) {
    if (to == DType::BF16) Nvfp4Groups<DType::BF16, true>(lut, groups, g, packed, scales, out);
    else if (to == DType::F16) Nvfp4Groups<DType::F16, true>(lut, groups, g, packed, scales, out);
    else Nvfp4Groups<DType::F32, true>(lut, groups, g, packed, scales, out);
  } else {
    if (to == DType::BF16) Nvfp4Groups<DType::BF16, false>(lut, groups, g, packed, scales, out);
    else if (to == DType::F16) Nvfp4Groups<DType::F16, false>(lut, groups, g, packed, scales, out);
    else Nvfp4Groups<DType::F32, false>(lut, groups, g, packed, scales, out);
  }
  return true;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace quant
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_QUANT_FP4_INL_H_
