// NVFP4 encoder (forget) for compressed-tensors `nvfp4-pack-quantized`: `weight_packed` U8
// [rows, cols / 2] (E2M1 codes, even column in the low nibble), `weight_scale` F8_E4M3
// [rows, cols / 16], `weight_global_scale` F32 [1]; bit-exact with llm-compressor's
// model_free_ptq with the NVFP4 / NVFP4A16 presets (memoryless_minmax observer,
// Observer.get_global_scale -> generate_gparam, calculate_qparams with scale_dtype
// float8_e4m3fn; NVFP4PackedCompressor.compress -> _quantize -> cast_to_fp4 ->
// pack_fp4_to_uint8) at vllm-project/compressed-tensors ac8e2ba8 and
// vllm-project/llm-compressor ab1ba3ef. What src/kernels/quant/fp4.h reads back. Fixtures and
// provenance: fixtures/lethe/nvfp4/README.md.
//
// The scales are computed in the weight's dtype `src` (BF16, F16 or F32), so the functions
// that make them take it; the codes are computed in F32 whatever the weight's dtype (the
// quotient of a weight by an F32 scale is F32). `values` are the weight's elements widened
// to F32 (exact), row-major [rows, cols], cols a multiple of 16 (the producer requires it).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/lethe/torch_ops.h"  // absmax, round_to

namespace amn::lethe {


// generate_gparam on the amax of the tensor, or of its fused partners (model_free_ptq fuses
// q/k/v, gate/up, w1/w3 and wq_a/wkv_a_with_mqa: one global scale for the set): in src,
// a = max(amax, finfo(src).tiny); g = round_src(round_src(1 / a) * 2688) (`448 * 6 / a` is
// Tensor.__rtruediv__: reciprocal() * 2688); NaN or +-Inf -> 1.0; widened to F32.
float nvfp4_global_scale(float amax, DType src);

// E4M3 block scales of rows [r0, r1) (`values` at row r0): per 16 columns,
// s = round_src(amax16 / 6); e4m3fn(clamp(f32(global * s), -448, 448)); code 0x00 -> 0x20
// (0.125, compressed-tensors' "eps" of float8). Writes (r1 - r0) * cols / 16 codes.
void nvfp4_block_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, float global_scale,
                        uint8_t* scale_e4m3);

// E2M1 code of one quotient (cast_to_fp4 then pack_fp4_to_uint8's index): clamp to
// [-6, 6]; |v| rounded to {0, .5, 1, 1.5, 2, 3, 4, 6} to nearest, ties to even; the sign bit
// is set for v < 0 (so a negative that rounds to 0 is code 8) but not for -0.0 (torch.sign
// gives 0); NaN -> 0 (torch's float -> int8 cast of NaN on x86; see the README).
uint8_t nvfp4_code(float v);

// Packed codes of rows [r0, r1) (`values` at row r0, `packed` at byte row r0) given the E4M3
// block scales (`scale_e4m3` at row r0) and the global scale: per block
// se = f32(e4m3(scale) / global), per element code(f32(x / se)). Used as is with a
// reference's weight_scale and weight_global_scale for --reuse-scales.
// signed_zero: cast_to_fp4 gives a -0.0 quotient code 0 (+0.0), while code 8 decompresses
// to -0.0; with true, an input of exactly -0.0 takes code 8, so that quantizing amn's
// dequantized output again reproduces the reference's codes (forget(remember(REF)) == REF).
// false: the producer's own rule.
void nvfp4_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, const uint8_t* scale_e4m3,
                         float global_scale, uint8_t* packed, bool signed_zero = false);

}  // namespace amn::lethe
