// The Highway bitsandbytes kernels (bnb-inl.h), compiled here once per Highway target:
// foreach_target.h re-includes this file per target. On x86-64 several targets are built
// and chosen at run time; on aarch64 and WASM the one static target is a direct call.
// Implementation selection is cast.cpp's (amn::force_impl / AMN_FORCE_IMPL): Highway
// targets through hwy::SetSupportedTargetsForTest, which HWY_DYNAMIC_DISPATCH honours;
// "scalar" is checked by the dispatchers in bnb.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant/bnb_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant/bnb-inl.h"

#if HWY_ONCE
namespace amn {
namespace quant {

HWY_EXPORT(Bnb4Simd);
HWY_EXPORT(BnbInt8Simd);

// Declared in bnb.cpp, their only caller.
bool dequantize_bnb4_simd(const Bnb4Params& p, const uint8_t* packed, const float* absmax, uint64_t begin,
                          uint64_t end, DType to, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(Bnb4Simd)(p, packed, absmax, begin, end, to, out);
}
bool dequantize_bnb_int8_rows_simd(uint64_t cols, const uint8_t* weight, const uint8_t* scb, uint64_t row_begin,
                                   uint64_t row_end, DType to, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(BnbInt8Simd)(cols, weight, scb, row_begin, row_end, to, out);
}

}  // namespace quant
}  // namespace amn
#endif  // HWY_ONCE
