// iq2xs_init_impl / iq3xs_init_impl (ggml-quants.c, commit in blocks.h), from our grids.
// The grids' byte values are mapped back to levels (the compact kgrid_* tables ggml
// carries are exactly these levels: checked when the tables were written, and by
// tests_native/test_ggml_quantize_iq.cpp through the encoders' bytes).
#include "kernels/ggml/quantize_iq_tables.h"

#include <array>
#include <climits>

#include "kernels/ggml/blocks.h"

namespace amn::ggml::quant {
namespace {

struct Spec {
  int grid_size;
  int group;         // elements per grid entry: 8 or 4
  int bits;          // bits per level in the point index: 2 or 3
  int map_size;      // ggml's kmap_size
  int nwant;         // distinct distances kept per off-grid point
  std::array<int, 8> levels;  // the grid's byte values, level 0 first (int8 for IQ1)
  int nlevels;
};

Spec spec_of(IqGrid g) {
  switch (g) {
    case IqGrid::Iq2xxs: return {256, 8, 2, 43692, 2, {8, 25, 43}, 3};
    case IqGrid::Iq2xs: return {512, 8, 2, 43692, 2, {8, 25, 43}, 3};
    case IqGrid::Iq2s: return {1024, 8, 2, 43692, 1, {8, 25, 43}, 3};
    case IqGrid::Iq1s: return {2048, 8, 2, 43692, 3, {-1, 0, 1}, 3};
    case IqGrid::Iq3xxs: return {256, 4, 3, 4096, 2, {4, 12, 20, 28, 36, 44, 52, 62}, 8};
    case IqGrid::Iq3s: return {512, 4, 3, 4096, 3, {1, 3, 5, 7, 9, 11, 13, 15}, 8};
  }
  return {};
}

uint64_t grid_entry(IqGrid g, int k) {
  switch (g) {
    case IqGrid::Iq2xxs: return iq2xxs_grid[k];
    case IqGrid::Iq2xs: return iq2xs_grid[k];
    case IqGrid::Iq2s: return iq2s_grid[k];
    case IqGrid::Iq1s: return iq1s_grid[k];
    case IqGrid::Iq3xxs: return iq3xxs_grid[k];
    case IqGrid::Iq3s: return iq3s_grid[k];
  }
  return 0;
}

int level_of(const Spec& s, int8_t byte) {
  for (int l = 0; l < s.nlevels; ++l) {
    if (int8_t(s.levels[l]) == byte) return l;
  }
  return 0;  // not reached: every grid byte is one of the levels
}

IqTable build(IqGrid g) {
  const Spec s = spec_of(g);
  IqTable t;
  t.grid.resize(s.grid_size);
  t.map.assign(s.map_size, -1);
  std::vector<uint16_t> point_of(s.grid_size);
  for (int k = 0; k < s.grid_size; ++k) {
    const uint64_t e = grid_entry(g, k);
    uint64_t the = 0;
    int u = 0;
    for (int i = 0; i < s.group; ++i) {
      const int l = level_of(s, int8_t(e >> (8 * i)));
      the |= uint64_t(2 * l + 1) << (8 * i);
      u |= l << (s.bits * i);
    }
    t.grid[k] = the;
    t.map[u] = k;
    point_of[k] = uint16_t(u);
  }
  // For every off-grid point, ggml sorts all grid entries by (squared distance, index)
  // and keeps those within the nwant smallest distinct distances. The distances are
  // small integers, so the same list comes from taking, for each of those distances in
  // increasing order, the entries at that distance in index order.
  std::vector<int> dist2(s.grid_size);
  const int mask = (1 << s.bits) - 1;
  for (int u = 0; u < s.map_size; ++u) {
    if (t.map[u] >= 0) continue;
    for (int j = 0; j < s.grid_size; ++j) {
      int d2 = 0;
      for (int k = 0; k < s.group; ++k) {
        const int diff = t.at(j, k) - (2 * ((u >> (s.bits * k)) & mask) + 1);
        d2 += diff * diff;
      }
      dist2[j] = d2;
    }
    const size_t start = t.neighbours.size();
    t.map[u] = -int(start + 1);
    t.neighbours.push_back(0);
    int last = -1;  // the distance taken last
    for (int have = 0; have < s.nwant; ++have) {
      int next = INT_MAX;
      for (int d2 : dist2) {
        if (d2 > last && d2 < next) next = d2;
      }
      if (next == INT_MAX) break;
      for (int j = 0; j < s.grid_size; ++j) {
        if (dist2[j] == next) t.neighbours.push_back(uint16_t(j));
      }
      last = next;
    }
    t.neighbours[start] = uint16_t(t.neighbours.size() - start - 1);
  }
  t.points.assign(t.neighbours.size() + IqTable::kPointsPad, 0);
  for (size_t k = 0; k < t.neighbours.size(); k += t.neighbours[k] + 1) {
    for (int j = 1; j <= t.neighbours[k]; ++j) t.points[k + j] = point_of[t.neighbours[k + j]];
  }
  return t;
}

}  // namespace

const IqTable& iq_table(IqGrid grid) {
  switch (grid) {
    case IqGrid::Iq2xxs: { static const IqTable t = build(IqGrid::Iq2xxs); return t; }
    case IqGrid::Iq2xs: { static const IqTable t = build(IqGrid::Iq2xs); return t; }
    case IqGrid::Iq2s: { static const IqTable t = build(IqGrid::Iq2s); return t; }
    case IqGrid::Iq1s: { static const IqTable t = build(IqGrid::Iq1s); return t; }
    case IqGrid::Iq3xxs: { static const IqTable t = build(IqGrid::Iq3xxs); return t; }
    case IqGrid::Iq3s: break;
  }
  static const IqTable t = build(IqGrid::Iq3s);
  return t;
}

}  // namespace amn::ggml::quant
