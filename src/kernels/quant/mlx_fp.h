// MLX's floating-point quantization modes (mx.quantize / mx.dequantize with mode "mxfp4",
// "nvfp4" or "mxfp8"): `<base>.weight` U32 [..., out, in * bits / 32] (its little-endian
// bytes hold the codes in order; FP4 low nibble first) and `<base>.scales` U8
// [..., out, in / group], no biases, no global scale in what mlx-lm writes.
//   mxfp4: E2M1 codes, 32 per E8M0 scale;  nvfp4: E2M1 codes, 16 per E4M3 scale;
//   mxfp8: E4M3 codes, 32 per E8M0 scale.
// Decoding as mlx/ops.cpp fp_dequantize does it (ml-explore/mlx 846d1762; on the CPU that
// is the op graph itself): code value times scale. MLX's E4M3 (detail::FromFP8 in
// mlx/backend/cpu/unary_ops.h) has no NaN: 0x7F is 480 and 0xFF -480, for codes and for
// nvfp4's scales alike; E8M0 s is 2^(s - 127) (255: +inf). Each factor is exact in F32 and
// so is their product, which is rounded once to the output type (MLX multiplies in
// BF16, its default dtype here: the same rounding). docs/formats/quantized/mlx.md.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

enum class MlxFpMode : uint8_t { mxfp4, nvfp4, mxfp8 };

// What mlx/ops.cpp fp_quantize requires of each mode (the only bits and group size it takes).
struct MlxFpFormat {
  const char* name;  // "mxfp4", "nvfp4", "mxfp8"
  uint32_t bits;
  uint64_t group_size;
  float maxval;      // fp_quantize's max code value: 6 (E2M1) or 448 (E4M3)
};
const MlxFpFormat& mlx_fp_format(MlxFpMode mode);

// MLX's E4M3 (no NaN: 0x7F is 480) and E8M0 (2^(s - 127), 255: +inf) as F32.
float mlx_e4m3_to_f32(uint8_t code);
float mlx_e8m0_to_f32(uint8_t s);

// Rows [row_begin, row_end) of a [rows, cols] weight: `codes` and `scales` point at row
// row_begin's cols * bits / 8 and cols / group bytes; writes (row_end - row_begin) * cols
// elements of `to` (F32, BF16 or F16) to `out`. cols must be a multiple of the group size.
void dequantize_mlx_fp_rows(MlxFpMode mode, uint64_t cols, const uint8_t* codes, const uint8_t* scales,
                            uint64_t row_begin, uint64_t row_end, DType to, uint8_t* out);

}  // namespace amn::quant
