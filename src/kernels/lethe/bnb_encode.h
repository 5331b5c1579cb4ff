// bitsandbytes encoders (forget): the inverse of kernels/quant/bnb.h, bit-exact with what
// bitsandbytes' CPU path writes. Inputs are the tensor's values as F32 (bitsandbytes
// quantizes `A.float()`; BF16/F16/F32 inputs convert exactly) in row-major order.
// Producer functions and their arithmetic: fixtures/lethe/bnb/README.md and
// docs/formats/quantized/bitsandbytes.md ("Encoding").
#pragma once
#include <cstdint>

#include "kernels/quant/bnb.h"  // Bnb4Type

namespace amn::lethe {

using quant::Bnb4Type;

// The 16 codes as bitsandbytes writes them to `<w>.weight.quant_map` and quantizes against
// (functional.get_4bit_type: the list as F32, divided by its absmax; FP4's code 8 is +0.0
// here, unlike the dequantizing kernels' -0.0).
const float* bnb4_quant_map(Bnb4Type type);

// quantize_4bit (backends/default/ops.py, the CPU path): elements [0, n) of a run of the
// flattened tensor that starts on a block boundary (and so on an even element). Writes
// ceil(n / 2) packed bytes (high nibble first; an odd n pads the last low nibble as
// bitsandbytes pads with 0.0) and ceil(n / blocksize) absmax values. A partial last block
// is the tensor's remainder block: its values are divided by its absmax clamped to 1e-38,
// and the clamped value is what is stored (full blocks store the raw absmax, 0 included).
void bnb4_quantize(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize, uint8_t* packed,
                   float* absmax);

// The absmax bnb4_quantize writes, without the codes (a remainder block's clamped).
void bnb4_absmax(const float* in, uint64_t n, uint64_t blocksize, float* absmax);

// The same with the absmax given (--reuse-scales): ceil(n / blocksize) values, F32 (a
// double-quantized reference's absmax resolved first with quant::resolve_bnb_nested_absmax,
// which is dequantize_4bit's arithmetic). Only `packed` is written.
// fp4_signed_zero: bitsandbytes gives a -0.0 input FP4 code 0 (+0.0) and tiny positive values
// code 8, which its CUDA/C++ dequantizers (and amn's) turn into -0.0; with true, an input of
// exactly -0.0 takes code 8, so that quantizing amn's dequantized output again reproduces the
// reference's codes (forget(remember(REF)) == REF). false: bitsandbytes' own rule. NF4 has
// one zero code and ignores it.
void bnb4_quantize_with_absmax(Bnb4Type type, const float* in, uint64_t n, uint64_t blocksize,
                               const float* absmax, uint8_t* packed, bool fp4_signed_zero = false);

// Double quantization of a 4-bit tensor's absmax (functional.quantize_4bit with
// compress_statistics): offset = torch's float32 mean of absmax[0, count); the codes and the
// nested absmax are quantize_blockwise(absmax - offset, blocksize=256) with the dynamic map,
// as bitsandbytes' C++ CPU kernel computes them (quantize_cpu_impl, its 65536-entry LUT).
//
// torch.mean of a contiguous float32 tensor as torch 1.13 computes it on CPU: the cascade
// sum of aten/src/ATen/native/cpu/SumKernel.cpp over 8-lane vectors (AVX2, NEON and the
// default build), divided by count. `torch_threads` is torch.get_num_threads(): from 32768
// values on torch sums one chunk per thread (TensorIteratorReduce.cpp two_pass_reduction)
// and the last bits depend on it; below that, or with 1, the sum is serial.
float torch_mean_f32(const float* in, uint64_t n, unsigned torch_threads = 1);
// The 256-entry dynamic map (functional.create_dynamic_map(signed=True)), as F32: what
// `<w>.weight.nested_quant_map` holds.
const float* bnb_dynamic_map();
// The whole double quantization of `count` absmax values: writes the offset, count codes and
// ceil(count / 256) nested absmax values (`absmax` itself is not modified).
float bnb4_double_quant(const float* absmax, uint64_t count, uint8_t* codes, float* nested_absmax,
                        unsigned torch_threads = 1);
// quantize_blockwise's CPU kernel on `in` (already absmax - offset): codes: count bytes;
// nested_absmax: ceil(count / blocksize) floats. `code` is 256 sorted values (the dynamic map).
void bnb_quantize_blockwise(const float* in, uint64_t count, uint64_t blocksize, const float* code, uint8_t* codes,
                            float* nested_absmax);
// The same with the nested absmax given.
void bnb_quantize_blockwise_with_absmax(const float* in, uint64_t count, uint64_t blocksize, const float* code,
                                        const float* nested_absmax, uint8_t* codes);

// LLM.int8() (Linear8bitLt / Int8Params._quantize -> int8_vectorwise_quant, threshold 0):
// the row is first rounded to F16 (Int8Params casts the weight to float16), then SCB =
// max |row| and q = round_half_even(x * f32(f32(1 / SCB) * 127)) as int8. A zero row (SCB 0),
// a NaN or an Inf in the row: torch's float -> int8 conversion writes 0 for NaN and +-Inf.
void bnb_int8_quantize_row(const float* row, uint64_t cols, int8_t* out, float* scb);
// The same with SCB given (--reuse-scales).
void bnb_int8_quantize_row_with_scb(const float* row, uint64_t cols, float scb, int8_t* out);

}  // namespace amn::lethe
