// The SIMD ggml dequantizers (dequant-inl.h, dequant_fp4-inl.h, dequant_tq-inl.h,
// dequant_iq-inl.h) and their one switch, compiled here once per Highway target:
// foreach_target.h re-includes this file per target. On x86-64 several targets are built
// and chosen at run time; on aarch64 and WASM the one static target is a direct call.
// Implementation selection is cast.cpp's (amn::force_impl / AMN_FORCE_IMPL): Highway
// targets through hwy::SetSupportedTargetsForTest, which HWY_DYNAMIC_DISPATCH below
// honours; "scalar" is checked by dequantize_ggml (dequantize.cpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ggml/dequant_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/ggml/dequant-inl.h"
#include "kernels/ggml/dequant_fp4-inl.h"
#include "kernels/ggml/dequant_tq-inl.h"
#include "kernels/ggml/dequant_iq-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {

// The per-target entry point: one case per type with a kernel in the four -inl.h files
// above (legacy and K types; codebook types; TQ/Q1_0/Q2_0; IQ1/IQ2/IQ3 grids). False for
// a type without one: the caller then runs the reference.
HWY_NOINLINE bool DequantizeSimd(uint32_t type, const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out,
                                 size_t blocks) {
#if HWY_TARGET == HWY_SCALAR
  // Highway's one-lane fallback (x86 CPUs without SSSE3): the reference does it all.
  (void)type, (void)in, (void)out, (void)blocks;
  return false;
#else
  switch (type) {
    case 2: DequantQ4_0(in, out, blocks); return true;
    case 3: DequantQ4_1(in, out, blocks); return true;
    case 6: DequantQ5_0(in, out, blocks); return true;
    case 7: DequantQ5_1(in, out, blocks); return true;
    case 8: DequantQ8<sizeof(block_q8_0), 2>(in, out, blocks); return true;
    case 9: DequantQ8<sizeof(block_q8_1), 4>(in, out, blocks); return true;
    case 10: DequantQ2_K(in, out, blocks); return true;
    case 11: DequantQ3_K(in, out, blocks); return true;
    case 12: DequantQ4_K(in, out, blocks); return true;
    case 13: DequantQ5_K(in, out, blocks); return true;
    case 14: DequantQ6_K(in, out, blocks); return true;
    case 15: DequantQ8_K(in, out, blocks); return true;
    case 16: DequantIQ2_XXS(in, out, blocks); return true;
    case 17: DequantIQ2_XS(in, out, blocks); return true;
    case 18: DequantIQ3_XXS(in, out, blocks); return true;
    case 19: DequantIQ1_S(in, out, blocks); return true;
    case 20: DequantIQ4_NL(in, out, blocks); return true;
    case 21: DequantIQ3_S(in, out, blocks); return true;
    case 22: DequantIQ2_S(in, out, blocks); return true;
    case 23: DequantIQ4_XS(in, out, blocks); return true;
    case 29: DequantIQ1_M(in, out, blocks); return true;
    case 34: DequantTQ1_0(in, out, blocks); return true;
    case 35: DequantTQ2_0(in, out, blocks); return true;
    case 39: DequantMXFP4(in, out, blocks); return true;
    case 40: DequantNVFP4(in, out, blocks); return true;
    case 41: DequantQ1_0(in, out, blocks); return true;
    case 42: DequantQ2_0(in, out, blocks); return true;
    default: return false;
  }
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kernels/ggml/dequantize.h"

namespace amn {
namespace ggml {

HWY_EXPORT(DequantizeSimd);

// Declared in dequantize.cpp, its only caller.
bool dequantize_simd(uint32_t type, const uint8_t* in, float* out, size_t blocks) {
  return HWY_DYNAMIC_DISPATCH(DequantizeSimd)(type, in, out, blocks);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
