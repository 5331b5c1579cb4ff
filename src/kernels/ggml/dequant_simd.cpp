// The SIMD ggml dequantizers (dequant-inl.h, dequant_fp4-inl.h, dequant_tq-inl.h,
// dequant_iq-inl.h) and their one table, compiled here once per Highway target:
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

// The per-target entry point: the kernels the four -inl.h files above list (legacy and K
// types; codebook types; TQ/Q1_0/Q2_0; IQ1/IQ2/IQ3 grids), by type. False for a type
// without one: the caller then runs the reference.
HWY_NOINLINE bool DequantizeSimd(GgmlType type, const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out,
                                 size_t blocks) {
#if HWY_TARGET == HWY_SCALAR
  // Highway's one-lane fallback (x86 CPUs without SSSE3): the reference does it all.
  (void)type, (void)in, (void)out, (void)blocks;
  return false;
#else
  static constexpr auto kTable = kernel_table({kLegacyAndKSimd, kCodebookSimd, kTernarySimd, kGridSimd});
  const uint32_t id = ggml_id(type);
  if (id >= kTable.size() || kTable[id] == nullptr) return false;
  kTable[id](in, out, blocks);
  return true;
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
bool dequantize_simd(GgmlType type, const uint8_t* in, float* out, size_t blocks) {
  return HWY_DYNAMIC_DISPATCH(DequantizeSimd)(type, in, out, blocks);
}

}  // namespace ggml
}  // namespace amn
#endif  // HWY_ONCE
