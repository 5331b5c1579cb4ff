// The Highway FP8 kernels (fp8-inl.h), compiled here once per Highway target:
// foreach_target.h re-includes this file per target. On x86-64 several targets are built
// and chosen at run time; on aarch64 and WASM the one static target is a direct call.
// Implementation selection is cast.cpp's (amn::force_impl / AMN_FORCE_IMPL): Highway
// targets through hwy::SetSupportedTargetsForTest, which HWY_DYNAMIC_DISPATCH honours;
// "scalar" is checked by dequantize_fp8_rows (fp8.cpp).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant/fp8_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant/fp8-inl.h"

#if HWY_ONCE
namespace amn {
namespace quant {

HWY_EXPORT(Fp8RowsSimd);

// Declared in fp8.cpp, its only caller.
bool dequantize_fp8_rows_simd(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(Fp8RowsSimd)(p, weight, scales, row_begin, row_end, to, out);
}

}  // namespace quant
}  // namespace amn
#endif  // HWY_ONCE
