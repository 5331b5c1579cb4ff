// ggml's encoders for the legacy blocks of 32 (ggml-quants.c: quantize_row_<type>_ref
// without an importance matrix, quantize_row_<type>_impl with one), statement by
// statement; the casts to narrow integers go through trunc_to_i32 (quantize_search.h).
// Unless the reference is forced (kernels/cast.h: AMN_FORCE_IMPL=scalar), rows without a
// matrix go to the Highway kernels (quantize_legacy_simd.cpp), and with one the searches
// run one block per lane (make_qx_quants_blocks, make_qkx3_quants_blocks): the same bytes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/cast.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_legacy_simd.h"
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

// ggml's quantize_row_<type>_impl on up to kLanesBlocks blocks of a row at once: each
// block's weights (the importance times sqrt(sigma2 + x^2)), then the blocks' searches
// one per lane. Q4_0 and Q5_0: make_qx_quants (levels -nmax..nmax-1 stored plus nmax);
// Q4_1 and Q5_1: make_qkx3_quants (levels 0..nmax, a min).
constexpr int kLaneBlocks = 16;

template <class Block>
void store_levels(const uint8_t* L, Block& y) {
  if constexpr (requires { y.qh; }) {
    pack_q5(L, y);
  } else {
    for (int j = 0; j < 16; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
  }
}

template <class Block, bool kHasMin, int kNmax>
void impl_blocks(const float* x, uint8_t* out, int count, const float* qw, float sigma2) {
  // weight zeroed only so that GCC 12 sees it set (-Wmaybe-uninitialized): the first
  // `count` blocks' are written below, and the searches read no others.
  float weight[kLaneBlocks * QK] = {}, scales[kLaneBlocks], mins[kLaneBlocks];
  uint8_t L[kLaneBlocks * QK];
  for (int k = 0; k < count; ++k) block_weights(x + k * QK, qw + k * QK, sigma2, weight + k * QK);
  if constexpr (kHasMin) {
    make_qkx3_quants_blocks(count, QK, kNmax, x, weight, L, scales, mins, -0.9f, 0.05f, 36, false);
  } else {
    make_qx_quants_blocks(count, QK, kNmax, x, weight, reinterpret_cast<int8_t*>(L), scales);
  }
  for (int k = 0; k < count; ++k) {
    Block y;
    std::memset(&y, 0, sizeof y);
    y.d = fp32_to_fp16(scales[k]);
    if constexpr (kHasMin) y.m = fp32_to_fp16(-mins[k]);
    store_levels(L + k * QK, y);
    std::memcpy(out + k * sizeof y, &y, sizeof y);
  }
}

// ggml's quantize_<type>: the reference without weights (the Highway kernel unless the
// reference is forced), the weighted search with them.
template <class Block, bool kHasMin, int kNmax, class Ref>
size_t encode(GgmlType type, const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix,
              Ref ref) {
  const int64_t per_row = n_per_row / QK;
  auto* out = static_cast<uint8_t*>(dst);
  const size_t bytes = static_cast<size_t>(nrows * per_row) * sizeof(Block);
  if (!imatrix) {
    if (!reference_impl_forced() && quantize_legacy_simd(type, src, out, static_cast<size_t>(nrows * per_row))) return bytes;
    return each_block<Block, QK>(src, dst, nrows, n_per_row,
                                 [&](const float*) { return [&](const float* x, Block& b, int64_t) { ref(x, b); }; });
  }
  if constexpr (kNmax == 0) return 0;  // Q8_0: never weighted
  for (int64_t r = 0; r < nrows; ++r) {
    const float* row = src + r * n_per_row;
    const float sigma2 = row_sigma2(row, n_per_row);
    for (int64_t i = 0; i < per_row; i += kLaneBlocks) {
      const int count = static_cast<int>(std::min<int64_t>(kLaneBlocks, per_row - i));
      impl_blocks<Block, kHasMin, kNmax>(row + i * QK, out, count, imatrix + i * QK, sigma2);
      out += count * sizeof(Block);
    }
  }
  return bytes;
}

}  // namespace

void quantize_q8_0_block(const float* x, uint8_t* out) {
  block_q8_0 y;
  q8_0_ref(x, y);
  std::memcpy(out, &y, sizeof y);
}

size_t quantize_q4_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q4_0, false, 8>(GgmlType::Q4_0, src, dst, nrows, n_per_row, imatrix, q4_0_ref);
}

size_t quantize_q4_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q4_1, true, 15>(GgmlType::Q4_1, src, dst, nrows, n_per_row, imatrix, q4_1_ref);
}

size_t quantize_q5_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q5_0, false, 16>(GgmlType::Q5_0, src, dst, nrows, n_per_row, imatrix, q5_0_ref);
}

size_t quantize_q5_1(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q5_1, true, 31>(GgmlType::Q5_1, src, dst, nrows, n_per_row, imatrix, q5_1_ref);
}

// ggml ignores the importance matrix for Q8_0.
size_t quantize_q8_0(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float*) {
  return encode<block_q8_0, false, 0>(GgmlType::Q8_0, src, dst, nrows, n_per_row, nullptr, q8_0_ref);
}

}  // namespace amn::ggml
