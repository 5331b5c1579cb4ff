// FP8 weight dequantization (F8_E4M3 / F8_E5M2 weights times F32 / BF16 / F16 scales, or
// E8M0 powers of two as MLX's mxfp8 mode stores them):
// the scalar reference (fp8.cpp) and Highway kernels (fp8-inl.h) giving the same bytes on
// every target, chosen as kernels/cast.h says (AMN_FORCE_IMPL=scalar runs the reference).
// One rule covers every scale layout real checkpoints use: the scale tensor is a grid
// [scale_rows, scale_cols] and element (r, c) of the weight uses scale
// (r / block_rows, c / block_cols). Per tensor: grid 1x1, block = the whole matrix;
// per channel ([out, 1] or [out]): grid rows x 1, block 1 x cols; DeepSeek-V3
// weight_scale_inv: grid ceil(rows/128) x ceil(cols/128), block 128x128 (the last row and
// column of blocks may be partial); MLX mxfp8: grid rows x cols/32 of E8M0, block 1x32. `_scale` and `_scale_inv` companions both multiply.
// Arithmetic (docs/formats/quantized/fp8.md), bit-exact with the producers' dequantizers:
//  - compute F32 (transformers Fp8Dequantize, DeepSeek weight_dequant): f32(w) * f32(s)
//    rounded once to f32; the targets are that F32 cast with PyTorch's rules (cast.h).
//  - compute = the scale's dtype (compressed-tensors _dequantize: x_q.to(scale.dtype) *
//    scale): the product rounded to BF16 / F16 (the fp8 value converts exactly); the other
//    targets are that BF16 / F16 result cast with PyTorch's rules.
// NaN codes (E4M3 0x7F/0xFF, E5M2 exponent 31) are not produced by any quantizer; they come
// out as quiet NaN (sign kept) and are not covered by fixtures.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

struct Fp8Params {
  DType weight = DType::F8_E4M3;  // F8_E4M3 or F8_E5M2
  uint64_t rows = 0, cols = 0;    // logical [out_features, in_features]
  DType scale = DType::F32;       // F32, BF16, F16, or F8_E8M0 (2^(s - 127), fp4_values.h)
  uint64_t scale_rows = 1, scale_cols = 1;
  uint64_t block_rows = 0, block_cols = 0;  // elements covered by one scale
  DType compute = DType::F32;     // F32, or the scale dtype (compressed-tensors)
};

// Checks the parameters and byte counts (weight: rows * cols, scales: grid * scale size):
// ErrorCode::invalid_argument with a message naming the mismatch.
Status validate_fp8(const Fp8Params& p, uint64_t weight_bytes, uint64_t scale_bytes);

// Decodes one FP8 code to f32 (exact).
float fp8_to_f32(DType weight, uint8_t code);

// Rows [row_begin, row_end) to `out` (row-major, (row_end - row_begin) * cols elements of
// dtype `to`: BF16, F16 or F32). `weight` points at row row_begin's first byte; `scales`
// at the whole scale grid (little-endian, unaligned allowed). validate_fp8 first.
void dequantize_fp8_rows(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                         uint64_t row_end, DType to, uint8_t* out);

}  // namespace amn::quant
