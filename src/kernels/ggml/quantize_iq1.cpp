// IQ1_S and IQ1_M encoders: ggml's quantize_row_iq1_s_impl and quantize_row_iq1_m_impl
// (through quantize_iq1_s, quantize_iq1_m). Each element is -1, 0 or +1 plus a shift of
// +-1/8 per group; the best split of the sorted block into those three values is found
// exhaustively, then groups of 8 off the grid move to their best neighbour.
#include <cmath>
#include <cstring>

#include "kernels/ggml/quantize_iq.h"
#include "kernels/ggml/quantize_iq_common.h"
#include "kernels/ggml/quantize_iq_simd.h"
#include "kernels/ggml/quantize_iq_tables.h"

namespace amn::ggml {
namespace {

using quant::IqTable;
constexpr float kFltMax = 3.40282347e+38f;

// The three values with the shift added (x_p) or subtracted (x_m), as ggml builds them.
constexpr float x_p[3] = {-1 + IQ1S_DELTA, IQ1S_DELTA, 1 + IQ1S_DELTA};
constexpr float x_m[3] = {-1 - IQ1S_DELTA, -IQ1S_DELTA, 1 - IQ1S_DELTA};

// iq1_find_best_neighbour2: the first neighbour with the smallest weighted squared
// error of scale * xg[level] against x. (ggml falls back to a scan of the whole grid,
// reading past its input, when every error is NaN or infinite, and then aborts; we keep
// the first neighbour there.)
int find_best_neighbour2(const IqTable& t, const uint16_t* neighbours, const float* xval, const float* weight,
                         float scale, const float* xg, int8_t* L) {
  const int num_neighbors = neighbours[0];
  float best_score = kFltMax;
  int grid_index = neighbours[1];
  for (int j = 1; j <= num_neighbors; ++j) {
    float d2 = 0;
    for (int i = 0; i < 8; ++i) {
      const float q = xg[(t.at(neighbours[j], i) - 1) / 2];
      const float w = weight[i];
      const float diff = scale * q - xval[i];
      d2 += w * diff * diff;
    }
    if (d2 < best_score) {
      best_score = d2;
      grid_index = neighbours[j];
    }
  }
  for (int i = 0; i < 8; ++i) L[i] = int8_t((t.at(grid_index, i) - 1) / 2);
  return grid_index;
}

// The block's elements in ascending order of value. ggml uses qsort, which glibc
// implements as a merge sort for arrays this small: stable, so equal values keep their
// element order; any stable sort orders them the same way. An insertion sort (stable):
// no temporary buffer as std::stable_sort takes, and quick on 16 or 32 elements.
template <int n>
void sort_order(const float* xb, int* idx) {
  if (!reference_impl_forced() && iq_sort_order(xb, n, idx)) return;  // the same order, counted in lanes
  for (int j = 0; j < n; ++j) {
    int at = j;
    while (at > 0 && xb[j] < xb[idx[at - 1]]) {
      idx[at] = idx[at - 1];
      --at;
    }
    idx[at] = j;
  }
}

// Grid indices of the groups of 8 of a block whose levels are L; a group off the grid
// takes its best neighbour (xx_of(k): the values group k uses). Returns whether all were
// on the grid.
template <int ngroups, class XxOf>
bool snap_groups(const IqTable& t, const float* xb, const float* weight, float scale, int8_t* L, uint16_t* index,
                 XxOf xx_of) {
  bool all_on_grid = true;
  for (int k = 0; k < ngroups; ++k) {
    int u = 0;
    for (int j = 0; j < 8; ++j) u |= L[8 * k + j] << 2 * j;
    int grid_index = t.map[u];
    if (grid_index < 0) {
      all_on_grid = false;
      if (reference_impl_forced()) {
        grid_index = find_best_neighbour2(t, t.neighbours_of(u), xb + 8 * k, weight + 8 * k, scale, xx_of(k), L + 8 * k);
      } else {
        grid_index = quant::find_best_neighbour_fast<8>(t, u, xb + 8 * k, weight + 8 * k, scale, L + 8 * k, xx_of(k));
      }
    }
    index[k] = uint16_t(grid_index);
  }
  return all_on_grid;
}

// The levels of the best split (sorted positions below i1 -> 0, below i2 -> 1, the rest
// -> 2), mirrored when the scale came out negative; groups off the grid moved to their
// best neighbour, then the scale refit if any moved. xx_of(mirrored, k): the values
// group k uses. Returns whether the split was mirrored (the caller flips its shift).
template <int n, class XxOf>
bool encode_split(const IqTable& t, const float* xb, const float* weight, const int* idx, int i1, int i2,
                  float& scale, int8_t* L, uint16_t* index, XxOf xx_of) {
  for (int j = 0; j < i1; ++j) L[idx[j]] = 0;
  for (int j = i1; j < i2; ++j) L[idx[j]] = 1;
  for (int j = i2; j < n; ++j) L[idx[j]] = 2;
  const bool mirrored = scale < 0;
  if (mirrored) {
    for (int j = 0; j < n; ++j) L[j] = int8_t(2 - L[j]);
    scale = -scale;
  }
  auto xx = [&](int k) { return xx_of(mirrored, k); };
  if (!snap_groups<n / 8>(t, xb, weight, scale, L, index, xx)) {
    float sumqx = 0, sumq2 = 0;
    for (int k = 0; k < n / 8; ++k) {
      const float* xk = xx(k);
      for (int j = 0; j < 8; ++j) {
        const float w = weight[8 * k + j];
        const float q = xk[(t.at(index[k], j) - 1) / 2];
        sumqx += w * q * xb[8 * k + j];
        sumq2 += w * q * q;
      }
    }
    if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
  }
  return mirrored;
}

block_iq1_s encode_iq1_s(const IqTable& t, const float* xbl, const float* qwbl) {
  constexpr int block_size = 32;
  block_iq1_s y{};
  y.d = fp32_to_fp16(0.f);
  float scales[QK_K / block_size];
  int8_t shifts[QK_K / block_size];
  // The prefix sums are read in vectors past their 33 values (iq1s_best_split).
  float weight[block_size], sumx[block_size + 1 + 64] = {}, sumw[block_size + 1 + 64] = {};
  int idx[block_size];
  int8_t L[block_size];
  uint16_t index[block_size / 8];
  float max_scale = 0;
  const float sigma2 = 2 * quant::sum_squares(xbl) / QK_K;
  for (int ib = 0; ib < QK_K / block_size; ++ib) {
    const float* xb = xbl + block_size * ib;
    quant::importance_weights(block_size, xb, qwbl + block_size * ib, sigma2, weight);
    const float max = quant::abs_max(xb, block_size);
    if (max < quant::kGroupMaxEpsIq1s) {
      scales[ib] = 0;
      shifts[ib] = 1;
      continue;
    }
    // Prefix sums over the sorted elements make every split (i1, i2) into -1 / 0 / +1 an
    // O(1) candidate; both shift signs are scored, the first strict best kept.
    sort_order<block_size>(xb, idx);
    sumx[0] = sumw[0] = 0;
    for (int j = 0; j < block_size; ++j) {
      const int i = idx[j];
      sumx[j + 1] = sumx[j] + weight[i] * xb[i];
      sumw[j + 1] = sumw[j] + weight[i];
    }
    float best_score = -kFltMax, scale = max;
    int besti1 = -1, besti2 = -1, best_shift = 0;
    // The splits scored in vector lanes (the same numbers, the same choice), or ggml's loop.
    const bool reference = reference_impl_forced();
    if (!reference) {
      const int won = iq1s_best_split(sumx, sumw, x_p, x_m, &scale);
      if (won >= 0) {
        best_shift = won % 2 ? 1 : -1;
        besti1 = won / 2 / (block_size + 1);
        besti2 = won / 2 % (block_size + 1);
      }
    }
    for (int i1 = 0; i1 <= block_size && reference; ++i1) {
      for (int i2 = i1; i2 <= block_size; ++i2) {
        for (int sh = 1; sh >= -1; sh -= 2) {
          const float* xx = sh == 1 ? x_p : x_m;
          const float sumqx = (sumx[i1] - sumx[0]) * xx[0] + (sumx[i2] - sumx[i1]) * xx[1] +
                              (sumx[block_size] - sumx[i2]) * xx[2];
          const float sumq2 = (sumw[i1] - sumw[0]) * xx[0] * xx[0] + (sumw[i2] - sumw[i1]) * xx[1] * xx[1] +
                              (sumw[block_size] - sumw[i2]) * xx[2] * xx[2];
          if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
            scale = sumqx / sumq2;
            best_score = scale * sumqx;
            besti1 = i1;
            besti2 = i2;
            best_shift = sh;
          }
        }
      }
    }
    if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
      scales[ib] = 0;
      shifts[ib] = 1;
      continue;
    }
    if (encode_split<block_size>(t, xb, weight, idx, besti1, besti2, scale, L, index, [&](bool mirrored, int) {
          return (mirrored ? -best_shift : best_shift) == 1 ? x_p : x_m;
        })) {
      best_shift = -best_shift;
    }
    uint16_t h = 0;
    for (int k = 0; k < block_size / 8; ++k) {
      y.qs[(block_size / 8) * ib + k] = uint8_t(index[k] & 255);
      h = uint16_t(h | ((index[k] >> 8) << 3 * k));
    }
    y.qh[ib] = h;
    scales[ib] = scale;
    shifts[ib] = int8_t(best_shift);
    max_scale = max_scale > scale ? max_scale : scale;
  }
  if (!max_scale) return y;
  const float d = max_scale / 15;
  y.d = fp32_to_fp16(d * 1.125f);
  const float id = 1 / d;
  for (int ib = 0; ib < QK_K / block_size; ++ib) {
    int l = quant::clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
    if (shifts[ib] == -1) l |= 8;
    y.qh[ib] = uint16_t(y.qh[ib] | (l << 12));
  }
  return y;
}

