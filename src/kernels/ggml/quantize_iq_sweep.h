// The trial-scale sweep the IQ2 and IQ3 searches share (quantize_iq2.cpp, quantize_iq3.cpp),
// with the trials in vector lanes: every trial's levels and points at once
// (iq_trial_levels), the off-grid groups replaced by their best neighbour (every group
// and trial's search in one call, each search's candidates in lanes), every trial's sums at once (iq_trial_sums),
// then the reference's sequential choice over the trials. Each trial's numbers are the
// reference's, bit for bit, so the choice is too.
#pragma once
#include <cstdint>

#include "kernels/ggml/quantize_iq_simd.h"
#include "kernels/ggml/quantize_iq_tables.h"

namespace amn::ggml::quant {

// For trials inverse scales id[t] (their scales 1 / id[t] in this_scale[t]) over n <= 32
// values in groups of N: the reference's loop `if (sumq2 > 0 && sumqx * sumqx > best *
// sumq2) { scale = sumqx / sumq2; best = scale * sumqx; L = Laux; is_on_grid = ...; }`
// from best = 0. Returns the trial chosen last (L, on_grid and scale written), or -1 when
// none was (nothing written).
template <int N>
int sweep_trials(const IqTable& t, int trials, const float* id, const float* this_scale, int n, int nlevels,
                 const float* xval, const float* weight, const float* waux, float& scale, int8_t* L, bool* on_grid) {
  constexpr int S = kIqTrialStride;
  alignas(64) int32_t levels[32 * S];
  alignas(64) int32_t points[8 * S];
  alignas(64) float sumqx[S], sumq2[S];
  bool ok[8][S];
  iq_trial_levels(trials, id, n, xval, nlevels, N, levels, points);
  IqNeighbourSearch searches[8 * S];
  int16_t search_at[8 * S];  // k * S + tr of each search
  int nsearch = 0;
  for (int k = 0; k < n / N; ++k) {
    for (int tr = 0; tr < trials; ++tr) {
      const int u = points[k * S + tr];
      ok[k][tr] = t.map[u] >= 0;
      if (ok[k][tr]) continue;
      const int offset = -t.map[u] - 1;
      searches[nsearch] = {t.points.data() + offset + 1, xval + N * k, waux + N * k, this_scale[tr],
                           t.neighbours[offset], 0};
      search_at[nsearch++] = int16_t(k * S + tr);
    }
  }
  iq_best_neighbours(N, nullptr, searches, nsearch);
  // The chosen entry's levels, from its point (bits per level: 2 for groups of 8, else 3).
  constexpr int bits = N == 8 ? 2 : 3;
  for (int s = 0; s < nsearch; ++s) {
    const int k = search_at[s] / S, tr = search_at[s] % S;
    const int u = searches[s].points[searches[s].best];
    for (int e = 0; e < N; ++e) levels[(N * k + e) * S + tr] = (u >> bits * e) & ((1 << bits) - 1);
  }
  iq_trial_sums(trials, n, weight, xval, levels, sumqx, sumq2);
  float best = 0;
  int won = -1;
  for (int tr = 0; tr < trials; ++tr) {
    if (sumq2[tr] > 0 && sumqx[tr] * sumqx[tr] > best * sumq2[tr]) {
      scale = sumqx[tr] / sumq2[tr];
      best = scale * sumqx[tr];
      won = tr;
    }
  }
  if (won >= 0) {
    for (int i = 0; i < n; ++i) L[i] = int8_t(levels[i * S + won]);
    for (int k = 0; k < n / N; ++k) on_grid[k] = ok[k][won];
  }
  return won;
}

}  // namespace amn::ggml::quant
