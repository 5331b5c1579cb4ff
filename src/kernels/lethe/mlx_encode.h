// MLX affine encoder (forget --scheme mlx): mlx-lm's layout, `<base>.weight` U32
// [..., out, in * bits / 32] (each row one LSB-first bit stream, value i at bit i * bits),
// `<base>.scales` and `<base>.biases` [..., out, in / group] in the weight's dtype.
// Bit-exact with mx.quantize on the CPU: mlx/backend/cpu/quantized.cpp `quantize<T, U>`
// (fast::Quantize::eval_cpu) at ml-explore/mlx 846d1762, transliterated statement by
// statement (every step in float32, std::rint: round half to even). What
// src/kernels/quant/mlx.h reads back. Fixtures: fixtures/lethe/mlx/README.md.
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace amn::lethe {

struct MlxAffine {
  float scale = 0, bias = 0;
};

// One group's scale and bias, in float32 (before the cast to the weight's dtype).
MlxAffine mlx_affine_params(const float* group, uint64_t n, uint32_t bits);
// The same from the group's max and min as MLX's std::max / std::min find them (NaN passed
// over; +-Inf if the group holds nothing else).
MlxAffine mlx_affine_params_of_range(float w_min, float w_max, uint32_t bits);

// Rows [0, rows) of `values` ([rows, cols], cols a multiple of `group`): writes
// rows * cols * bits / 8 packed bytes and rows * cols / group scales and biases in
// `scale_dtype` (F16, BF16 or F32). With `reuse` (--reuse-scales) the stored scales and
// biases are read instead, and a value that one of its nearest codes dequantizes to
// exactly (what remember made) takes that code.
void mlx_affine_quantize_rows(const float* values, uint64_t rows, uint64_t cols, uint32_t bits, uint64_t group,
                              DType scale_dtype, uint8_t* packed, uint8_t* scales, uint8_t* biases, bool reuse = false);

}  // namespace amn::lethe
