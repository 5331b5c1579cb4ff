// MXFP4 encoder (forget) for the gpt-oss checkpoint layout: `<w>_blocks` U8
// [rows, cols / 32, 16] (E2M1 codes, even column in the low nibble) and `<w>_scales` U8
// [rows, cols / 32] (E8M0 exponents), one scale per 32 inputs of a row. Bit-exact with
// transformers' quantize_to_mxfp4 (integrations/mxfp4.py: downcast_to_mxfp_torch of the
// weight cast to BF16, uint8 scales, ROUND_UP) as triton_kernels' numerics_details/mxfp.py
// at triton-lang/triton 018a674f writes it; what src/kernels/quant/fp4.h
// (dequantize_mxfp4_rows) reads back. Fixtures and provenance: fixtures/lethe/mxfp4/README.md.
#pragma once
#include <cstdint>

namespace amn::lethe {

// E8M0 scale of one group of 32 (its values already cast to BF16, as F32): amax / 6 in F32,
// rounded up to a power of two by the bit trick (ds + 0x7FFFFF) & 0x7F800000 (wrapping int32
// arithmetic: a NaN amax gives 0); the exponent byte.
uint8_t mxfp4_scale(const float* group);
// The same from the group's amax (NaN: 0).
uint8_t mxfp4_scale_of_amax(float amax);
// The quotient's factor for a scale code: 1 / 2^(code - 127) in F32, 0 for code 0.
float mxfp4_quant_scale(uint8_t code);

// E2M1 code of one quotient x * (1 / 2^(scale - 127)), downcast_to_mxfp_torch's bit-level
// round to nearest even (sticky bits from both the subnormal shift and the dropped mantissa).
uint8_t mxfp4_code(float quotient);

// Rows [0, rows) of `values` ([rows, cols], cols a multiple of 32, each value F32 of any
// source dtype: it is cast to BF16 first, as quantize_to_mxfp4 does): writes rows * cols / 2
// packed bytes and rows * cols / 32 scales. With `reuse` (--reuse-scales), `scales` are read
// instead of computed.
void mxfp4_quantize_rows(const float* values, uint64_t rows, uint64_t cols, uint8_t* blocks, uint8_t* scales,
                         bool reuse = false);

}  // namespace amn::lethe
