// ggml's block encoders ("quantize"), as scalar kernels bit-exact with ggml's
// ggml_quantize_chunk (ggml/src/ggml.c and ggml-quants.c at the commit named in blocks.h)
// with and without an importance matrix; checked against ggml's own output in
// fixtures/ggml_quant (tests_native/test_ggml_quantize.cpp). One table in quantize.cpp
// lists every type that has an encoder: adding a type is one row there.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/ggml_type.h"

namespace amn {

// True when quantize_ggml can write this type.
bool ggml_can_quantize(GgmlType type);

// ggml_quantize_requires_imatrix: the types ggml refuses to make without an importance
// matrix (IQ2_XXS, IQ2_XS, IQ1_S), whether or not we have their encoder.
bool ggml_quantize_requires_imatrix(GgmlType type);

// True when the type's encoder reads the importance matrix (ggml ignores it for the rest).
bool ggml_quantize_reads_imatrix(GgmlType type);

// Quantizes `nrows` rows of `n_per_row` F32 values from `src` into `dst`, as
// ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix) does: each row a
// whole number of blocks, rows one after the other. `imatrix` (n_per_row weights, one
// per column) or nullptr. Returns the bytes written (nrows * the row's size), or 0 when
// the type has no encoder here, n_per_row is not a whole number of blocks, or the type
// requires an importance matrix and none was given. No allocation beyond the stack.
size_t quantize_ggml(GgmlType type, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix);

namespace ggml {
// Every encoder has this form (ggml's quantize_<type>): returns the bytes written.
using QuantizeFn = size_t (*)(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

// quantize_float.cpp: ggml's F32 -> F16 / BF16 rows (ggml_fp32_to_fp16_row,
// ggml_fp32_to_bf16_row_ref).
size_t quantize_f16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_bf16(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

// quantize_legacy.cpp: blocks of 32.
size_t quantize_q4_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q8_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

// quantize_k.cpp: the K-quants' super-blocks of 256.
size_t quantize_q2_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q3_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q4_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q5_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q6_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
}  // namespace ggml

}  // namespace amn
