// bitsandbytes encoders (forget): the inverse of kernels/quant/bnb.h, bit-exact with what
// bitsandbytes' CPU path writes. Inputs are the tensor's values as F32 (bitsandbytes
// quantizes `A.float()`; BF16/F16/F32 inputs convert exactly) in row-major order.
// Producer functions and their arithmetic: fixtures/lethe/bnb/README.md.
#pragma once
#include <cstdint>

#include "kernels/quant/bnb.h"  // Bnb4Type

namespace amn::lethe {

using quant::Bnb4Type;

// quantize_4bit (backends/default/ops.py, the CPU path): elements [0, n) of a run of the
// flattened tensor that starts on a block boundary (and so on an even element). Writes
// ceil(n / 2) packed bytes (high nibble first; an odd n pads the last low nibble as
// bitsandbytes pads with 0.0) and ceil(n / blocksize) absmax values.
void bnb4_quantize(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize, uint8_t* packed,
                   float* absmax);

// Double quantization of a 4-bit tensor's absmax (functional.quantize_4bit with
// compress_statistics): offset = torch's float32 mean of absmax[0, count); the codes and the
// nested absmax are quantize_blockwise(absmax - offset, blocksize=256) with the dynamic map,
// as bitsandbytes' C++ CPU kernel computes them (quantize_cpu_impl, its 65536-entry LUT).
struct BnbNested {
  float offset = 0;
};
float torch_mean_f32(const float* in, uint64_t n);
// The 256-entry dynamic map (functional.create_dynamic_map(signed=True)), as F32.
const float* bnb_dynamic_map();
// codes: count bytes; nested_absmax: ceil(count / 256) floats. `in` is absmax - offset.
void bnb_quantize_blockwise(const float* in, uint64_t count, uint64_t blocksize, const float* code,
                            uint8_t* codes, float* nested_absmax);

// LLM.int8() (int8_vectorwise_quant, threshold 0): one row of `cols` values -> I8 codes and
// SCB = max |row| (F32).
void bnb_int8_quantize_row(const float* row, uint64_t cols, int8_t* out, float* scb);

}  // namespace amn::lethe
