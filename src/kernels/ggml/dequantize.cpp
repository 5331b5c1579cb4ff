// The ggml dequantizers, keyed by type id (as ggml's type_traits[].to_float).
#include "kernels/ggml/dequantize.h"

#include <array>

#include "formats/gguf/types.h"
#include "kernels/cast.h"

namespace amn {
namespace ggml {
namespace {

constexpr std::array<DequantizeFn, kGgmlTypeCount> make_table() {
  std::array<DequantizeFn, kGgmlTypeCount> t{};
  t[2] = dequantize_q4_0;
  t[3] = dequantize_q4_1;
  t[6] = dequantize_q5_0;
  t[7] = dequantize_q5_1;
  t[8] = dequantize_q8_0;
  t[9] = dequantize_q8_1;
  t[10] = dequantize_q2_k;
  t[11] = dequantize_q3_k;
  t[12] = dequantize_q4_k;
  t[13] = dequantize_q5_k;
  t[14] = dequantize_q6_k;
  t[15] = dequantize_q8_k;
  t[16] = dequantize_iq2_xxs;
  t[17] = dequantize_iq2_xs;
  t[18] = dequantize_iq3_xxs;
  t[19] = dequantize_iq1_s;
  t[20] = dequantize_iq4_nl;
  t[21] = dequantize_iq3_s;
  t[22] = dequantize_iq2_s;
  t[23] = dequantize_iq4_xs;
  t[29] = dequantize_iq1_m;
  t[34] = dequantize_tq1_0;
  t[35] = dequantize_tq2_0;
  t[39] = dequantize_mxfp4;
  t[40] = dequantize_nvfp4;
  t[41] = dequantize_q1_0;
  t[42] = dequantize_q2_0;
  return t;
}
constexpr auto kDequantizers = make_table();

}  // namespace

// dequant_simd.cpp: the Highway kernel of the current target for the types that have
// one (false, nothing written, for the others).
bool dequantize_simd(uint32_t type, const uint8_t* in, float* out, size_t blocks);

DequantizeFn dequantizer(uint32_t type) { return type < kDequantizers.size() ? kDequantizers[type] : nullptr; }

}  // namespace ggml

bool ggml_can_dequantize(uint32_t type) { return ggml::dequantizer(type) != nullptr; }

// The SIMD kernel unless the implementation in use is the reference (cast.cpp's
// selection: amn::force_impl, AMN_FORCE_IMPL), which then runs every type.
void dequantize_ggml(uint32_t type, const uint8_t* in, float* out, size_t blocks) {
  if (!reference_impl_forced() && ggml::dequantize_simd(type, in, out, blocks)) return;
  if (const auto fn = ggml::dequantizer(type)) fn(in, out, blocks);
}

}  // namespace amn