block_iq1_m encode_iq1_m(const IqTable& t, const float* xbl, const float* qwbl) {
  constexpr int block_size = 16;
  constexpr uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
  // Shift choice k (0..3): the first group of 8 uses x_p when k < 2, the second when k
  // is even (0: +,+  1: +,-  2: -,+  3: -,-).
  auto xx_for = [](int k, int group) { return (group == 0 ? k < 2 : k % 2 == 0) ? x_p : x_m; };
  block_iq1_m y{};
  float scales[QK_K / block_size];
  int8_t shifts[QK_K / block_size];
  float weight[block_size];
  int idx[block_size];
  int8_t L[block_size];
  uint16_t index[block_size / 8];
  float max_scale = 0;
  const float sigma2 = 2 * quant::sum_squares(xbl) / QK_K;
  auto weights_of = [&](int ib) {
    quant::importance_weights(block_size, xbl + block_size * ib, qwbl ? qwbl + block_size * ib : nullptr, sigma2,
                              weight);
  };
  for (int ib = 0; ib < QK_K / block_size; ++ib) {
    const float* xb = xbl + block_size * ib;
    weights_of(ib);
    const float max = quant::abs_max(xb, block_size);
    if (max < quant::kGroupMaxEpsIq1m) {
      scales[ib] = 0;
      shifts[ib] = 0;
      continue;
    }
    sort_order<block_size>(xb, idx);
    float best_score = -kFltMax, scale = max;
    int besti1 = -1, besti2 = -1, best_k = -1;
    const bool reference = reference_impl_forced();
    if (!reference) {
      const int won = iq1m_best_split(xb, weight, idx, x_p, x_m, &scale);
      if (won >= 0) {
        best_k = won % 4;
        besti1 = won / 4 / (block_size + 1);
        besti2 = won / 4 % (block_size + 1);
      }
    }
    // ggml sums each split from scratch, element by element in sorted order, into four
    // accumulators (one per shift choice): the same order here.
    for (int i1 = 0; i1 <= block_size && reference; ++i1) {
      for (int i2 = i1; i2 <= block_size; ++i2) {
        float sumqx[4] = {}, sumq2[4] = {};
        for (int j = 0; j < block_size; ++j) {
          const int i = idx[j];
          const int v = j < i1 ? 0 : j < i2 ? 1 : 2;
          for (int k = 0; k < 4; ++k) {
            const float xv = xx_for(k, i < block_size / 2 ? 0 : 1)[v];
            sumqx[k] += weight[i] * xv * xb[i];
            sumq2[k] += weight[i] * xv * xv;
          }
        }
        for (int k = 0; k < 4; ++k) {
          if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
            scale = sumqx[k] / sumq2[k];
            best_score = scale * sumqx[k];
            besti1 = i1;
            besti2 = i2;
            best_k = k;
          }
        }
      }
    }
    if (besti1 < 0 || besti2 < 0 || best_k < 0) {
      scales[ib] = 0;
      shifts[ib] = 0;
      continue;
    }
    if (encode_split<block_size>(t, xb, weight, idx, besti1, besti2, scale, L, index, [&](bool mirrored, int k) {
          return xx_for(mirrored ? 3 - best_k : best_k, k);
        })) {
      best_k = 3 - best_k;
    }
    y.qs[2 * ib + 0] = uint8_t(index[0] & 255);
    y.qs[2 * ib + 1] = uint8_t(index[1] & 255);
    y.qh[ib] = uint8_t((index[0] >> 8) | ((index[1] >> 8) << 4));
    scales[ib] = scale;
    shifts[ib] = int8_t(best_k);
    max_scale = max_scale > scale ? max_scale : scale;
  }
  if (!max_scale) return y;
  // The 3-bit sub-scales, then the super-block scale refit by least squares over the
  // whole block as encoded; its F16 bits are spread over the top nibbles of the scales.
  uint16_t sc[4] = {};
  float d = max_scale / 15;
  const float id = 1 / d;
  float sumqx_f = 0, sumq2_f = 0;
  for (int ib = 0; ib < QK_K / block_size; ++ib) {
    const int l = quant::clamp_int(nearest_int(0.5f * (id * scales[ib + 0] - 1)), 0, 7);
    sc[ib / 4] = uint16_t(sc[ib / 4] | (l << 3 * (ib % 4)));
    y.qh[ib] |= masks[shifts[ib]];
    const float* xb = xbl + block_size * ib;
    weights_of(ib);
    for (int k = 0; k < block_size / 8; ++k) {
      const float* xx = xx_for(shifts[ib], k);
      const int g = y.qs[2 * ib + k] + ((y.qh[ib] << (8 - 4 * k)) & 0x700);
      for (int j = 0; j < 8; ++j) {
        const float w = weight[8 * k + j];
        const float q = xx[(t.at(g, j) - 1) / 2] * float(2 * l + 1);
        sumqx_f += w * q * xb[8 * k + j];
        sumq2_f += w * q * q;
      }
    }
  }
  if (sumq2_f > 0) d = sumqx_f / sumq2_f;
  const uint16_t s = fp32_to_fp16(d * 1.1125f);
  sc[0] = uint16_t(sc[0] | ((s & 0x000f) << 12));
  sc[1] = uint16_t(sc[1] | ((s & 0x00f0) << 8));
  sc[2] = uint16_t(sc[2] | ((s & 0x0f00) << 4));
  sc[3] = uint16_t(sc[3] | ((s & 0xf000) << 0));
  std::memcpy(y.scales, sc, sizeof sc);
  return y;
}

}  // namespace

size_t quantize_iq1_s(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  if (!imatrix) return 0;
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq1s);
  return quant::quantize_super_blocks<block_iq1_s>(src, dst, nrows, n_per_row, imatrix,
                                    [&](const float* x, const float* qw) { return encode_iq1_s(t, x, qw); });
}

size_t quantize_iq1_m(const float* src, void* dst, int64_t nrows, int64_t n_per_row, const float* imatrix) {
  const IqTable& t = quant::iq_table(quant::IqGrid::Iq1s);
  return quant::quantize_super_blocks<block_iq1_m>(src, dst, nrows, n_per_row, imatrix,
                                    [&](const float* x, const float* qw) { return encode_iq1_m(t, x, qw); });
}

}  // namespace amn::ggml
