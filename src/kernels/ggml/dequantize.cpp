// The ggml dequantizers, keyed by type (as ggml's type_traits[].to_float): a table built
// from each kernel file's own list.
#include "kernels/ggml/dequantize.h"

#include "kernels/cast.h"

namespace amn {
namespace ggml {

// dequant_simd.cpp: the Highway kernel of the current target for the types that have
// one (false, nothing written, for the others).
bool dequantize_simd(GgmlType type, const uint8_t* in, float* out, size_t blocks);

DequantizeFn dequantizer(GgmlType type) {
  // Built on first use: the lists live in other translation units.
  static const std::array<DequantizeFn, kGgmlTypeCount> kTable =
      kernel_table({legacy_kernels(), k_kernels(), iq_kernels(), other_kernels()});
  return ggml_id(type) < kTable.size() ? kTable[ggml_id(type)] : nullptr;
}

}  // namespace ggml

bool ggml_can_dequantize(GgmlType type) { return ggml::dequantizer(type) != nullptr; }

// The SIMD kernel unless the implementation in use is the reference (cast.cpp's
// selection: amn::force_impl, AMN_FORCE_IMPL), which then runs every type.
void dequantize_ggml(GgmlType type, const uint8_t* in, float* out, size_t blocks) {
  if (!reference_impl_forced() && ggml::dequantize_simd(type, in, out, blocks)) return;
  if (const auto fn = ggml::dequantizer(type)) fn(in, out, blocks);
}

}  // namespace amn
