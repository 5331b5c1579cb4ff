// The legacy encoders' two halves: the Highway kernels (quantize_legacy_simd.cpp) and the
// scalar restatement of ggml they fall back to (quantize_legacy.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace amn::ggml {

// Encodes `blocks` consecutive blocks of 32 values of type Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0
// without an importance matrix (ggml's quantize_row_<type>_ref) with the current Highway
// target: the scalar code's bytes. False, nothing written, for another type or on
// Highway's one-lane target.
bool quantize_legacy_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks);

// quantize_row_q8_0_ref on one block (the SIMD kernel's way out for a block with a NaN).
void quantize_q8_0_block(const float* x, uint8_t* out);

}  // namespace amn::ggml
