// Re-encoding the grid types with a reference's scales (requantize.h): for each group of
// 8 (or 4) elements the grid entry, and signs, with the least squared error, every value
// computed as dequant_iq.cpp computes it (db * magnitude, negated by its sign bit;
// dl * (grid value + delta) for IQ1). The error is summed in double: the difference of
// two floats is never rounded to zero there, so only an exact match scores 0. A group
// is written only when its choice is strictly nearer than G's own values (`g`), so G's
// entries stay on a tie (requantize.h).
#include <bit>
#include <cstring>
#include <limits>

#include "kernels/ggml/blocks.h"
#include "kernels/ggml/requantize.h"

namespace amn::ggml {
namespace {

double squared(float x, float v) {
  const double e = double(x) - double(v);
  return e * e;
}

// The signs of n elements of magnitudes `mag` nearest x: each the nearer one (positive
// on a tie). `signs` bit j set = element j negated. Also the cheapest single flip, for a
// parity the signs must keep.
struct Signs {
  double err = 0;
  uint8_t signs = 0;
  double flip_cost = std::numeric_limits<double>::infinity();
  int flip = 0;
  int parity() const { return std::popcount(unsigned(signs)) & 1; }
  // The error with the negation count's parity forced to p (one sign flipped if needed).
  double err_with(int p) const { return parity() == p ? err : err + flip_cost; }
  uint8_t signs_with(int p) const { return parity() == p ? signs : uint8_t(signs ^ (1u << flip)); }
};

Signs nearest_signs(const float* x, const float* mag, int n) {
  Signs s;
  for (int j = 0; j < n; ++j) {
    const double pos = squared(x[j], mag[j]), neg = squared(x[j], -mag[j]);
    const bool negate = neg < pos;
    s.err += negate ? neg : pos;
    if (negate) s.signs = uint8_t(s.signs | 1u << j);
    const double cost = negate ? pos - neg : neg - pos;
    if (cost < s.flip_cost) {
      s.flip_cost = cost;
      s.flip = j;
    }
  }
  return s;
}

// The best of a grid's entries for 8 elements at scale db, with signs: 7 stored bits
// and an even number of negations (IQ2_XXS, IQ2_XS), or 8 free bits (IQ2_S).
struct Choice {
  int index = 0;
  uint8_t signs = 0;
  double err = std::numeric_limits<double>::infinity();
};

Choice nearest_grid8(const float* x, float db, const uint64_t* grid, int entries, bool even_parity) {
  Choice best;
  for (int e = 0; e < entries; ++e) {
    float mag[8];
    for (int j = 0; j < 8; ++j) mag[j] = db * float(grid_byte(grid[e], j));
    const Signs s = nearest_signs(x, mag, 8);
    const double err = even_parity ? s.err_with(0) : s.err;
    if (err < best.err) best = {e, even_parity ? s.signs_with(0) : s.signs, err};
  }
  return best;
}

// Two halves of 4 from a grid of 4-element entries, sharing one sign byte: IQ3_XXS
// (even parity over the 8) and IQ3_S (free signs). Each half's best entry for either
// parity of its negations, then the better pair of equal parities.
struct Pair {
  int index[2] = {0, 0};
  uint8_t signs = 0;
  double err = 0;
};

Pair nearest_grid4x2(const float* x, float db, const uint32_t* grid, int entries, bool even_parity) {
  double err[2][2];  // [half][parity]
  int index[2][2] = {};
  uint8_t signs[2][2] = {};
  for (int h = 0; h < 2; ++h) {
    err[h][0] = err[h][1] = std::numeric_limits<double>::infinity();
    for (int e = 0; e < entries; ++e) {
      float mag[4];
      for (int j = 0; j < 4; ++j) mag[j] = db * float(grid_byte(grid[e], j));
      const Signs s = nearest_signs(x + 4 * h, mag, 4);
      for (int p = 0; p < 2; ++p) {
        // Free signs: both "parities" are the free optimum.
        const double e_p = even_parity ? s.err_with(p) : s.err;
        if (e_p < err[h][p]) {
          err[h][p] = e_p;
          index[h][p] = e;
          signs[h][p] = even_parity ? s.signs_with(p) : s.signs;
        }
      }
    }
  }
  const int p = err[0][1] + err[1][1] < err[0][0] + err[1][0] ? 1 : 0;
  return {{index[0][p], index[1][p]}, uint8_t(signs[0][p] | signs[1][p] << 4), err[0][p] + err[1][p]};
}

// IQ1: the entry (and, for IQ1_M, the delta sign) whose dl * (g + delta) is nearest.
struct Iq1Choice {
  int index = 0;
  bool negative_delta = false;
  double err = std::numeric_limits<double>::infinity();
};

Iq1Choice nearest_iq1(const float* x, float dl, const float* deltas, int delta_count) {
  Iq1Choice best;
  for (int e = 0; e < 2048; ++e) {
    for (int k = 0; k < delta_count; ++k) {
      double err = 0;
      for (int j = 0; j < 8; ++j) err += squared(x[j], dl * (float(int8_t(grid_byte(iq1s_grid[e], j))) + deltas[k]));
      if (err < best.err) best = {e, k == 1, err};
    }
  }
  return best;
}

template <class Block>
void store(uint8_t* out, const Block& b) {
  std::memcpy(out, &b, sizeof b);
}

// G's squared error over n elements.
double g_error(const float* x, const float* g, int n) {
  double err = 0;
  for (int j = 0; j < n; ++j) err += squared(x[j], g[j]);
  return err;
}

template <class T>
void put_bits(T& field, int shift, int width, unsigned v) {
  const unsigned mask = ((1u << width) - 1) << shift;
  field = T((field & ~mask) | ((v << shift) & mask));
}

}  // namespace

void requantize_iq2_xxs(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq2_xxs>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
    uint32_t aux32[2];
    std::memcpy(aux32, b.qs + 4 * ib32, sizeof aux32);
    const float db = d * (0.5f + float(aux32[1] >> 28)) * 0.25f;
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib32 + 8 * l;
      const Choice c = nearest_grid8(x + e, db, iq2xxs_grid, 256, true);
      if (!(c.err < g_error(x + e, g + e, 8))) continue;
      put_bits(aux32[0], 8 * l, 8, unsigned(c.index));
      put_bits(aux32[1], 7 * l, 7, c.signs & 127u);
    }
    std::memcpy(b.qs + 4 * ib32, aux32, sizeof aux32);
  }
  store(out, b);
}

