// ggml's encoders for the legacy blocks of 32 (ggml-quants.c: quantize_row_<type>_ref
// without an importance matrix, quantize_row_<type>_impl with one), statement by
// statement; the casts to narrow integers go through trunc_to_i32 (quantize_search.h).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_rows.h"
#include "kernels/ggml/quantize_search.h"

namespace amn::ggml {
namespace {

constexpr int QK = 32;  // QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0

// ggml's weights for a block: the importance times sqrt(sigma2 + x^2).
void block_weights(const float* x, const float* qw, float sigma2, float* weight) {
  for (int j = 0; j < QK; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + x[j] * x[j]);
}

// The largest magnitude of a block, and the value that has it (the first, on ties).
float signed_absmax(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < QK; j++) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  return max;
}

void min_max(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < QK; j++) {
    const float v = x[j];
    if (v < min) min = v;
    if (v > max) max = v;
  }
}

// Packs 32 five-bit levels as Q5_0 / Q5_1 store them.
template <class Block>
void pack_q5(const uint8_t* L, Block& y) {
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const uint8_t xi0 = L[j];
    const uint8_t xi1 = L[j + QK / 2];
    y.qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
  }
  std::memcpy(&y.qh, &qh, sizeof qh);
}

void q4_0_ref(const float* x, block_q4_0& y) {
  const float max = signed_absmax(x);
  const float d = max / -8;
  const float id = d ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = x[0 + j] * id;
    const float x1 = x[QK / 2 + j] * id;
    const uint8_t xi0 = static_cast<uint8_t>(std::min(15, int(int8_t(trunc_to_i32(x0 + 8.5f)))));
    const uint8_t xi1 = static_cast<uint8_t>(std::min(15, int(int8_t(trunc_to_i32(x1 + 8.5f)))));
    y.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

void q4_1_ref(const float* x, block_q4_1& y) {
  float min, max;
  min_max(x, min, max);
  const float d = (max - min) / ((1 << 4) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(min);
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = (x[0 + j] - min) * id;
    const float x1 = (x[QK / 2 + j] - min) * id;
    const uint8_t xi0 = static_cast<uint8_t>(std::min(15, int(int8_t(trunc_to_i32(x0 + 0.5f)))));
    const uint8_t xi1 = static_cast<uint8_t>(std::min(15, int(int8_t(trunc_to_i32(x1 + 0.5f)))));
    y.qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
  }
}

void q5_0_ref(const float* x, block_q5_0& y) {
  const float max = signed_absmax(x);
  const float d = max / -16;
  const float id = d ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  uint8_t L[QK];
  for (int j = 0; j < QK; ++j) {
    L[j] = static_cast<uint8_t>(std::min(31, int(int8_t(trunc_to_i32(x[j] * id + 16.5f)))));
  }
  pack_q5(L, y);
}

void q5_1_ref(const float* x, block_q5_1& y) {
  float min, max;
  min_max(x, min, max);
  const float d = (max - min) / ((1 << 5) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(min);
  uint8_t L[QK];
  for (int j = 0; j < QK; ++j) L[j] = static_cast<uint8_t>(trunc_to_i32((x[j] - min) * id + 0.5f));
  pack_q5(L, y);
}

void q8_0_ref(const float* x, block_q8_0& y) {
  float amax = 0.0f;
  for (int j = 0; j < QK; j++) amax = ggml_max(amax, std::fabs(x[j]));
  const float d = amax / ((1 << 7) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  for (int j = 0; j < QK; ++j) y.qs[j] = static_cast<int8_t>(trunc_to_i32(std::round(x[j] * id)));
}

void q4_0_impl(const float* x, block_q4_0& y, const float* qw, float sigma2) {
  float weight[QK];
  int8_t L[QK];
  block_weights(x, qw, sigma2, weight);
  const float d = make_qx_quants(QK, 8, x, L, 1, weight);
  y.d = fp32_to_fp16(d);
  for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

template <class Block>
void qx_1_impl(const float* x, Block& y, const float* qw, float sigma2, int nmax) {
  float weight[QK];
  uint8_t L[QK], Laux[QK];
  block_weights(x, qw, sigma2, weight);
  float min;
  const float d = make_qkx3_quants(QK, nmax, x, weight, L, &min, Laux, -0.9f, 0.05f, 36, false);
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(-min);
  if constexpr (requires { y.qh; }) {
    pack_q5(L, y);
  } else {
    for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

void q5_0_impl(const float* x, block_q5_0& y, const float* qw, float sigma2) {
  float weight[QK];
  int8_t L[QK];
  block_weights(x, qw, sigma2, weight);
  const float d = make_qx_quants(QK, 16, x, L, 1, weight);
  y.d = fp32_to_fp16(d);
  uint8_t U[QK];
  for (int j = 0; j < QK; ++j) U[j] = static_cast<uint8_t>(L[j]);
  pack_q5(U, y);
}

// ggml's quantize_<type>: the reference without weights, the weighted search with them.
template <class Block, class Ref, class Impl>
size_t encode(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix, Ref ref,
              Impl impl) {
  if (!imatrix) {
    return each_block<Block, QK>(src, dst, nrows, n_per_row,
                                 [&](const float*) { return [&](const float* x, Block& b, int64_t) { ref(x, b); }; });
  }
  return each_block<Block, QK>(src, dst, nrows, n_per_row, [&](const float* row) {
    const float sigma2 = row_sigma2(row, n_per_row);
    return [&, sigma2](const float* x, Block& b, int64_t i) { impl(x, b, imatrix + QK * i, sigma2); };
  });
}

}  // namespace

size_t quantize_q4_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q4_0>(src, dst, nrows, n_per_row, imatrix, q4_0_ref, q4_0_impl);
}

size_t quantize_q4_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q4_1>(src, dst, nrows, n_per_row, imatrix, q4_1_ref,
                            [](const float* x, block_q4_1& y, const float* qw, float s) { qx_1_impl(x, y, qw, s, 15); });
}

size_t quantize_q5_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q5_0>(src, dst, nrows, n_per_row, imatrix, q5_0_ref, q5_0_impl);
}

size_t quantize_q5_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q5_1>(src, dst, nrows, n_per_row, imatrix, q5_1_ref,
                            [](const float* x, block_q5_1& y, const float* qw, float s) { qx_1_impl(x, y, qw, s, 31); });
}

// ggml ignores the importance matrix for Q8_0.
size_t quantize_q8_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return encode<block_q8_0>(src, dst, nrows, n_per_row, nullptr, q8_0_ref,
                            [](const float*, block_q8_0&, const float*, float) {});
}

}  // namespace amn::ggml
