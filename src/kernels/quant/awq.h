// AWQ (AutoAWQ "gemm" checkpoints, 4-bit) dequantization, bit-exact with AutoAWQ's
// awq/utils/packing_utils.py dequantize_gemm (fixtures/quantized/awq). Layout and the
// nibble interleave: docs/formats/quantized/awq.md. Shared conventions (output rows,
// canonical dtype, validation): kernels/quant/packed.h.
#pragma once
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

struct AwqParams {
  uint32_t bits = 4;          // AutoAWQ GEMM packs 4 bits only
  uint64_t in_features = 0;   // qweight rows
  uint64_t out_features = 0;  // scales columns = qweight columns * 8
  uint64_t group_size = 0;    // in_features / scales rows
  DType scale_dtype = DType::F16;
};

struct AwqTensors {
  std::span<const uint8_t> qweight;  // I32 [in, out / 8]
  std::span<const uint8_t> qzeros;   // I32 [in / group_size, out / 8]
  std::span<const uint8_t> scales;   // [in / group_size, out], scale_dtype
};

Status validate_awq(const AwqParams& p, const AwqTensors& t);

// Rows [row_begin, row_end) of the [out_features, in_features] weight, in `out` type:
// round_out((q[i][o] - zero[g][o]) * scale[g][o]) with g = i / group_size: the exact F32
// product rounded once to `out` (in F16 also AutoAWQ dequantize_gemm).
Status dequantize_awq_rows(const AwqParams& p, const AwqTensors& t, uint64_t row_begin, uint64_t row_end,
                           DType out, std::span<uint8_t> dst);

}  // namespace amn::quant
