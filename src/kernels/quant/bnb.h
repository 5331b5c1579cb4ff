// bitsandbytes dequantization (scalar reference in bnb.cpp, Highway kernels with the same
// bytes in bnb-inl.h, chosen as kernels/cast.h says): NF4 / FP4 (4-bit codebooks with one
// absmax per block of the flattened tensor, optionally double-quantized) and LLM.int8()
// (int8 rows times SCB / 127). Bit-exact with bitsandbytes' own kernels
// (csrc/cpu_ops.cpp dequantizeBlockwise4bitCpu, csrc/kernels.cu kDequantizeBlockwise,
// backends/default ops); layouts and arithmetic in docs/formats/quantized/bitsandbytes.md.
//  - 4-bit: element i = lut[code] * absmax[i / blocksize] in f32, codes high nibble first;
//    FP4's code 8 is -0.0 (the CUDA and C++ kernels; the pure-torch backend writes +0.0);
//    the f32 product rounded to BF16 / F16 (round to nearest even).
//  - double quantization: absmax[j] = f32(nested_quant_map[code[j]] * nested_absmax[j / nested_blocksize])
//    + offset, in f32 (dequantize_4bit's dequantize_blockwise + offset).
//  - int8: f32(f32(q * SCB[row]) * 7.874015718698502e-3f), then PyTorch's casts.
// The file's quant_map tensor is not read by bitsandbytes' 4-bit kernels (they use built-in
// tables, equal to it); neither do we.
#pragma once
#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/error.h"

namespace amn::quant {

enum class Bnb4Type : uint8_t { nf4, fp4 };

struct Bnb4Params {
  Bnb4Type type = Bnb4Type::nf4;
  uint64_t elements = 0;   // prod(quant_state shape)
  uint64_t blocksize = 64; // quant_state "blocksize": 32 .. 4096, a power of two
};

// packed: ceil(elements / 2) bytes; absmax: ceil(elements / blocksize) values.
Status validate_bnb4(const Bnb4Params& p, uint64_t packed_bytes, uint64_t absmax_count);

// Elements [begin, end) of the flattened tensor (row ranges are r * cols spans). `packed`
// is the whole packed tensor, `absmax` the resolved (f32) absmax of every block.
void dequantize_bnb4(const Bnb4Params& p, const uint8_t* packed, std::span<const float> absmax, uint64_t begin,
                     uint64_t end, DType to, uint8_t* out);

// Double quantization: checks codes (U8 absmax, count), nested_absmax (F32) length
// ceil(count / nested_blocksize) and the 256-entry nested_quant_map.
Status validate_bnb_nested(uint64_t count, uint64_t nested_blocksize, uint64_t nested_absmax_count,
                           uint64_t nested_map_count);
// absmax[j] for j < count. All inputs little-endian F32 bytes (unaligned allowed).
void resolve_bnb_nested_absmax(const uint8_t* codes, uint64_t count, const uint8_t* nested_map_f32,
                               const uint8_t* nested_absmax_f32, uint64_t nested_blocksize, float offset,
                               float* absmax);

// The built-in codebooks (CUDA / C++ kernel constants).
float bnb4_codebook(Bnb4Type type, uint8_t code);

// LLM.int8(): weight I8 [rows, cols], SCB F32 [rows].
Status validate_bnb_int8(uint64_t rows, uint64_t cols, uint64_t weight_bytes, uint64_t scb_bytes);
// `weight` points at row row_begin; `scb` at the whole SCB (F32 bytes).
void dequantize_bnb_int8_rows(uint64_t cols, const uint8_t* weight, const uint8_t* scb, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out);

}  // namespace amn::quant
