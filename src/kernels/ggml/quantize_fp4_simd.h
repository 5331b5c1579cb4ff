// The MXFP4 / NVFP4 encoders' two halves: the Highway kernels (quantize_fp4_simd.cpp) and
// the scalar restatement of ggml (quantize_fp4.cpp), whose per-block scale rules both use.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace amn::ggml {

// Encodes `blocks` consecutive MXFP4 (32 values) or NVFP4 (64 values) blocks as
// quantize_row_mxfp4_ref / quantize_row_nvfp4_ref do, with the current Highway target:
// the scalar code's bytes. False, nothing written, for another type or on Highway's
// one-lane target.
bool quantize_fp4_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks);

// MXFP4's shared exponent byte for a block whose largest magnitude is amax.
uint8_t mxfp4_exponent(float amax);

// ggml_fp32_to_ue4m3: NVFP4's sub-block scale byte.
uint8_t f32_to_ue4m3(float x);

}  // namespace amn::ggml