void requantize_iq2_xs(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq2_xs>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
    const float db[2] = {d * (0.5f + float(b.scales[ib32] & 0xf)) * 0.25f, d * (0.5f + float(b.scales[ib32] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib32 + 8 * l;
      const Choice c = nearest_grid8(x + e, db[l / 2], iq2xs_grid, 512, true);
      if (c.err < g_error(x + e, g + e, 8)) b.qs[4 * ib32 + l] = uint16_t(c.index | (c.signs & 127) << 9);
    }
  }
  store(out, b);
}

void requantize_iq2_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq2_s>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
    const float db[2] = {d * (0.5f + float(b.scales[ib32] & 0xf)) * 0.25f, d * (0.5f + float(b.scales[ib32] >> 4)) * 0.25f};
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib32 + 8 * l;
      const Choice c = nearest_grid8(x + e, db[l / 2], iq2s_grid, 1024, false);
      if (!(c.err < g_error(x + e, g + e, 8))) continue;
      b.qs[4 * ib32 + l] = uint8_t(c.index);
      b.qs[QK_K / 8 + 4 * ib32 + l] = c.signs;
      put_bits(b.qh[ib32], 2 * l, 2, unsigned(c.index >> 8));
    }
  }
  store(out, b);
}

void requantize_iq3_xxs(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq3_xxs>(ref, 0);
  const float d = fp16_to_f32(b.d);
  uint8_t* scales_and_signs = b.qs + QK_K / 4;
  for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
    uint32_t aux32;
    std::memcpy(&aux32, scales_and_signs + 4 * ib32, sizeof aux32);
    const float db = d * (0.5f + float(aux32 >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib32 + 8 * l;
      const Pair p = nearest_grid4x2(x + e, db, iq3xxs_grid, 256, true);
      if (!(p.err < g_error(x + e, g + e, 8))) continue;
      b.qs[8 * ib32 + 2 * l + 0] = uint8_t(p.index[0]);
      b.qs[8 * ib32 + 2 * l + 1] = uint8_t(p.index[1]);
      put_bits(aux32, 7 * l, 7, p.signs & 127u);
    }
    std::memcpy(scales_and_signs + 4 * ib32, &aux32, sizeof aux32);
  }
  store(out, b);
}

void requantize_iq3_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq3_s>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib32 = 0; ib32 < QK_K / 32; ++ib32) {
    const float db = d * float(1 + 2 * ((b.scales[ib32 / 2] >> 4 * (ib32 % 2)) & 0xf));
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib32 + 8 * l;
      const Pair p = nearest_grid4x2(x + e, db, iq3s_grid, 512, false);
      if (!(p.err < g_error(x + e, g + e, 8))) continue;
      for (int k = 0; k < 2; ++k) {
        b.qs[8 * ib32 + 2 * l + k] = uint8_t(p.index[k]);
        put_bits(b.qh[ib32], 2 * l + k, 1, unsigned(p.index[k] >> 8));
      }
      b.signs[4 * ib32 + l] = p.signs;
    }
  }
  store(out, b);
}

void requantize_iq1_s(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq1_s>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const float dl = d * float(2 * ((b.qh[ib] >> 12) & 7) + 1);
    const float delta = b.qh[ib] & 0x8000 ? -IQ1S_DELTA : IQ1S_DELTA;  // kept: one per 32, beside the scale
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib + 8 * l;
      const Iq1Choice c = nearest_iq1(x + e, dl, &delta, 1);
      if (!(c.err < g_error(x + e, g + e, 8))) continue;
      b.qs[4 * ib + l] = uint8_t(c.index);
      put_bits(b.qh[ib], 3 * l, 3, unsigned(c.index >> 8));
    }
  }
  store(out, b);
}

void requantize_iq1_m(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq1_m>(ref, 0);
  uint16_t sc[4];
  std::memcpy(sc, b.scales, sizeof sc);
  const float d = fp16_to_f32(iq1_m_scale(sc));
  const float deltas[2] = {IQ1S_DELTA, -IQ1S_DELTA};  // sign bit clear first
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const float dl1 = d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 0x7) + 1);
    const float dl2 = d * float(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 0x7) + 1);
    for (int l = 0; l < 4; ++l) {
      const int e = 32 * ib + 8 * l;
      const Iq1Choice c = nearest_iq1(x + e, l < 2 ? dl1 : dl2, deltas, 2);
      if (!(c.err < g_error(x + e, g + e, 8))) continue;
      b.qs[4 * ib + l] = uint8_t(c.index);
      // Group l: qh byte l / 2, bits 0..2 (even l) or 4..6 (odd) the index's high bits,
      // bit 3 or 7 the delta sign.
      put_bits(b.qh[2 * ib + l / 2], 4 * (l % 2), 4, unsigned(c.index >> 8) | (c.negative_delta ? 8u : 0u));
    }
  }
  store(out, b);
}

}  // namespace amn::ggml
