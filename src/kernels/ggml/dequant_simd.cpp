// The SIMD ggml dequantizers (dequant-inl.h), compiled here once per Highway target:
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
