// ggml's encoders for the K-quants' super-blocks of 256 (ggml-quants.c:
// quantize_row_<type>_ref without an importance matrix, quantize_row_<type>_impl with
// one), statement by statement. `qw` is the importance matrix at the block's first
// column.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cast.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/quantize.h"
#include "kernels/ggml/quantize_rows.h"
#include "kernels/ggml/quantize_search.h"

namespace amn::ggml {
namespace {

// The 2-bit levels of 256 values, four per byte (Q2_K, Q3_K's low bits).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

// ---- Q2_K ----

// Requantizes each sub-block of 16 with its stored scale and min, then packs.
// (The Highway kernel where the target has one, unless the reference is forced:
// kernels/cast.h, AMN_FORCE_IMPL=scalar.)
void q2_k_finish(const float* x, block_q2_K& y, uint8_t* L, float dm_all, float mm_all) {
  float dsub[QK_K / 16], msub[QK_K / 16];
  for (int j = 0; j < QK_K / 16; ++j) {
    dsub[j] = dm_all * (y.scales[j] & 0xF);
    msub[j] = mm_all * (y.scales[j] >> 4);
  }
  if (reference_impl_forced() || !k_requantize_simd(x, QK_K / 16, 16, dsub, msub, 3, L)) {
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = dsub[j];
      if (!d) continue;
      const float dm = msub[j];
      for (int ii = 0; ii < 16; ++ii) {
        int l = nearest_int((x[16 * j + ii] + dm) / d);
        l = std::max(0, std::min(3, l));
        L[16 * j + ii] = static_cast<uint8_t>(l);
      }
    }
  }
  pack_2bit(L, y.qs);
}

void q2_k_ref(const float* x, block_q2_K& y) {
  uint8_t L[QK_K];
  float weights[QK_K];
  float mins[QK_K / 16];
  float scales[QK_K / 16];
  const float q4scale = 15.f;

  float max_scale = 0;  // as we are deducting the min, scales are always positive
  float max_min = 0;
  for (int l = 0; l < QK_K; ++l) weights[l] = std::fabs(x[l]);
  make_qkx2_quants_blocks(QK_K / 16, 16, 3, x, weights, L, scales, mins, -0.5f, 0.1f, 15, true);
  for (int j = 0; j < QK_K / 16; ++j) {
    float scale = scales[j];
    if (scale > max_scale) max_scale = scale;
    float min = mins[j];
    if (min > max_min) max_min = min;
  }
  if (max_scale > 0) {
    float iscale = q4scale / max_scale;
    for (int j = 0; j < QK_K / 16; ++j) {
      int l = nearest_int(iscale * scales[j]);
      y.scales[j] = static_cast<uint8_t>(l);
    }
    y.d = fp32_to_fp16(max_scale / q4scale);
  } else {
    for (int j = 0; j < QK_K / 16; ++j) y.scales[j] = 0;
    y.d = fp32_to_fp16(0.f);
  }
  if (max_min > 0) {
    float iscale = q4scale / max_min;
    for (int j = 0; j < QK_K / 16; ++j) {
      int l = nearest_int(iscale * mins[j]);
      y.scales[j] = static_cast<uint8_t>(y.scales[j] | (l << 4));
    }
    y.dmin = fp32_to_fp16(max_min / q4scale);
  } else {
    y.dmin = fp32_to_fp16(0.f);
  }
  q2_k_finish(x, y, L, fp16_to_fp32(y.d), fp16_to_fp32(y.dmin));
}

void q2_k_impl(const float* x, block_q2_K& y, const float* qw_block) {
  uint8_t L[QK_K];
  float mins[QK_K / 16];
  float scales[QK_K / 16];
  float sw[QK_K / 16] = {};
  float weight[QK_K];
  uint8_t Ls[QK_K / 16], Lm[QK_K / 16];

  float sumx2 = 0;
  for (int j = 0; j < QK_K; ++j) sumx2 += x[j] * x[j];
  float sigma2 = sumx2 / QK_K;
  for (int j = 0; j < QK_K / 16; ++j) {
    const float* qw = qw_block + 16 * j;
    float* w = weight + 16 * j;
    for (int l = 0; l < 16; ++l) w[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    for (int l = 0; l < QK_K / 16; ++l) sw[j] += w[l];
  }
  make_qkx3_quants_blocks(QK_K / 16, 16, 3, x, weight, L, scales, mins, -0.9f, 0.05f, 36, false);  // all at once
  float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
  float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
  y.d = fp32_to_fp16(dm);
  y.dmin = fp32_to_fp16(mm);
  dm = fp16_to_fp32(y.d);
  mm = fp16_to_fp32(y.dmin);
  for (int j = 0; j < QK_K / 16; ++j) y.scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
  q2_k_finish(x, y, L, dm, mm);
}

// ---- Q3_K ----

// Stores sixteen 6-bit scales (already biased by 32) in Q3_K's 12 bytes.
void q3_k_put_scale(block_q3_K& y, int j, int l) {
  if (j < 8) {
    y.scales[j] = static_cast<uint8_t>(l & 0xF);
  } else {
    y.scales[j - 8] = static_cast<uint8_t>(y.scales[j - 8] | ((l & 0xF) << 4));
  }
  l >>= 4;
  y.scales[j % 4 + 8] = static_cast<uint8_t>(y.scales[j % 4 + 8] | (l << (2 * (j / 4))));
}

// Requantizes with the stored scales, splits off the high bits and packs (the Highway
// kernel unless the reference is forced: kernels/cast.h, AMN_FORCE_IMPL=scalar).
void q3_k_finish(const float* x, block_q3_K& y, int8_t* L) {
  float dsub[QK_K / 16];
  for (int j = 0; j < QK_K / 16; ++j) {
    int8_t sc = static_cast<int8_t>(j < 8 ? y.scales[j] & 0xF : y.scales[j - 8] >> 4);
    sc = static_cast<int8_t>((sc | (((y.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32);
    dsub[j] = fp16_to_fp32(y.d) * sc;
  }
  if (!reference_impl_forced() && q3_k_finish_simd(x, dsub, L, y.hmask, y.qs)) return;
  for (int j = 0; j < QK_K / 16; ++j) {
    const float d = dsub[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearest_int(x[16 * j + ii] / d);
      l = std::max(-4, std::min(3, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 4);
    }
  }
  std::memset(y.hmask, 0, QK_K / 8);
  // The high bit of the first 8 quants goes to bit 0, of the next 8 to bit 1, etc.
  int m = 0;
  uint8_t hm = 1;
  for (int j = 0; j < QK_K; ++j) {
    if (L[j] > 3) {
      y.hmask[m] = static_cast<uint8_t>(y.hmask[m] | hm);
      L[j] = static_cast<int8_t>(L[j] - 4);
    }
    if (++m == QK_K / 8) {
      m = 0;
      hm = static_cast<uint8_t>(hm << 1);
    }
  }
  uint8_t U[QK_K];
  for (int j = 0; j < QK_K; ++j) U[j] = static_cast<uint8_t>(L[j]);
  pack_2bit(U, y.qs);
}

// q3_k_ref once its sixteen searches are done (levels L, scales).
void q3_k_ref_rest(const float* x, block_q3_K& y, int8_t* L, const float* scales) {
  float max_scale = 0;
  float amax = 0;
  for (int j = 0; j < QK_K / 16; ++j) {
    float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      max_scale = scales[j];
    }
  }
  std::memset(y.scales, 0, 12);
  if (max_scale) {
    float iscale = -32.f / max_scale;
    for (int j = 0; j < QK_K / 16; ++j) {
      int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      l = static_cast<int8_t>(std::max(-32, std::min(31, int(l))) + 32);
      q3_k_put_scale(y, j, l);
    }
    y.d = fp32_to_fp16(1 / iscale);
  } else {
    y.d = fp32_to_fp16(0.f);
  }
  q3_k_finish(x, y, L);
}

void q3_k_impl(const float* x, block_q3_K& y, const float* qw_block) {
  int8_t L[QK_K];
  float scales[QK_K / 16];
  float weight[QK_K];
  float sw[QK_K / 16];
  int8_t Ls[QK_K / 16];

  float sumx2 = 0;
  for (int j = 0; j < QK_K; ++j) sumx2 += x[j] * x[j];
  float sigma2 = 2 * sumx2 / QK_K;
  for (int j = 0; j < QK_K / 16; ++j) {
    const float* qw = qw_block + 16 * j;
    float* w = weight + 16 * j;
    for (int l = 0; l < 16; ++l) w[l] = qw[l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
    float sumw = 0;
    for (int l = 0; l < 16; ++l) sumw += w[l];
    sw[j] = sumw;
  }
  make_qx_quants_blocks(QK_K / 16, 16, 4, x, weight, L, scales);  // the sixteen searches at once
  std::memset(y.scales, 0, 12);
  float d_block = make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
  for (int j = 0; j < QK_K / 16; ++j) q3_k_put_scale(y, j, Ls[j]);
  y.d = fp32_to_fp16(d_block);
  q3_k_finish(x, y, L);
}

// ---- Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scales and mins ----

// Stores eight 6-bit scales and mins in the 12 bytes Q4_K and Q5_K share.
void put_scales_k4(uint8_t* scales, const uint8_t* ls_all, const uint8_t* lm_all) {
  for (int j = 0; j < QK_K / 32; ++j) {
    const uint8_t ls = ls_all[j];
    const uint8_t lm = lm_all[j];
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls >> 4) << 6));
      scales[j - 0] = static_cast<uint8_t>(scales[j - 0] | ((lm >> 4) << 6));
    }
  }
}

// Requantizes each sub-block of 32 with its stored scale and min to 0..nmax. (Not
// k_requantize_simd: in WASM that was 6 % slower on Q4_K than this loop as LLVM
// vectorizes it.)
template <class Block>
void requantize_k4(const float* x, const Block& y, uint8_t* L, int nmax) {
  uint8_t sc, m;
  for (int j = 0; j < QK_K / 32; ++j) {
    get_scale_min_k4(j, y.scales, &sc, &m);
    const float d = fp16_to_fp32(y.d) * sc;
    if (!d) continue;
    const float dm = fp16_to_fp32(y.dmin) * m;
    for (int ii = 0; ii < 32; ++ii) {
      int l = nearest_int((x[32 * j + ii] + dm) / d);
      l = std::max(0, std::min(nmax, l));
      L[32 * j + ii] = static_cast<uint8_t>(l);
    }
  }
}

// The reference search of Q4_K and Q5_K (they differ in nmax and the search's range).
template <class Block>
void k4_ref(const float* x, Block& y, uint8_t* L, int nmax, float rmin, int nstep) {
  float weights[QK_K];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  float max_scale = 0;  // as we are deducting the min, scales are always positive
  float max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[32 * j + l] = av_x + std::fabs(x[32 * j + l]);
  }
  // The eight searches at once (each sub-block's as ggml runs it).
  make_qkx2_quants_blocks(QK_K / 32, 32, nmax, x, weights, L, scales, mins, rmin, 0.1f, nstep, false);
  for (int j = 0; j < QK_K / 32; ++j) {
    float scale = scales[j];
    if (scale > max_scale) max_scale = scale;
    float min = mins[j];
    if (min > max_min) max_min = min;
  }
  float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t Ls[QK_K / 32], Lm[QK_K / 32];
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    Ls[j] = std::min<uint8_t>(63, ls);
    Lm[j] = std::min<uint8_t>(63, lm);
  }
  put_scales_k4(y.scales, Ls, Lm);
  y.d = fp32_to_fp16(max_scale / 63.f);
  y.dmin = fp32_to_fp16(max_min / 63.f);
  requantize_k4(x, y, L, nmax);
}

// The weighted search of Q4_K and Q5_K.
template <class Block>
void k4_impl(const float* x, Block& y, uint8_t* L, int nmax, const float* qw_block, bool clamp_levels) {
  uint8_t Ls[QK_K / 32];
  uint8_t Lm[QK_K / 32];
  float weights[QK_K];
  float sw[QK_K / 32];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  float sum_x2 = 0;
  for (int l = 0; l < QK_K; ++l) sum_x2 += x[l] * x[l];
  float sigma2 = 2 * sum_x2 / QK_K;
  for (int j = 0; j < QK_K / 32; ++j) {
    const float* qw = qw_block + 32 * j;
    float* w = weights + 32 * j;
    for (int l = 0; l < 32; ++l) w[l] = qw[l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
    float sumw = 0;
    for (int l = 0; l < 32; ++l) sumw += w[l];
    sw[j] = sumw;
  }
  make_qkx3_quants_blocks(QK_K / 32, 32, nmax, x, weights, L, scales, mins, -0.9f, 0.05f, 36, false);  // all at once
  float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
  float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
  // Q5_K clamps the levels (a negative one has wrapped to a large uint8); Q4_K does not.
  for (int j = 0; clamp_levels && j < QK_K / 32; ++j) {
    Ls[j] = std::min<uint8_t>(63, Ls[j]);
    Lm[j] = std::min<uint8_t>(63, Lm[j]);
  }
  put_scales_k4(y.scales, Ls, Lm);
  y.d = fp32_to_fp16(d_block);
  y.dmin = fp32_to_fp16(m_block);
  requantize_k4(x, y, L, nmax);
}

void pack_q4_k(const uint8_t* L, block_q4_K& y) {
  uint8_t* q = y.qs;
  for (int j = 0; j < QK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void pack_q5_k(const uint8_t* L, block_q5_K& y) {
  uint8_t* qh = y.qh;
  uint8_t* ql = y.qs;
  std::memset(qh, 0, QK_K / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QK_K; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] = static_cast<uint8_t>(qh[j] | m1);
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] = static_cast<uint8_t>(qh[j] | m2);
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}

void q4_k_ref(const float* x, block_q4_K& y) {
  uint8_t L[QK_K];
  k4_ref(x, y, L, 15, -1.f, 20);
  pack_q4_k(L, y);
}
void q4_k_impl(const float* x, block_q4_K& y, const float* qw) {
  uint8_t L[QK_K];
  k4_impl(x, y, L, 15, qw, false);
  pack_q4_k(L, y);
}
void q5_k_ref(const float* x, block_q5_K& y) {
  uint8_t L[QK_K];
  k4_ref(x, y, L, 31, -0.5f, 15);
  pack_q5_k(L, y);
}
void q5_k_impl(const float* x, block_q5_K& y, const float* qw) {
  uint8_t L[QK_K];
  k4_impl(x, y, L, 31, qw, true);
  pack_q5_k(L, y);
}

// ---- Q6_K ----

// `qw` null: the reference (make_qx_quants' own weights x^2); else the matrix's.
void q6_k_block(const float* x, block_q6_K& y, const float* qw_block) {
  int8_t L[QK_K];
  float scales[QK_K / 16];
  float max_scale = 0;
  float max_abs_scale = 0;
  make_qx_quants_blocks(QK_K / 16, 16, 32, x, qw_block, L, scales);  // the sixteen searches at once
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const float scale = scales[ib];
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(&y, 0, sizeof y);
    y.d = fp32_to_fp16(0.f);
    return;
  }
  float iscale = -128.f / max_scale;
  y.d = fp32_to_fp16(1 / iscale);
  for (int ib = 0; ib < QK_K / 16; ++ib) y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < QK_K / 16; ++j) {
    float d = fp16_to_fp32(y.d) * y.scales[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearest_int(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF;
      const uint8_t q2 = L[j + l + 32] & 0xF;
      const uint8_t q3 = L[j + l + 64] & 0xF;
      const uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                   ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

// ggml's quantize_<type>: the reference without weights, the weighted search with them
// (K-quant statistics are per super-block, so both run block by block).
template <class Block, class Ref, class Impl>
size_t encode(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix, Ref ref,
              Impl impl) {
  return each_block<Block, QK_K>(src, dst, nrows, n_per_row, [&](const float*) {
    return [&](const float* x, Block& b, int64_t i) {
      if (imatrix) {
        impl(x, b, imatrix + QK_K * i);
      } else {
        ref(x, b);
      }
    };
  });
}

}  // namespace

size_t quantize_q2_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q2_K>(src, dst, nrows, n_per_row, imatrix, q2_k_ref, q2_k_impl);
}
// Without a matrix, two super-blocks' 32 searches at once (make_q3_quants_blocks
// interleaves their chains), then each one's rest of q3_k_ref.
size_t quantize_q3_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  if (imatrix) {
    return encode<block_q3_K>(src, dst, nrows, n_per_row, imatrix, [](const float*, block_q3_K&) {}, q3_k_impl);
  }
  const int64_t nb = nrows * (n_per_row / QK_K);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < nb; i += 2) {
    const int pair = static_cast<int>(std::min<int64_t>(2, nb - i));
    int8_t L[2 * QK_K];
    float scales[2 * QK_K / 16];
    make_q3_quants_blocks(pair * QK_K / 16, 16, 4, src + i * QK_K, L, scales);
    for (int p = 0; p < pair; ++p) {
      block_q3_K y;
      std::memset(&y, 0, sizeof y);
      q3_k_ref_rest(src + (i + p) * QK_K, y, L + p * QK_K, scales + p * QK_K / 16);
      std::memcpy(out + (i + p) * sizeof y, &y, sizeof y);
    }
  }
  return static_cast<size_t>(nb) * sizeof(block_q3_K);
}
size_t quantize_q4_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q4_K>(src, dst, nrows, n_per_row, imatrix, q4_k_ref, q4_k_impl);
}
size_t quantize_q5_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q5_K>(src, dst, nrows, n_per_row, imatrix, q5_k_ref, q5_k_impl);
}
size_t quantize_q6_k(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  return encode<block_q6_K>(
      src, dst, nrows, n_per_row, imatrix, [](const float* x, block_q6_K& y) { q6_k_block(x, y, nullptr); },
      q6_k_block);
}

}  // namespace amn::ggml
