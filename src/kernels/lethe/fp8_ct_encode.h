// FP8 encoders (forget) for compressed-tensors `float-quantized`: fp8-channel (`weight_scale`
// [rows, 1]) and fp8-tensor (`weight_scale` [1]), E4M3 codes in `weight`, bit-exact with
// llm-compressor's model_free_ptq (memoryless_minmax observer -> compressed-tensors
// calculate_qparams; NaiveQuantizationCompressor.compress -> quantize -> _quantize) at
// vllm-project/compressed-tensors ac8e2ba8 and vllm-project/llm-compressor ab1ba3ef.
// Fixtures and provenance: fixtures/lethe/fp8_ct/README.md.
//
// The producer computes in the weight's own dtype: the scale is `amax / 448` rounded to it
// and stored in it; the quotient `x / scale` is rounded to it before the E4M3 cast (two
// roundings for BF16 / F16). So every function takes the source dtype `src` (BF16, F16 or
// F32). `values` are the weight's elements widened to F32 (exact), row-major [rows, cols];
// scales are passed as F32 holding values of `src` (exact); the caller writes them as `src`.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/lethe/torch_ops.h"  // absmax, round_to

namespace amn::lethe {


// calculate_qparams for one amax: s = round_src(amax / 448) (F32 division, one rounding to
// src); s == 0 -> torch.finfo(src).eps (BF16 2^-7, F16 2^-10, F32 2^-23); NaN stays NaN,
// +Inf stays +Inf. The value `weight_scale` holds.
float ct_fp8_scale(float amax, DType src);

// fp8-channel: the scales of rows [r0, r1) (`values` at row r0), one per row, into `scale`.
void ct_fp8_channel_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, float* scale);

// Codes of rows [r0, r1) (`values`, `out` at row r0): e4m3fn(clamp(round_src(x / s) [+ 0],
// -448, 448)) with c10's cast (f32_to_e4m3fn). `scale` points at row r0's scale when
// `per_row` (fp8-channel), else at the single tensor scale (fp8-tensor). `add_zero_point`:
// llm-compressor's oneshot path registers a zero point (force_zero_point) and `_quantize`
// adds it, which turns a quotient of -0.0 into +0.0 (code 0x00 instead of 0x80);
// model_free_ptq registers none (false). A NaN quotient (a NaN weight, or Inf / Inf) gives
// 0x7F | its sign; torch's sign of such NaNs varies with the element's position in its vector
// loop, so no fixture covers it.
void ct_fp8_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, const float* scale,
                          bool per_row, bool add_zero_point, uint8_t* out);

}  // namespace amn::lethe
