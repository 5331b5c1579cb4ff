// ggml's encoders ("quantizers") for the IQ, ternary, FP4 and 1-/2-bit types, bit-exact
// with ggml's ggml_quantize_chunk (start 0) at the commit named in blocks.h: same bytes on
// every target (x86-64, aarch64, WASM), because each keeps ggml's operation order and the
// core is built with -ffp-contract=off. Which ggml function each one reproduces and the
// tricky parts: docs/formats/ggml-quantizers-iq.md.
//
// Every function quantizes `nrows` rows of `n_per_row` floats from `src` into `dst` (rows
// of whole blocks, back to back) and returns the bytes written. `imatrix` is the
// importance of each column (n_per_row floats) or nullptr; the types that ignore it
// (TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0) say so. n_per_row must be a multiple of the
// block size (the caller checks; ggml asserts). IQ2_XXS, IQ2_XS and IQ1_S need an imatrix
// (ggml_quantize_requires_imatrix): without one they write nothing and return 0.
#pragma once
#include <cstddef>
#include <cstdint>

namespace amn::ggml {

size_t quantize_iq4_nl(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq4_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_tq1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_tq2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_mxfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_nvfp4(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q1_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_q2_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq3_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq3_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq2_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq1_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);
size_t quantize_iq1_m(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix);

}  // namespace amn::ggml
