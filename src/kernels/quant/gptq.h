// GPTQ (AutoGPTQ / GPTQModel, the "gptq" and "gptq_v2" checkpoint formats) integer
// dequantization, bit-exact with GPTQModel's PackableQuantLinear.dequantize_weight (F16)
// and the arithmetic of its convert_gptq_file (every target; fixtures/quantized/gptq).
// Layout, zero-point conventions and inference of the parameters from shapes:
// docs/formats/quantized/gptq.md. Shared conventions (output
// rows, canonical dtype, validation): kernels/quant/packed.h.
#pragma once
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

// How qzeros are stored: v1 ("gptq", AutoGPTQ) keeps zero - 1; v2 ("gptq_v2",
// GPTQModel's own) keeps the zero point itself.
enum class GptqZeros : uint8_t { v1, v2 };

struct GptqParams {
  uint32_t bits = 4;            // 2, 3, 4 or 8
  uint64_t in_features = 0;     // g_idx length; qweight rows * 32 / bits
  uint64_t out_features = 0;    // qweight columns = scales columns
  uint64_t groups = 0;          // scales / qzeros rows
  uint64_t group_size = 0;      // used only without g_idx: group of input i = i / group_size
  DType scale_dtype = DType::F16;
  GptqZeros zeros = GptqZeros::v1;
  bool has_g_idx = true;        // AutoGPTQ and GPTQModel always write g_idx
};

struct GptqTensors {
  std::span<const uint8_t> qweight;  // I32 [ceil(in * bits / 32), out]
  std::span<const uint8_t> qzeros;   // I32 [groups, ceil(out * bits / 32)]
  std::span<const uint8_t> scales;   // [groups, out], scale_dtype
  std::span<const uint8_t> g_idx;    // I32 [in], or empty when !has_g_idx
};

Status validate_gptq(const GptqParams& p, const GptqTensors& t);

// Rows [row_begin, row_end) of the [out_features, in_features] weight, in `out` type:
// round_out(scale[g][o] * (q[i][o] - zero[g][o])) with g = g_idx[i]: the exact F32 product
// rounded once to `out` (GPTQModel convert_gptq_file; in F16 also dequantize_weight).
Status dequantize_gptq_rows(const GptqParams& p, const GptqTensors& t, uint64_t row_begin,
                            uint64_t row_end, DType out, std::span<uint8_t> dst);

}  // namespace amn::quant
