// The TQ1_0, TQ2_0, Q1_0 and Q2_0 encoders' two halves: the Highway kernels
// (quantize_low_bit_simd.cpp) and the scalar restatements of ggml (quantize_tq.cpp,
// quantize_q1_0_q2_0.cpp).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace amn::ggml {

// Encodes `blocks` consecutive blocks of TQ1_0, TQ2_0 (256 values), Q1_0 (128) or Q2_0
// (64) as ggml's quantize_row_<type>_ref does, with the current Highway target: the scalar
// code's bytes. False, nothing written, for another type or on Highway's one-lane target.
bool quantize_low_bit_simd(GgmlType type, const float* x, uint8_t* out, size_t blocks);

// quantize_row_tq1_0_ref / quantize_row_tq2_0_ref on one block (the kernels' way out for
// a block with a NaN, whose MAX fold is order-sensitive).
void quantize_tq1_0_block(const float* x, uint8_t* out);
void quantize_tq2_0_block(const float* x, uint8_t* out);

}  // namespace amn::ggml
