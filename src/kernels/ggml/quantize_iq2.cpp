// IQ2_XXS, IQ2_XS and IQ2_S encoders: ggml's quantize_row_iq2_xxs_impl,
// quantize_row_iq2_xs_impl and quantize_row_iq2_s_impl (through quantize_iq2_xxs,
// quantize_iq2_xs, quantize_iq2_s). Groups of 8 magnitudes snap to a grid of levels
// {1, 3, 5} (times the scale); signs are stored apart. Search: a sweep of trial scales,
// each group's rounded levels looked up in the grid map or, off the grid, replaced by
// the best of their precomputed neighbours (quantize_iq_tables.h).
#include <cmath>
#include <cstring>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"
#include "kernels/ggml/quantize_iq_sweep.h"
#include "kernels/ggml/quantize_iq_tables.h"

namespace amn::ggml {
namespace {

using quant::IqTable;
constexpr int kMaxQ = 3;

// The level of x at inverse scale id: nearest_int((id * x - 1) / 2) clamped to [0, 2].
int level(float id, float x) { return quant::clamp_int(nearest_int(0.5f * (id * x - 1)), 0, kMaxQ - 1); }

// The grid index of 8 levels, or -1 when L is not a grid point (ggml aborts there; it
// cannot happen for finite input).
int on_grid_index(const IqTable& t, const int8_t* L) {
  int u = 0;
  for (int i = 0; i < 8; ++i) u |= L[i] << 2 * i;
  return u < int(t.map.size()) ? t.map[u] : -1;
}

// Levels of 8 elements at inverse scale id; off the grid, the best neighbour at `scale`
// replaces them. Returns whether they were on the grid.
bool snap_group(const IqTable& t, float id, float scale, const float* xval, const float* waux, int8_t* L) {
  int u = 0;
  for (int i = 0; i < 8; ++i) {
    L[i] = int8_t(level(id, xval[i]));
    u |= L[i] << 2 * i;
  }
  if (t.map[u] >= 0) return true;
  quant::best_neighbour<8>(t, u, xval, waux, scale, L);
  return false;
}

// sum w x q and sum w q^2 over n elements with q = 2L + 1.
void sums(int n, const float* weight, const float* xval, const int8_t* L, float& sumqx, float& sumq2) {
  sumqx = 0;
  sumq2 = 0;
  for (int i = 0; i < n; ++i) {
    const float w = weight[i];
    const float q = float(2 * L[i] + 1);
    sumqx += w * xval[i] * q;
    sumq2 += w * q * q;
  }
}

// The inverse scales (5 + 0.1 is) / max of the trials is = -nsweep .. nsweep and their
// scales, for sweep_trials (spare lanes repeat the first trial).
void trial_scales(int nsweep, float max, float* id, float* this_scale) {
  for (int tr = 0; tr < kIqTrialStride; ++tr) {
    const int is = -nsweep + (tr < 2 * nsweep + 1 ? tr : 0);
    id[tr] = (float(2 * kMaxQ - 1) + float(is) * 0.1f) / max;
    this_scale[tr] = 1 / id[tr];
  }
}

// The 16-element search IQ2_XS and IQ2_S share: 19 trial scales (5 + 0.1 is) / max, the
// best kept by sumqx^2 / sumq2 (strict: earlier wins ties); then the groups that were
// off the grid are redone at the chosen scale. Returns the scale; L gets the levels.
float search_16(const IqTable& t, const float* xval, const float* weight, const float* waux, float max, int8_t* L) {
  int8_t Laux[16];
  bool is_on_grid[2] = {true, true}, is_on_grid_aux[2];
  float best = 0;
  float scale = max / (2 * kMaxQ - 1);
  if (!reference_impl_forced()) {
    float id[kIqTrialStride], this_scale[kIqTrialStride];
    trial_scales(9, max, id, this_scale);
    quant::sweep_trials<8>(t, 19, id, this_scale, 16, kMaxQ, xval, weight, waux, scale, L, is_on_grid);
  } else {
    for (int is = -9; is <= 9; ++is) {
      const float id = (float(2 * kMaxQ - 1) + float(is) * 0.1f) / max;
      const float this_scale = 1 / id;
      for (int k = 0; k < 2; ++k) is_on_grid_aux[k] = snap_group(t, id, this_scale, xval + 8 * k, waux + 8 * k, Laux + 8 * k);
      float sumqx, sumq2;
      sums(16, weight, xval, Laux, sumqx, sumq2);
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        scale = sumqx / sumq2;
        best = scale * sumqx;
        std::memcpy(L, Laux, 16);
        for (int k = 0; k < 2; ++k) is_on_grid[k] = is_on_grid_aux[k];
      }
    }
  }
  if ((!is_on_grid[0] || !is_on_grid[1]) && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 2; ++k) {
      if (!is_on_grid[k]) snap_group(t, id, scale, xval + 8 * k, waux + 8 * k, L + 8 * k);
    }
    float sumqx, sumq2;
    sums(16, weight, xval, L, sumqx, sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  return scale;
}

// The 4-bit sub-block scale: nearest_int((scale / d - 1) / 2) in [0, 15].
int scale_code(float id, float scale) { return quant::clamp_int(nearest_int(0.5f * (id * scale - 1)), 0, 15); }

block_iq2_xxs encode_iq2_xxs(const IqTable& t, const float* xbl, const float* qwbl) {
  block_iq2_xxs y{};
  y.d = fp32_to_fp16(0.f);
  uint32_t q2[2 * (QK_K / 32)] = {};
  float scales[QK_K / 32];
  float weight[32], xval[32], waux[32];
  int8_t L[32], Laux[32];
  uint8_t block_signs[4];
  float max_scale = 0;
  const float sigma2 = quant::sum_squares(xbl) / QK_K;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const float* xb = xbl + 32 * ib;
    const float* qw = qwbl + 32 * ib;
    for (int i = 0; i < 32; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < 4; ++k) block_signs[k] = quant::even_parity_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
    float max = xval[0];
    for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
    if (max < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float scale = make_qp_quants(32, kMaxQ + 1, xval, reinterpret_cast<uint8_t*>(L), weight);
    const float eff_max = scale * kMaxQ;
    if (eff_max <= 0) {
      scales[ib] = 0;
      continue;
    }
    if (!reference_impl_forced()) {
      float id[kIqTrialStride], this_scale[kIqTrialStride];
      bool on_grid[4];
      trial_scales(6, eff_max, id, this_scale);
      quant::sweep_trials<8>(t, 13, id, this_scale, 32, kMaxQ, xval, weight, waux, scale, L, on_grid);
    } else {
      float best = 0;
      for (int is = -6; is <= 6; ++is) {
        const float id = (float(2 * kMaxQ - 1) + float(is) * 0.1f) / eff_max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 4; ++k) snap_group(t, id, this_scale, xval + 8 * k, waux + 8 * k, Laux + 8 * k);
        float sumqx, sumq2;
        sums(32, weight, xval, Laux, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          scale = sumqx / sumq2;
          best = scale * sumqx;
          std::memcpy(L, Laux, 32);
        }
      }
    }
    if (scale > 0) {
      const float id = 1 / scale;
      for (int k = 0; k < 4; ++k) snap_group(t, id, scale, xval + 8 * k, waux + 8 * k, L + 8 * k);
      float sumqx, sumq2;
      sums(32, weight, xval, L, sumqx, sumq2);
      if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
      scale = -scale;
      for (int k = 0; k < 4; ++k) block_signs[k] = uint8_t(~block_signs[k] & 127);
    }
    for (int k = 0; k < 4; ++k) {
      const int grid_index = on_grid_index(t, L + 8 * k);
      q2[2 * ib + 0] |= uint32_t(grid_index < 0 ? 0 : grid_index) << 8 * k;
      q2[2 * ib + 1] |= uint32_t(block_signs[k]) << 7 * k;
    }
    scales[ib] = scale;
    max_scale = max_scale > scale ? max_scale : scale;
  }
  if (!max_scale) return y;  // qs all zero
  const float d = max_scale / 31;
  y.d = fp32_to_fp16(d);
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / 32; ++ib) q2[2 * ib + 1] |= uint32_t(scale_code(id, scales[ib])) << 28;
  std::memcpy(y.qs, q2, sizeof y.qs);
  return y;
}

