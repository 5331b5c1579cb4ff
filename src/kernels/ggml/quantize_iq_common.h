// What ggml's IQ / ternary / FP4 encoders share beyond quantize_search.h (nearest_int,
// trunc_to_i32, fp32_to_fp16, make_qp_quants, kGroupMaxEps, shared with the legacy and K
// encoders; ggml-quants.c at the commit named in blocks.h): the nearest-value search,
// more rounding helpers whose exact bit behaviour the output depends on, and the other
// per-group "all zero" thresholds.
#pragma once
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cast.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize_search.h"

namespace amn::ggml::quant {

// ggml's GROUP_MAX_EPS* beyond kGroupMaxEps (quantize_search.h): a group whose largest
// magnitude is below these counts as zero.
inline constexpr float kGroupMaxEpsIq3xxs = 1e-8f;
inline constexpr float kGroupMaxEpsIq2s = 1e-8f;
inline constexpr float kGroupMaxEpsIq1m = 1e-7f;
inline constexpr float kGroupMaxEpsIq1s = 1e-12f;

// ggml's best_index_int8: the index of the nearest of n ascending values (binary
// search; a tie between two neighbours goes to the upper one).
inline int best_index_int8(int n, const int8_t* val, float x) {
  if (x <= val[0]) return 0;
  if (x >= val[n - 1]) return n - 1;
  int ml = 0, mu = n - 1;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < val[mav]) mu = mav; else ml = mav;
  }
  return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

// C's (int)lroundf(f) as glibc on x86-64 computes it: round half away from zero; NaN
// and out-of-range give LONG_MIN, whose low 32 bits are 0.
inline int32_t lround_to_int(float f) {
  if (!(f > -2147483648.0f && f < 2147483648.0f)) return 0;
  return int32_t(std::lround(f));
}

// The signs of 8 elements as IQ2_XXS, IQ2_XS and IQ3_XXS store them (7 bits, the 8th
// implied by even parity): xval = |x|, and when an odd number of x are negative the one
// with the smallest weight * x * x (the first of equals) gets its sign bit flipped and
// its xval negated. Returns the 7 stored bits.
inline uint8_t even_parity_signs(const float* x, const float* weight, float* xval) {
  int nflip = 0;
  uint8_t s = 0;
  for (int i = 0; i < 8; ++i) {
    if (x[i] >= 0) {
      xval[i] = x[i];
    } else {
      xval[i] = -x[i];
      ++nflip;
      s |= uint8_t(1 << i);
    }
  }
  if (nflip % 2) {
    int imin = 0;
    float min = weight[imin] * x[imin] * x[imin];
    for (int i = 1; i < 8; ++i) {
      const float ax = weight[i] * x[i] * x[i];
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[imin] = -xval[imin];
    s ^= uint8_t(1 << imin);
  }
  return s & 127;
}

// Writes block i of `dst` (unaligned bytes).
template <class Block>
void store_block(void* dst, size_t i, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * sizeof(Block), &b, sizeof b);
}

// The row loop of ggml's quantize_<type> for the super-block types: `encode(x, qw)`
// turns 256 floats (and their 256 importance weights, or nullptr) into a Block. Returns
// the bytes written.
template <class Block, class Encode>
size_t quantize_super_blocks(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix,
                             Encode encode) {
  const int64_t nblock = n_per_row / QK_K;
  size_t out_i = 0;
  for (int64_t row = 0; row < nrows; ++row, src += n_per_row) {
    for (int64_t ibl = 0; ibl < nblock; ++ibl) {
      store_block(dst, out_i++, encode(src + QK_K * ibl, imatrix ? imatrix + QK_K * ibl : nullptr));
    }
  }
  return out_i * sizeof(Block);
}

// Sum of squares of a super-block, in element order.
inline float sum_squares(const float* x) {
  float sumx2 = 0;
  for (int i = 0; i < QK_K; ++i) sumx2 += x[i] * x[i];
  return sumx2;
}

// The per-element weights of the IQ searches: qw * sqrt(sigma2 + x^2) with an imatrix,
// x^2 without.
inline void importance_weights(int n, const float* x, const float* qw, float sigma2, float* weight) {
  if (qw) {
    for (int i = 0; i < n; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + x[i] * x[i]);
  } else {
    for (int i = 0; i < n; ++i) weight[i] = x[i] * x[i];
  }
}

// MAX(max, fabsf(x[i])) over n, from fabsf(x[0]) (ggml's IQ1 group maximum).
inline float abs_max(const float* x, int n) {
  float max = std::fabs(x[0]);
  for (int i = 1; i < n; ++i) max = max > std::fabs(x[i]) ? max : std::fabs(x[i]);
  return max;
}

}  // namespace amn::ggml::quant
