// The search tables ggml's IQ1/IQ2/IQ3 encoders use, which ggml builds at run time
// (iq2xs_init_impl, iq3xs_init_impl in ggml-quants.c; ggml_quantize_init calls them). We
// build them from the dequantizers' grids (grids_iq*.cpp), once per kind, on first use
// (thread-safe: function-local statics).
//
// A point is a group of 8 (IQ1, IQ2) or 4 (IQ3) levels l, packed 2 (IQ1, IQ2) or 3 (IQ3)
// bits each, lowest element first: the index u the encoders compute. For each grid entry
// `grid` holds its levels as the bytes 2l + 1 (ggml's "the_grid"). `map[u]` is the grid
// index of u when u is on the grid; otherwise -(offset + 1), where neighbours[offset] is a
// count n followed by n grid indices: the entries of the nwant smallest squared distances
// to u (in the 2l + 1 units), ordered by distance, then index.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cast.h"
#include "kernels/ggml/quantize_iq_simd.h"

namespace amn::ggml::quant {

struct IqTable {
  std::vector<uint64_t> grid;  // IQ3: the 4 bytes in the low half
  std::vector<int> map;
  std::vector<uint16_t> neighbours;
  // Parallel to neighbours: each listed grid entry's point u (0 in the count slots), then
  // kPointsPad zeros, so that vector loads may run past the last list.
  std::vector<uint16_t> points;
  static constexpr int kPointsPad = 64;

  // The neighbour list (count first) of an off-grid point u.
  const uint16_t* neighbours_of(int u) const { return neighbours.data() + (-map[u] - 1); }
  // Byte i of grid entry g, as int8 (ggml reads the_grid through int8_t*).
  int8_t at(int g, int i) const { return int8_t(grid[g] >> (8 * i)); }
};

enum class IqGrid { Iq2xxs, Iq2xs, Iq2s, Iq1s, Iq3xxs, Iq3s };

// The table for a grid (IQ1_S and IQ1_M share Iq1s). Built on first call.
const IqTable& iq_table(IqGrid grid);

// iq2_find_best_neighbour (N = 8) / iq3_find_best_neighbour (N = 4): among the neighbour
// list, the first entry with the smallest sum of weight * (scale * q - xval)^2 (q the
// byte 2l + 1); writes its levels to L and returns its index.
template <int N>
int find_best_neighbour(const IqTable& t, const uint16_t* neighbours, const float* xval, const float* weight,
                        float scale, int8_t* L) {
  const int num_neighbors = neighbours[0];
  float best_d2 = 3.40282347e+38f;  // FLT_MAX
  int grid_index = neighbours[1];   // ggml asserts a strict improvement happens
  for (int j = 1; j <= num_neighbors; ++j) {
    float d2 = 0;
    for (int i = 0; i < N; ++i) {
      const float q = t.at(neighbours[j], i);
      const float diff = scale * q - xval[i];
      d2 += weight[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      grid_index = neighbours[j];
    }
  }
  for (int i = 0; i < N; ++i) L[i] = int8_t((t.at(grid_index, i) - 1) / 2);
  return grid_index;
}

// find_best_neighbour<N> for the off-grid point u, the candidates in vector lanes
// (iq_best_neighbour: each d2 the reference's, bit for bit, the same one kept). With xg,
// IQ1's iq1_find_best_neighbour2 (q = xg[level]).
template <int N>
int find_best_neighbour_fast(const IqTable& t, int u, const float* xval, const float* weight, float scale, int8_t* L,
                             const float* xg = nullptr) {
  const int offset = -t.map[u] - 1;
  const uint16_t* neighbours = t.neighbours.data() + offset;
  const int best = iq_best_neighbour(N, t.points.data() + offset + 1, neighbours[0], xval, weight, scale, xg);
  const int grid_index = neighbours[1 + best];
  for (int i = 0; i < N; ++i) L[i] = int8_t((t.at(grid_index, i) - 1) / 2);
  return grid_index;
}

// The neighbour search the encoders call: the vector one, or the reference's loop under
// AMN_FORCE_IMPL=scalar (the restatement the vector one is tested against).
template <int N>
int best_neighbour(const IqTable& t, int u, const float* xval, const float* weight, float scale, int8_t* L) {
  if (reference_impl_forced()) return find_best_neighbour<N>(t, t.neighbours_of(u), xval, weight, scale, L);
  return find_best_neighbour_fast<N>(t, u, xval, weight, scale, L);
}

}  // namespace amn::ggml::quant
