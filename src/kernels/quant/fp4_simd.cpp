// The Highway MXFP4 and NVFP4 kernels (fp4-inl.h), compiled here once per Highway target:
// foreach_target.h re-includes this file per target. On x86-64 several targets are built
// and chosen at run time; on aarch64 and WASM the one static target is a direct call.
// Implementation selection is cast.cpp's (amn::force_impl / AMN_FORCE_IMPL): Highway
// targets through hwy::SetSupportedTargetsForTest, which HWY_DYNAMIC_DISPATCH honours;
// "scalar" is checked by the dispatchers in fp4.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant/fp4_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant/fp4-inl.h"

#if HWY_ONCE
namespace amn {
namespace quant {

HWY_EXPORT(Mxfp4Simd);
HWY_EXPORT(Nvfp4Simd);

// Declared in fp4.cpp, their only caller.
bool dequantize_mxfp4_rows_simd(const Mxfp4Params& p, const float* lut, const uint8_t* blocks, const uint8_t* scales,
                                uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(Mxfp4Simd)(p, lut, blocks, scales, row_begin, row_end, to, out);
}
bool dequantize_nvfp4_rows_simd(const Nvfp4Params& p, const float* lut, const uint8_t* packed, const uint8_t* scales,
                                uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(Nvfp4Simd)(p, lut, packed, scales, row_begin, row_end, to, out);
}

}  // namespace quant
}  // namespace amn
#endif  // HWY_ONCE