// IQ2_XS (is_s false) and IQ2_S (is_s true) differ in weights, signs and packing only.
template <class Block, bool is_s>
Block encode_iq2_16(const IqTable& t, const float* xbl, const float* qwbl) {
  Block y{};
  y.d = fp32_to_fp16(0.f);
  uint16_t q2[2 * (QK_K / 16)] = {};  // IQ2_XS: index | signs << 9
  float scales[QK_K / 16];
  float weight[16], xval[16], waux[16];
  int8_t L[16];
  uint8_t block_signs[2];
  float max_scale = 0;
  const float sumx2 = quant::sum_squares(xbl);
  const float sigma2 = is_s ? 2 * sumx2 / QK_K : sumx2 / QK_K;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const float* xb = xbl + 16 * ib;
    if (qwbl) {
      const float* qw = qwbl + 16 * ib;
      for (int i = 0; i < 16; ++i) weight[i] = qw[i] * std::sqrt(sigma2 + xb[i] * xb[i]);
    } else {
      for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
    }
    for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < 2; ++k) {
      if (is_s) {  // 8 sign bits, no parity trick
        uint8_t s = 0;
        for (int i = 0; i < 8; ++i) {
          const float v = xb[8 * k + i];
          xval[8 * k + i] = v >= 0 ? v : -v;
          if (!(v >= 0)) s |= uint8_t(1 << i);
        }
        block_signs[k] = s;
      } else {
        block_signs[k] = quant::even_parity_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
      }
    }
    float max = xval[0];
    for (int i = 1; i < 16; ++i) max = max > xval[i] ? max : xval[i];
    std::memset(L, 0, 16);
    if (max < (is_s ? quant::kGroupMaxEpsIq2s : kGroupMaxEps)) {
      scales[ib] = 0;
      continue;
    }
    float scale = search_16(t, xval, weight, waux, max, L);
    if (scale < 0) {
      scale = -scale;
      for (int k = 0; k < 2; ++k) block_signs[k] = uint8_t(is_s ? ~block_signs[k] : ~block_signs[k] & 127);
    }
    for (int k = 0; k < 2; ++k) {
      int grid_index = on_grid_index(t, L + 8 * k);
      if (grid_index < 0) grid_index = 0;
      if constexpr (is_s) {
        const int i8 = 2 * ib + k;
        y.qs[i8] = uint8_t(grid_index & 255);
        y.qh[i8 / 4] |= uint8_t((grid_index >> 8) << 2 * (i8 % 4));
        y.qs[QK_K / 8 + i8] = block_signs[k];
      } else {
        q2[2 * ib + k] = uint16_t(grid_index | (block_signs[k] << 9));
      }
    }
    scales[ib] = scale;
    max_scale = max_scale > scale ? max_scale : scale;
  }
  if (!max_scale) {
    if constexpr (!is_s) std::memset(y.qs, 0, sizeof y.qs);
    return y;
  }
  const float d = max_scale / 31;
  y.d = fp32_to_fp16(is_s ? d * 0.9875f : d);
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const int l = scale_code(id, scales[ib]);
    if (ib % 2 == 0) y.scales[ib / 2] = uint8_t(l);
    else y.scales[ib / 2] |= uint8_t(l << 4);
  }
  if constexpr (!is_s) std::memcpy(y.qs, q2, sizeof y.qs);
  return y;
}

}  // namespace

size_t quantize_iq2_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  if (!imatrix) return 0;
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq2xxs);
  return quant::quantize_super_blocks<block_iq2_xxs>(src, dst, nrows, n_per_row, imatrix,
                                      [&](const float* x, const float* qw) { return encode_iq2_xxs(t, x, qw); });
}

size_t quantize_iq2_xs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  if (!imatrix) return 0;
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq2xs);
  return quant::quantize_super_blocks<block_iq2_xs>(src, dst, nrows, n_per_row, imatrix, [&](const float* x, const float* qw) {
    return encode_iq2_16<block_iq2_xs, false>(t, x, qw);
  });
}

size_t quantize_iq2_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq2s);
  return quant::quantize_super_blocks<block_iq2_s>(src, dst, nrows, n_per_row, imatrix, [&](const float* x, const float* qw) {
    return encode_iq2_16<block_iq2_s, true>(t, x, qw);
  });
}

}  // namespace amn::ggml
