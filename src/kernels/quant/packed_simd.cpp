// The Highway half of the integer kernels' table-lookup path (packed-inl.h), compiled
// here once per Highway target: foreach_target.h re-includes this file per target. On
// x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Implementation selection is cast.cpp's
// (amn::force_impl / AMN_FORCE_IMPL): Highway targets through
// hwy::SetSupportedTargetsForTest, which HWY_DYNAMIC_DISPATCH honours; "scalar" is
// checked by the family kernels (lut::lut_enabled).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant/packed_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant/packed-inl.h"

#if HWY_ONCE
namespace amn {
namespace quant {

HWY_EXPORT(UnpackNibbles);
HWY_EXPORT(NibbleOfWords);
HWY_EXPORT(LookupRuns);
HWY_EXPORT(AffineRuns);

namespace lut {

void unpack_nibbles(const uint8_t* bytes, size_t n, uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(UnpackNibbles)(bytes, n, codes);
}

void nibble_of_words(const uint8_t* words, size_t n, uint32_t nibble, uint8_t* codes) {
  HWY_DYNAMIC_DISPATCH(NibbleOfWords)(words, n, nibble, codes);
}

void lookup_runs(const Tables& t, size_t group, const uint8_t* codes, size_t n, size_t first_run, size_t group_size,
                 uint8_t* dst) {
  HWY_DYNAMIC_DISPATCH(LookupRuns)(t, group, codes, n, first_run, group_size, dst);
}

bool affine_runs(DType canonical, DType out, const AffineGroups& g, const uint8_t* codes, uint8_t code_xor, size_t n,
                 size_t first_run, size_t group_size, uint8_t* dst) {
  return HWY_DYNAMIC_DISPATCH(AffineRuns)(canonical, out, {g, codes, code_xor, n, first_run, group_size, dst});
}

}  // namespace lut
}  // namespace quant
}  // namespace amn
#endif  // HWY_ONCE
