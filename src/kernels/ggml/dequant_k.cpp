// The K-quants (super-blocks of 256): Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K. Each kernel
// mirrors ggml's dequantize_row_<type> (ggml/src/ggml-quants.c), same operations in the
// same order (scales first multiplied into the F16 super-block scale, then by the quant).
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"

namespace amn::ggml {

// dequantize_row_q2_K: 16 groups of 16; dl * q - ml with dl = d * scale, ml = dmin * min.
void dequantize_q2_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q2_K>(in, i);
    const float d = fp16_to_f32(b.d);
    const float min = fp16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = b.scales[is++];
          const float dl = d * float(sc & 0xF);
          const float ml = min * float(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            *out++ = dl * float(int8_t((q[l + 16 * half] >> shift) & 3)) - ml;
          }
        }
        shift += 2;
      }
      q += 32;
    }
  }
}

// dequantize_row_q3_K: 16 groups of 16; d * (scale - 32) * (q - (high bit ? 0 : 4)).
void dequantize_q3_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q3_K>(in, i);
    const float d_all = fp16_to_f32(b.d);
    int8_t scales[16];
    unpack_q3_k_scales(b.scales, scales);

    const uint8_t* q = b.qs;
    const uint8_t* hm = b.hmask;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * float(scales[is++] - 32);
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            const int low = int8_t((q[l] >> shift) & 3);
            *out++ = dl * float(low - ((hm[l] & m) ? 0 : 4));
          }
        }
        shift += 2;
        m = uint8_t(m << 1);
      }
      q += 32;
    }
  }
}

// dequantize_row_q4_K: 8 groups of 32; d1 * q - m1 with d1 = d * scale, m1 = dmin * min.
void dequantize_q4_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q4_K>(in, i);
    const float d = fp16_to_f32(b.d);
    const float min = fp16_to_f32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    uint8_t sc, m;
    for (int j = 0; j < QK_K; j += 64) {
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * float(sc);
      const float m1 = min * float(m);
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * float(sc);
      const float m2 = min * float(m);
      for (int l = 0; l < 32; ++l) *out++ = d1 * float(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *out++ = d2 * float(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

// dequantize_row_q5_K: as Q4_K with a 5th bit (+16) from qh.
void dequantize_q5_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q5_K>(in, i);
    const float d = fp16_to_f32(b.d);
    const float min = fp16_to_f32(b.dmin);
    const uint8_t* ql = b.qs;
    const uint8_t* qh = b.qh;
    int is = 0;
    uint8_t sc, m;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K; j += 64) {
      get_scale_min_k4(is + 0, b.scales, &sc, &m);
      const float d1 = d * float(sc);
      const float m1 = min * float(m);
      get_scale_min_k4(is + 1, b.scales, &sc, &m);
      const float d2 = d * float(sc);
      const float m2 = min * float(m);
      for (int l = 0; l < 32; ++l) *out++ = d1 * float((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *out++ = d2 * float((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 = uint8_t(u1 << 2);
      u2 = uint8_t(u2 << 2);
    }
  }
}

// dequantize_row_q6_K: 16 groups of 16; (d * scale) * (q - 32), left to right.
void dequantize_q6_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q6_K>(in, i);
    const float d = fp16_to_f32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < QK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int8_t q1 = int8_t(int8_t((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        const int8_t q2 = int8_t(int8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        const int8_t q3 = int8_t(int8_t((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        const int8_t q4 = int8_t(int8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        out[l + 0] = d * float(sc[is + 0]) * float(q1);
        out[l + 32] = d * float(sc[is + 2]) * float(q2);
        out[l + 64] = d * float(sc[is + 4]) * float(q3);
        out[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
      out += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// dequantize_row_q8_K: d * q with an F32 scale.
void dequantize_q8_k(const uint8_t* in, float* out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i) {
    const auto b = load_block<block_q8_K>(in, i);
    for (int j = 0; j < QK_K; ++j) *out++ = b.d * float(b.qs[j]);
  }
}

// This file's kernels, for the dispatch table (dequantize.cpp): the one place they are named.
std::span<const Kernel> k_kernels() {
  static constexpr Kernel kKernels[] = {
      {GgmlType::Q2_K, dequantize_q2_k},
      {GgmlType::Q3_K, dequantize_q3_k},
      {GgmlType::Q4_K, dequantize_q4_k},
      {GgmlType::Q5_K, dequantize_q5_k},
      {GgmlType::Q6_K, dequantize_q6_k},
      {GgmlType::Q8_K, dequantize_q8_k},
  };
  return kKernels;
}

}  // namespace amn::ggml
