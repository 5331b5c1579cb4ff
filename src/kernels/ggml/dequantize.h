// ggml's dequantizers ("to_float"), as scalar reference kernels: for every block type
// the output is bit-exact with ggml's dequantize_row_* (ggml/src/ggml-quants.c at the
// commit named in blocks.h), checked against ggml's own output in fixtures/ggml.
// Block scales go through amn::scalar::f16_to_f32, which equals ggml's
// GGML_FP16_TO_FP32 on all 65536 inputs (NaNs included; fixtures/ggml/f16_to_f32.bin).
// Layouts and formulas: docs/formats/ggml-blocks.md.
#pragma once
#include <cstddef>
#include <cstdint>

namespace amn {

// True when dequantize_ggml handles this ggml type id: every quantized type ggml can
// dequantize (its type_traits to_float, plus dequantize_row_q8_K), and Q8_1, which ggml
// never dequantizes (it only feeds dot products): we read it as its Q8_0 part (q * d).
bool ggml_can_dequantize(uint32_t type);

// Dequantizes `blocks` whole blocks of type `type` from `in` (little-endian, unaligned
// allowed) to f32, bit-exact with ggml's to_float (dequantize_row_*). No allocation.
// Does nothing for a type ggml_can_dequantize rejects.
void dequantize_ggml(uint32_t type, const uint8_t* in, float* out, size_t blocks);

// One kernel per type (same contract), for tests and direct callers.
namespace ggml {
using DequantizeFn = void (*)(const uint8_t* in, float* out, size_t blocks);
// dequant_legacy.cpp
void dequantize_q4_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_q4_1(const uint8_t* in, float* out, size_t blocks);
void dequantize_q5_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_q5_1(const uint8_t* in, float* out, size_t blocks);
void dequantize_q8_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_q8_1(const uint8_t* in, float* out, size_t blocks);
// dequant_k.cpp
void dequantize_q2_k(const uint8_t* in, float* out, size_t blocks);
void dequantize_q3_k(const uint8_t* in, float* out, size_t blocks);
void dequantize_q4_k(const uint8_t* in, float* out, size_t blocks);
void dequantize_q5_k(const uint8_t* in, float* out, size_t blocks);
void dequantize_q6_k(const uint8_t* in, float* out, size_t blocks);
void dequantize_q8_k(const uint8_t* in, float* out, size_t blocks);
// dequant_iq.cpp
void dequantize_iq2_xxs(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq2_xs(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq2_s(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq3_xxs(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq3_s(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq1_s(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq1_m(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq4_nl(const uint8_t* in, float* out, size_t blocks);
void dequantize_iq4_xs(const uint8_t* in, float* out, size_t blocks);
// dequant_other.cpp
void dequantize_tq1_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_tq2_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_mxfp4(const uint8_t* in, float* out, size_t blocks);
void dequantize_nvfp4(const uint8_t* in, float* out, size_t blocks);
void dequantize_q1_0(const uint8_t* in, float* out, size_t blocks);
void dequantize_q2_0(const uint8_t* in, float* out, size_t blocks);

// The kernel for a type id, or nullptr.
DequantizeFn dequantizer(uint32_t type);
}  // namespace ggml

}  // namespace amn
