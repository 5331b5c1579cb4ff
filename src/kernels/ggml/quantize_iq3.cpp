// IQ3_XXS and IQ3_S encoders: ggml's quantize_row_iq3_xxs_impl(256, ...) and
// quantize_row_iq3_s_impl(32, ...) (through quantize_iq3_xxs, quantize_iq3_s). Groups of
// 4 magnitudes snap to a grid of levels 1, 3, .., 15; the search is IQ2's
// (quantize_iq2.cpp) with 8 levels per element and wider trial sweeps.
#include <cmath>
#include <cstring>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"
#include "kernels/ggml/quantize_iq_sweep.h"
#include "kernels/ggml/quantize_iq_tables.h"

namespace amn::ggml {
namespace {

using quant::IqTable;
constexpr int kMaxQ = 8;

// Levels of 4 elements at inverse scale id (nearest_int((id x - 1) / 2) in [0, 7]); off
// the grid, the best neighbour at `scale` replaces them. Returns whether on the grid.
bool snap_group(const IqTable& t, float id, float scale, const float* xval, const float* waux, int8_t* L) {
  int u = 0;
  for (int i = 0; i < 4; ++i) {
    L[i] = int8_t(quant::clamp_int(nearest_int(0.5f * (id * xval[i] - 1)), 0, kMaxQ - 1));
    u |= L[i] << 3 * i;
  }
  if (t.map[u] >= 0) return true;
  quant::best_neighbour<4>(t, u, xval, waux, scale, L);
  return false;
}

int grid_index_of(const IqTable& t, const int8_t* L) {
  int u = 0;
  for (int i = 0; i < 4; ++i) u |= L[i] << 3 * i;
  return t.map[u] < 0 ? 0 : t.map[u];  // off the grid cannot happen (ggml aborts)
}

void sums(const float* weight, const float* xval, const int8_t* L, float& sumqx, float& sumq2) {
  sumqx = 0;
  sumq2 = 0;
  for (int i = 0; i < 32; ++i) {
    const float w = weight[i];
    const float q = float(2 * L[i] + 1);
    sumqx += w * xval[i] * q;
    sumq2 += w * q * q;
  }
}

// One block of 32: weights, xval = |x| (sign bits, 7 + parity for IQ3_XXS, 8 for IQ3_S),
// and the trial sweep (5 + 0.2 is) / ... with 2 * nsweep + 1 trials; then the groups off
// the grid redone at the chosen scale (IQ3_XXS: those off the grid only; IQ3_S: all
// eight, ggml's skip being commented out). Returns the scale, or 0 for a zero block
// (`skipped` set).
struct Block32 {
  float scale = 0;
  bool skipped = false;
  int8_t L[32];
  uint8_t signs[4];
};

template <bool is_s>
Block32 search_32(const IqTable& t, const float* xb, const float* qw, float sigma2) {
  Block32 r;
  float weight[32], xval[32], waux[32];
  int8_t Laux[32];
  bool is_on_grid[8], is_on_grid_aux[8];
  quant::importance_weights(32, xb, qw, sigma2, weight);
  for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
  for (int k = 0; k < 4; ++k) {
    if (is_s) {
      uint8_t s = 0;
      for (int i = 0; i < 8; ++i) {
        const float v = xb[8 * k + i];
        xval[8 * k + i] = v >= 0 ? v : -v;
        if (!(v >= 0)) s |= uint8_t(1 << i);
      }
      r.signs[k] = s;
    } else {
      r.signs[k] = quant::even_parity_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
    }
  }
  float max = xval[0];
  for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
  std::memset(r.L, 0, 32);
  if (is_s ? !max : max < quant::kGroupMaxEpsIq3xxs) {
    r.skipped = true;
    return r;
  }
  float best = 0;
  float scale = max / (2 * kMaxQ - 1);
  for (int k = 0; k < 8; ++k) is_on_grid[k] = !is_s;
  constexpr int nsweep = is_s ? 9 : 15;
  if (!reference_impl_forced()) {
    float id[kIqTrialStride], this_scale[kIqTrialStride];
    for (int tr = 0; tr < kIqTrialStride; ++tr) {
      const int is = -nsweep + (tr < 2 * nsweep + 1 ? tr : 0);  // spare lanes repeat the first trial
      id[tr] = (float(2 * kMaxQ - 1) + float(is) * 0.2f) / max;
      this_scale[tr] = 1 / id[tr];
    }
    quant::sweep_trials<4>(t, 2 * nsweep + 1, id, this_scale, 32, kMaxQ, xval, weight, waux, scale, r.L, is_on_grid);
  } else {
    for (int is = -nsweep; is <= nsweep; ++is) {
      const float id = (float(2 * kMaxQ - 1) + float(is) * 0.2f) / max;
      const float this_scale = 1 / id;
      for (int k = 0; k < 8; ++k) is_on_grid_aux[k] = snap_group(t, id, this_scale, xval + 4 * k, waux + 4 * k, Laux + 4 * k);
      float sumqx, sumq2;
      sums(weight, xval, Laux, sumqx, sumq2);
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        scale = sumqx / sumq2;
        best = scale * sumqx;
        std::memcpy(r.L, Laux, 32);
        for (int k = 0; k < 8; ++k) is_on_grid[k] = is_on_grid_aux[k];
      }
    }
  }
  int n_not_ongrid = 0;
  for (int k = 0; k < 8; ++k) n_not_ongrid += !is_on_grid[k];
  if (n_not_ongrid > 0 && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < 8; ++k) {
      if (!is_s && is_on_grid[k]) continue;
      snap_group(t, id, scale, xval + 4 * k, waux + 4 * k, r.L + 4 * k);
    }
    float sumqx, sumq2;
    sums(weight, xval, r.L, sumqx, sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  if (scale < 0) {
    // ggml flips the signs of the first 4 groups of 8 (IQ3_XXS: of the 7 stored bits).
    scale = -scale;
    for (int k = 0; k < 4; ++k) r.signs[k] = uint8_t(is_s ? ~r.signs[k] : ~r.signs[k] & 127);
  }
  r.scale = scale;
  return r;
}

int scale_code(float id, float scale) { return quant::clamp_int(nearest_int(0.5f * (id * scale - 1)), 0, 15); }

block_iq3_xxs encode_iq3_xxs(const IqTable& t, const float* xbl, const float* qwbl) {
  block_iq3_xxs y{};
  y.d = fp32_to_fp16(0.f);
  uint8_t q3[3 * (QK_K / 8) + QK_K / 32] = {};
  uint32_t scales_and_signs[QK_K / 32] = {};  // at q3 + QK_K / 4
  float scales[QK_K / 32];
  float max_scale = 0;
  const float sigma2 = 2 * quant::sum_squares(xbl) / QK_K;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const Block32 r = search_32<false>(t, xbl + 32 * ib, qwbl ? qwbl + 32 * ib : nullptr, sigma2);
    if (r.skipped) {
      scales[ib] = 0;
      continue;
    }
    for (int k = 0; k < 8; ++k) q3[8 * ib + k] = uint8_t(grid_index_of(t, r.L + 4 * k));
    scales_and_signs[ib] = uint32_t(r.signs[0]) | uint32_t(r.signs[1]) << 7 | uint32_t(r.signs[2]) << 14 |
                           uint32_t(r.signs[3]) << 21;
    scales[ib] = r.scale;
    max_scale = max_scale > r.scale ? max_scale : r.scale;
  }
  if (!max_scale) return y;  // qs all zero
  const float d = max_scale / 31;
  y.d = fp32_to_fp16(d * 1.0125f);
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / 32; ++ib) scales_and_signs[ib] |= uint32_t(scale_code(id, scales[ib])) << 28;
  std::memcpy(y.qs, q3, QK_K / 4);
  std::memcpy(y.qs + QK_K / 4, scales_and_signs, sizeof scales_and_signs);
  return y;
}

