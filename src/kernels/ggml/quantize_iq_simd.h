// The neighbour search of ggml's IQ1 / IQ2 / IQ3 encoders (iq1_find_best_neighbour2,
// iq2_find_best_neighbour, iq3_find_best_neighbour) with the candidates in vector lanes,
// and the IQ2 / IQ3 trial sweeps with the trials in lanes (quantize_iq_simd.cpp).
#pragma once
#include <cstdint>

namespace amn::ggml {

// The index (0 .. n-1) of the first of the n candidate points points[0..n) with the
// smallest d2 = sum over i < group of weight[i] * (scale * q - xval[i])^2 below FLT_MAX,
// or 0 when none is below it (group 8: 2 bits a level, group 4: 3 bits; q = 2 level + 1,
// or xg[level] where xg is given: IQ1's iq1_find_best_neighbour2, group 8).
// Each d2 is summed in ggml's order, i ascending, no multiply-add fused: the reference's,
// bit for bit. Reads points up to the next multiple of the vector width past n (the
// table pads its array).
int iq_best_neighbour(int group, const uint16_t* points, int n, const float* xval, const float* weight, float scale,
                      const float* xg = nullptr);

// Several such searches in one call (IQ2 / IQ3 sweeps: every off-grid group of every
// trial): each gets `best` = iq_best_neighbour of its fields.
struct IqNeighbourSearch {
  const uint16_t* points;
  const float* xval;
  const float* weight;
  float scale;
  int n;
  int best;
};
void iq_best_neighbours(int group, const float* xg, IqNeighbourSearch* searches, int count);

// The trial-scale sweeps of the IQ2 / IQ3 searches with the trials in vector lanes. Rows
// of kIqTrialStride int32, lane t trial t (trials <= kIqTrialStride).
inline constexpr int kIqTrialStride = 32;

// For n elements (n / group groups) and trials inverse scales id[0..trials):
// levels[i * stride + t] = clamp(nearest_int(0.5f * (id[t] * xval[i] - 1)), 0, nlevels - 1)
// (the reference's level, bit for bit) and points[k * stride + t] the point of group k's
// levels (bits per level: 2 for group 8, 3 for group 4), lowest element first.
void iq_trial_levels(int trials, const float* id, int n, const float* xval, int nlevels, int group, int32_t* levels,
                     int32_t* points);

// sumqx[t] and sumq2[t] of the reference's sums over the n elements with q = 2 level + 1:
// sumqx += weight[i] * xval[i] * q, sumq2 += weight[i] * q * q, i ascending.
void iq_trial_sums(int trials, int n, const float* weight, const float* xval, const int32_t* levels, float* sumqx,
                   float* sumq2);

// IQ1_S's split search (encode_iq1_s) over the prefix sums sumx, sumw (33 values each,
// readable up to 33 + 64): every (i1, i2, shift) scored in lanes as the reference scores
// it, the reference's sequential choice kept. Returns the candidate chosen last,
// (i1 * 33 + i2) * 2 + (shift == 1), with its scale, or -1 (none).
int iq1s_best_split(const float* sumx, const float* sumw, const float* xp, const float* xm, float* scale);

// IQ1_M's split search (encode_iq1_m) on a block of 16 with its sorted order idx:
// returns (i1 * 17 + i2) * 4 + k of the candidate chosen last, with its scale, or -1.
int iq1m_best_split(const float* xb, const float* weight, const int* idx, const float* xp, const float* xm,
                    float* scale);

// IQ1's sort_order (the stable ascending order of n <= 32 values, n a multiple of 4) from
// counts in lanes. False, nothing written, when a value is NaN.
bool iq_sort_order(const float* x, int n, int* idx);

}  // namespace amn::ggml
