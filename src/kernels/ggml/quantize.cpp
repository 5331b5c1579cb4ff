// The encoder table: one row per type that quantize_ggml can write.
#include "kernels/ggml/quantize.h"

#include "kernels/ggml/quantize_iq.h"

namespace amn {
namespace {
using namespace ggml;

enum class Imatrix {
  kIgnored,  // ggml's encoder never reads it
  kRead,     // read when given (ggml's quantize_row_*_impl); required for the types
             // ggml_quantize_requires_imatrix names
};

struct Encoder {
  GgmlType type;
  QuantizeFn fn;
  Imatrix imatrix;
};

// Which encoders read the matrix: ggml-quants.c's quantize_<type> at the pinned commit.
constexpr Encoder kEncoders[] = {
    {GgmlType::F16, quantize_f16, Imatrix::kIgnored},
    {GgmlType::BF16, quantize_bf16, Imatrix::kIgnored},
    {GgmlType::Q4_0, quantize_q4_0, Imatrix::kRead},
    {GgmlType::Q4_1, quantize_q4_1, Imatrix::kRead},
    {GgmlType::Q5_0, quantize_q5_0, Imatrix::kRead},
    {GgmlType::Q5_1, quantize_q5_1, Imatrix::kRead},
    {GgmlType::Q8_0, quantize_q8_0, Imatrix::kIgnored},
    {GgmlType::Q2_K, quantize_q2_k, Imatrix::kRead},
    {GgmlType::Q3_K, quantize_q3_k, Imatrix::kRead},
    {GgmlType::Q4_K, quantize_q4_k, Imatrix::kRead},
    {GgmlType::Q5_K, quantize_q5_k, Imatrix::kRead},
    {GgmlType::Q6_K, quantize_q6_k, Imatrix::kRead},
    {GgmlType::IQ4_NL, quantize_iq4_nl, Imatrix::kRead},
    {GgmlType::IQ4_XS, quantize_iq4_xs, Imatrix::kRead},
    {GgmlType::IQ3_S, quantize_iq3_s, Imatrix::kRead},
    {GgmlType::IQ3_XXS, quantize_iq3_xxs, Imatrix::kRead},
    {GgmlType::IQ2_XXS, quantize_iq2_xxs, Imatrix::kRead},
    {GgmlType::IQ2_XS, quantize_iq2_xs, Imatrix::kRead},
    {GgmlType::IQ2_S, quantize_iq2_s, Imatrix::kRead},
    {GgmlType::IQ1_S, quantize_iq1_s, Imatrix::kRead},
    {GgmlType::IQ1_M, quantize_iq1_m, Imatrix::kRead},
    {GgmlType::TQ1_0, quantize_tq1_0, Imatrix::kIgnored},
    {GgmlType::TQ2_0, quantize_tq2_0, Imatrix::kIgnored},
    {GgmlType::MXFP4, quantize_mxfp4, Imatrix::kIgnored},
    {GgmlType::NVFP4, quantize_nvfp4, Imatrix::kIgnored},
    {GgmlType::Q1_0, quantize_q1_0, Imatrix::kIgnored},
    {GgmlType::Q2_0, quantize_q2_0, Imatrix::kIgnored},
};

const Encoder* encoder(GgmlType type) {
  for (const Encoder& e : kEncoders) {
    if (e.type == type) return &e;
  }
  return nullptr;
}
}  // namespace

bool ggml_can_quantize(GgmlType type) { return encoder(type) != nullptr; }

bool ggml_quantize_requires_imatrix(GgmlType type) {
  return type == GgmlType::IQ2_XXS || type == GgmlType::IQ2_XS || type == GgmlType::IQ1_S;
}

bool ggml_quantize_reads_imatrix(GgmlType type) {
  const Encoder* e = encoder(type);
  return e && e->imatrix != Imatrix::kIgnored;
}

size_t quantize_ggml(GgmlType type, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix) {
  const Encoder* e = encoder(type);
  const GgmlTraits* t = ggml_traits(type);
  if (!e || !t || t->block_elements == 0 || nrows < 0 || n_per_row <= 0) return 0;
  if (n_per_row % t->block_elements != 0) return 0;
  if (ggml_quantize_requires_imatrix(type) && !imatrix) return 0;
  return e->fn(src, dst, nrows, n_per_row, e->imatrix == Imatrix::kIgnored ? nullptr : imatrix);
}

}  // namespace amn
