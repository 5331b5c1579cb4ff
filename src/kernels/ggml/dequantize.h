// ggml's dequantizers ("to_float"), as scalar reference kernels: for every block type
// the output is bit-exact with ggml's dequantize_row_* (ggml/src/ggml-quants.c at the
// commit named in blocks.h), checked against ggml's own output in fixtures/ggml.
// Block scales go through amn::scalar::f16_to_f32, which equals ggml's
// GGML_FP16_TO_FP32 on all 65536 inputs (NaNs included; fixtures/ggml/f16_to_f32.bin).
// Layouts and formulas: docs/formats/ggml-blocks.md.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "core/ggml_type.h"

namespace amn {

// True when dequantize_ggml handles this type: every quantized type ggml can dequantize
// (its type_traits to_float, plus dequantize_row_q8_K), and Q8_1, which ggml never
// dequantizes (it only feeds dot products): we read it as its Q8_0 part (q * d).
bool ggml_can_dequantize(GgmlType type);

// Dequantizes `blocks` whole blocks of `type` from `in` (little-endian, unaligned
// allowed) to f32, bit-exact with ggml's to_float (dequantize_row_*). No allocation.
// Does nothing for a type ggml_can_dequantize rejects.
void dequantize_ggml(GgmlType type, const uint8_t* in, float* out, size_t blocks);

namespace ggml {
using DequantizeFn = void (*)(const uint8_t* in, float* out, size_t blocks);

// A kernel and the type it decodes. Each kernel file lists its own (the scalar references
// in dequant_<family>.cpp, the Highway kernels in dequant_<family>-inl.h, one list per
// target), and the dispatch tables are built from those lists: a kernel is registered on
// the line beside it, nowhere else.
struct Kernel {
  GgmlType type;
  DequantizeFn fn;
};

// The scalar references of each file (same contract as dequantize_ggml).
std::span<const Kernel> legacy_kernels();  // dequant_legacy.cpp: Q4_0 .. Q8_1
std::span<const Kernel> k_kernels();       // dequant_k.cpp: Q2_K .. Q8_K
std::span<const Kernel> iq_kernels();      // dequant_iq.cpp: the IQ types
std::span<const Kernel> other_kernels();   // dequant_other.cpp: TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0, Q2_0

// A table indexed by type id from kernel lists (nullptr where no list names the id).
constexpr std::array<DequantizeFn, kGgmlTypeCount> kernel_table(std::initializer_list<std::span<const Kernel>> lists) {
  std::array<DequantizeFn, kGgmlTypeCount> table{};
  for (std::span<const Kernel> list : lists) {
    for (const Kernel& k : list) table[ggml_id(k.type)] = k.fn;
  }
  return table;
}

// The scalar reference for a type, or nullptr: the specification the SIMD kernels are
// tested against (tests_native/test_ggml_simd.cpp).
DequantizeFn dequantizer(GgmlType type);
}  // namespace ggml

}  // namespace amn
