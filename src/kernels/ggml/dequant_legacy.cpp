// The legacy 32-element blocks: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q8_1. Each kernel mirrors
// ggml's dequantize_row_<type> (ggml/src/ggml-quants.c), same operations in the same
// order: an int quant converted to float, times the F16 scale (plus the F16 min).
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"

namespace amn::ggml {

// dequantize_row_q4_0: (q - 8) * d.
void dequantize_q4_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q4_0>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (b.qs[j] & 0x0F) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      out[j] = float(x0) * d;
      out[j + 16] = float(x1) * d;
    }
  }
}

// dequantize_row_q4_1: q * d + m.
void dequantize_q4_1(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q4_1>(in, i);
    const float d = fp16_to_f32(b.d);
    const float m = fp16_to_f32(b.m);
    for (int j = 0; j < 16; ++j) {
      const int x0 = b.qs[j] & 0x0F;
      const int x1 = b.qs[j] >> 4;
      out[j] = float(x0) * d + m;
      out[j + 16] = float(x1) * d + m;
    }
  }
}

namespace {
// The 5th bit of elements j and j + 16, as ggml extracts it (value 0 or 16).
uint8_t q5_high_lo(uint32_t qh, int j) { return uint8_t(((qh >> (j + 0)) << 4) & 0x10); }
uint8_t q5_high_hi(uint32_t qh, int j) { return uint8_t((qh >> (j + 12)) & 0x10); }
}  // namespace

// dequantize_row_q5_0: (q - 16) * d.
void dequantize_q5_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q5_0>(in, i);
    const float d = fp16_to_f32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < 16; ++j) {
      const int32_t x0 = ((b.qs[j] & 0x0F) | q5_high_lo(qh, j)) - 16;
      const int32_t x1 = ((b.qs[j] >> 4) | q5_high_hi(qh, j)) - 16;
      out[j] = float(x0) * d;
      out[j + 16] = float(x1) * d;
    }
  }
}

// dequantize_row_q5_1: q * d + m.
void dequantize_q5_1(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q5_1>(in, i);
    const float d = fp16_to_f32(b.d);
    const float m = fp16_to_f32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, sizeof qh);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (b.qs[j] & 0x0F) | q5_high_lo(qh, j);
      const int x1 = (b.qs[j] >> 4) | q5_high_hi(qh, j);
      out[j] = float(x0) * d + m;
      out[j + 16] = float(x1) * d + m;
    }
  }
}

// dequantize_row_q8_0: q * d.
void dequantize_q8_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q8_0>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 32; ++j) out[j] = float(b.qs[j]) * d;
  }
}

// ggml has no dequantize_row_q8_1 (Q8_1 only feeds dot products); its Q8_0 part is read
// as dequantize_row_q8_0 would, and the sum field is ignored.
void dequantize_q8_1(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_q8_1>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 32; ++j) out[j] = float(b.qs[j]) * d;
  }
}

// This file's kernels, for the dispatch table (dequantize.cpp): the one place they are named.
std::span<const Kernel> legacy_kernels() {
  static constexpr Kernel kKernels[] = {
      {GgmlType::Q4_0, dequantize_q4_0},
      {GgmlType::Q4_1, dequantize_q4_1},
      {GgmlType::Q5_0, dequantize_q5_0},
      {GgmlType::Q5_1, dequantize_q5_1},
      {GgmlType::Q8_0, dequantize_q8_0},
      {GgmlType::Q8_1, dequantize_q8_1},
  };
  return kKernels;
}

}  // namespace amn::ggml
