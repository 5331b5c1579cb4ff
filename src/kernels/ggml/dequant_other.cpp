// The remaining ggml block types: TQ1_0 TQ2_0 (ternary), MXFP4 NVFP4 (FP4 with shared
// scales), Q1_0 Q2_0 (1- and 2-bit). Each kernel mirrors ggml's dequantize_row_<type>
// (ggml/src/ggml-quants.c), same operations in the same order.
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"

namespace amn::ggml {
namespace {

// A TQ1_0 trit: the byte holds the trits as a base-3 fraction of 256; multiplying by
// 3^n (mod 256) brings trit n to the top, and (q * 3) >> 8 reads it (0, 1 or 2).
float trit(uint8_t packed, uint8_t pow3, float d) {
  const uint8_t q = uint8_t(packed * pow3);
  const int16_t xi = int16_t((uint16_t(q) * 3) >> 8);
  return float(xi - 1) * d;
}

}  // namespace

// dequantize_row_tq1_0: (trit - 1) * d; 5 trits per qs byte, 4 per qh byte.
void dequantize_tq1_0(const uint8_t* in, float* out, size_t blocks) {
  constexpr uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
  constexpr size_t kQs = sizeof(block_tq1_0::qs);  // 48: one run of 32 bytes, one of 16
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_tq1_0>(in, i);
    const float d = fp16_to_f32(b.d);
    for (size_t j = 0; j < kQs - kQs % 32; j += 32) {
      for (size_t n = 0; n < 5; ++n) {
        for (size_t m = 0; m < 32; ++m) *out++ = trit(b.qs[j + m], pow3[n], d);
      }
    }
    for (size_t j = kQs - kQs % 32; j < kQs; j += 16) {
      for (size_t n = 0; n < 5; ++n) {
        for (size_t m = 0; m < 16; ++m) *out++ = trit(b.qs[j + m], pow3[n], d);
      }
    }
    for (size_t n = 0; n < 4; ++n) {
      for (size_t j = 0; j < sizeof(b.qh); ++j) *out++ = trit(b.qh[j], pow3[n], d);
    }
  }
}

// dequantize_row_tq2_0: (q - 1) * d with 2-bit q.
void dequantize_tq2_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_tq2_0>(in, i);
    const float d = fp16_to_f32(b.d);
    for (size_t j = 0; j < sizeof(b.qs); j += 32) {
      for (size_t l = 0; l < 4; ++l) {
        for (size_t m = 0; m < 32; ++m) {
          const int8_t q = int8_t((b.qs[j + m] >> (l * 2)) & 3);
          *out++ = float(q - 1) * d;
        }
      }
    }
  }
}

// dequantize_row_mxfp4: kvalues_fp4[q] * 2^(e - 128).
void dequantize_mxfp4(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 32) {
    const auto b = load_block<block_mxfp4>(in, i);
    const float d = e8m0_to_f32_half(b.e);
    for (int j = 0; j < 16; ++j) {
      const int8_t x0 = kvalues_fp4[b.qs[j] & 0x0F];
      const int8_t x1 = kvalues_fp4[b.qs[j] >> 4];
      out[j + 0] = float(x0) * d;
      out[j + 16] = float(x1) * d;
    }
  }
}

// dequantize_row_nvfp4: per 16 elements, kvalues_fp4[q] * UE4M3 scale / 2.
void dequantize_nvfp4(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_nvfp4>(in, i);
    for (int s = 0; s < 4; ++s, out += 16) {
      const float d = ue4m3_to_f32_half(b.d[s]);
      for (int j = 0; j < 8; ++j) {
        const int8_t v0 = kvalues_fp4[b.qs[s * 8 + j] & 0x0F];
        const int8_t v1 = kvalues_fp4[b.qs[s * 8 + j] >> 4];
        out[j + 0] = float(v0) * d;
        out[j + 8] = float(v1) * d;
      }
    }
  }
}

// dequantize_row_q1_0: a set bit is d, a clear bit -d.
void dequantize_q1_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 128) {
    const auto b = load_block<block_q1_0>(in, i);
    const float d = fp16_to_f32(b.d);
    const float neg_d = -d;
    for (int j = 0; j < 128; ++j) out[j] = ((b.qs[j / 8] >> (j % 8)) & 1) ? d : neg_d;
  }
}

// dequantize_row_q2_0: (q - 1) * d with 2-bit q (-1, 0, +1, +2).
void dequantize_q2_0(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, out += 64) {
    const auto b = load_block<block_q2_0>(in, i);
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 64; ++j) {
      const uint8_t q = (b.qs[j / 4] >> ((j % 4) * 2)) & 0x03;
      out[j] = float(int(q) - 1) * d;
    }
  }
}

// This file's kernels, for the dispatch table (dequantize.cpp): the one place they are named.
std::span<const Kernel> other_kernels() {
  static constexpr Kernel kKernels[] = {
      {GgmlType::TQ1_0, dequantize_tq1_0},
      {GgmlType::TQ2_0, dequantize_tq2_0},
      {GgmlType::MXFP4, dequantize_mxfp4},
      {GgmlType::NVFP4, dequantize_nvfp4},
      {GgmlType::Q1_0, dequantize_q1_0},
      {GgmlType::Q2_0, dequantize_q2_0},
  };
  return kKernels;
}

}  // namespace amn::ggml