block_iq3_s encode_iq3_s(const IqTable& t, const float* xbl, const float* qwbl) {
  block_iq3_s y{};
  y.d = fp32_to_fp16(0.f);
  float scales[QK_K / 32];
  float max_scale = 0;
  const float sigma2 = 2 * quant::sum_squares(xbl) / QK_K;
  // ggml advances its qs and signs pointers only past blocks it encodes: a zero block of
  // 32 shifts the later blocks' indices and signs down (kept: the bytes are the format).
  int qs_at = 0, signs_at = 0;
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const Block32 r = search_32<true>(t, xbl + 32 * ib, qwbl ? qwbl + 32 * ib : nullptr, sigma2);
    if (r.skipped) {
      scales[ib] = 0;
      continue;
    }
    for (int k = 0; k < 8; ++k) {
      const int grid_index = grid_index_of(t, r.L + 4 * k);
      y.qs[qs_at + k] = uint8_t(grid_index & 255);
      y.qh[(ib * 8 + k) / 8] |= uint8_t((grid_index >> 8) << ((ib * 8 + k) % 8));
    }
    qs_at += 8;
    for (int k = 0; k < 4; ++k) y.signs[signs_at + k] = r.signs[k];
    signs_at += 4;
    scales[ib] = r.scale;
    max_scale = max_scale > r.scale ? max_scale : r.scale;
  }
  if (!max_scale) return y;
  const float d = max_scale / 31;
  y.d = fp32_to_fp16(d * 1.033f);
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / 32; ib += 2) {
    y.scales[ib / 2] = uint8_t(scale_code(id, scales[ib + 0]) | (scale_code(id, scales[ib + 1]) << 4));
  }
  return y;
}

}  // namespace

size_t quantize_iq3_xxs(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq3xxs);
  return quant::quantize_super_blocks<block_iq3_xxs>(src, dst, nrows, n_per_row, imatrix,
                                      [&](const float* x, const float* qw) { return encode_iq3_xxs(t, x, qw); });
}

size_t quantize_iq3_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq3s);
  return quant::quantize_super_blocks<block_iq3_s>(src, dst, nrows, n_per_row, imatrix,
                                    [&](const float* x, const float* qw) { return encode_iq3_s(t, x, qw); });
}

}  // namespace amn::ggml
