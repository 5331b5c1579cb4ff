// MLX floating-point encoder (forget --scheme mlx --mode mxfp4|nvfp4|mxfp8): mlx-lm's
// layout, `<base>.weight` U32 [..., out, in * bits / 32] and `<base>.scales` U8
// [..., out, in / group] (src/kernels/quant/mlx_fp.h reads them back).
// Bit-exact with mx.quantize(w, mode=...) on the CPU: mlx/ops.cpp fp_quantize at
// ml-explore/mlx 846d1762, whose CPU path is its `fallback` op graph (only the GPU has a
// kernel), transliterated op by op: every op's result is rounded to the weight's dtype
// (BF16 / F16 / F32) as MLX's types round, and the scale and code arithmetic differs from
// the OCP / compressed-tensors producers (E8M0 exponent = rint(log2(amax / max)), not
// floor; FP4 by argmin over MLX's table, ties to the lower index; E4M3 saturating at 448). Fixtures and the arithmetic step by step:
// fixtures/lethe/mlx_fp/README.md.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/quant/mlx_fp.h"

namespace amn::lethe {

// MLX's float -> E4M3 (detail::ToFP8 in mlx/backend/cpu/unary_ops.h): round to nearest
// even; |x| >= 448, +-inf and NaN saturate to 0x7E | sign (0x7F is never written).
uint8_t mlx_f32_to_e4m3(float x);

// rint(log2(s)) in dtype t as MLX's fp_quantize computes an E8M0 scale's exponent (each op
// rounded to t), for s > 0.
float mlx_fp_exponent(DType t, float s);
// For the SIMD kernels: per binade [2^E, 2^(E+1)) of positive floats, E = -149 .. 127 (index
// E + 149), the bits of the first s whose mlx_fp_exponent is E + 1 (2^(E+1)'s if none): it is
// E below them and E + 1 from them on, checked at the ends and assumed monotonic between
// (log2f and the roundings are). nullptr if a binade's ends say otherwise.
const int32_t* mlx_fp_exponent_thresholds(DType t);

// Rows [0, rows) of `values` ([rows, cols], cols a multiple of the mode's group size; the
// exact values of a `dtype` tensor: F32, BF16 or F16). Writes rows * cols * bits / 8 code
// bytes and rows * cols / group scale bytes. With `reuse` (--reuse-scales) the stored
// scales are read instead, and a value that a code dequantizes to exactly with its scale
// (what remember made) takes that code.
void mlx_fp_quantize_rows(quant::MlxFpMode mode, const float* values, uint64_t rows, uint64_t cols, DType dtype,
                          uint8_t* codes, uint8_t* scales, bool reuse = false);

}  // namespace amn::lethe
