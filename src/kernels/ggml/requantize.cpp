// Re-encoding with a reference's scales (requantize.h): the legacy, K, IQ4, ternary, FP4,
// Q1_0 / Q2_0 blocks here, the grid types in requantize_iq.cpp, and the table of both.
// Every value is computed as the type's dequantizer computes it (dequant_*.cpp: the
// same F32 operations in the same order), so that the code of G's value is found exactly.
#include "kernels/ggml/requantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/quantize.h"

namespace amn::ggml {
namespace {

// A code and the distance of its value from the input.
struct Near {
  int code;
  float err;
};

// The code in [first, last] whose value is nearest x (the lowest among equals).
template <class Value>
Near nearest_of(float x, int first, int last, Value value) {
  Near best{first, std::fabs(value(first) - x)};
  for (int c = first + 1; c <= last; ++c) {
    const float e = std::fabs(value(c) - x);
    if (e < best.err) best = {c, e};
  }
  return best;
}

// The same, for codes whose value grows (or falls) linearly: the nearest is within one
// of the rounded `guess` ((x - offset) / step); two each side leave room for the guess's
// own rounding. A NaN guess (a zero step) starts at `lo`.
template <class Value>
Near nearest_linear(float x, int lo, int hi, float guess, Value value) {
  int q = lo;
  if (!std::isnan(guess)) q = int(std::clamp(std::nearbyint(guess), float(lo), float(hi)));
  return nearest_of(x, std::max(lo, q - 2), std::min(hi, q + 2), value);
}

// Whether `n` replaces G's code, whose value is g: only when strictly nearer x (so G's
// code stays on a tie, a zero scale, a NaN input).
bool nearer(const Near& n, float x, float g) { return n.err < std::fabs(g - x); }

// Bits [shift, shift + width) of `field` set to v.
template <class T>
void put_bits(T& field, int shift, int width, unsigned v) {
  const unsigned mask = ((1u << width) - 1) << shift;
  field = T((field & ~mask) | ((v << shift) & mask));
}

template <class Block>
void store(uint8_t* out, const Block& b) {
  std::memcpy(out, &b, sizeof b);
}

// ---- the legacy blocks of 32 (dequant_legacy.cpp) ----

// Element j's 4 low bits: the low nibble of qs[j % 16] for j < 16, the high one after.
template <class Block>
void put_nibble(Block& b, int j, int q) {
  put_bits(b.qs[j % 16], 4 * (j / 16), 4, unsigned(q));
}

void requantize_q4_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q4_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_linear(x[j], 0, 15, x[j] / d + 8.0f, [d](int q) { return float(q - 8) * d; });
    if (nearer(n, x[j], g[j])) put_nibble(b, j, n.code);
  }
  store(out, b);
}

void requantize_q4_1(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q4_1>(ref, 0);
  const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_linear(x[j], 0, 15, (x[j] - m) / d, [d, m](int q) { return float(q) * d + m; });
    if (nearer(n, x[j], g[j])) put_nibble(b, j, n.code);
  }
  store(out, b);
}

// Q5_0 / Q5_1: the low 4 bits as Q4_0's, the 5th bit of element j at bit j of qh.
template <class Block>
void put_q5(Block& b, int j, int q) {
  put_nibble(b, j, q & 0xF);
  put_bits(b.qh[j / 8], j % 8, 1, unsigned(q >> 4));
}

void requantize_q5_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q5_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_linear(x[j], 0, 31, x[j] / d + 16.0f, [d](int c) { return float(c - 16) * d; });
    if (nearer(n, x[j], g[j])) put_q5(b, j, n.code);
  }
  store(out, b);
}

void requantize_q5_1(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q5_1>(ref, 0);
  const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_linear(x[j], 0, 31, (x[j] - m) / d, [d, m](int c) { return float(c) * d + m; });
    if (nearer(n, x[j], g[j])) put_q5(b, j, n.code);
  }
  store(out, b);
}

void requantize_q8_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q8_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_linear(x[j], -128, 127, x[j] / d, [d](int c) { return float(c) * d; });
    if (nearer(n, x[j], g[j])) b.qs[j] = int8_t(n.code);
  }
  store(out, b);
}

// ---- the K-quants' super-blocks of 256 (dequant_k.cpp) ----

void requantize_q2_k(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q2_K>(ref, 0);
  const float d = fp16_to_f32(b.d), min = fp16_to_f32(b.dmin);
  int is = 0;
  for (int n = 0; n < QK_K; n += 128) {
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = b.scales[is++];
        const float dl = d * float(sc & 0xF), ml = min * float(sc >> 4);
        for (int l = 0; l < 16; ++l) {
          const int e = n + 32 * j + 16 * half + l;
          const Near q = nearest_linear(x[e], 0, 3, (x[e] + ml) / dl, [dl, ml](int c) { return dl * float(c) - ml; });
          if (nearer(q, x[e], g[e])) put_bits(b.qs[n / 4 + 16 * half + l], 2 * j, 2, unsigned(q.code));
        }
      }
    }
  }
  store(out, b);
}

void requantize_q3_k(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q3_K>(ref, 0);
  const float d_all = fp16_to_f32(b.d);
  int8_t scales[16];
  unpack_q3_k_scales(b.scales, scales);
  int is = 0;
  for (int n = 0; n < QK_K; n += 128) {
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d_all * float(scales[is++] - 32);
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          // L = q + 4 in 0..7: its low 2 bits in qs, "no -4" (L >= 4) in hmask.
          const int e = n + 32 * j + l;
          const Near q = nearest_linear(x[e], 0, 7, x[e] / dl + 4.0f, [dl](int c) { return dl * float(c - 4); });
          if (!nearer(q, x[e], g[e])) continue;
          put_bits(b.qs[n / 4 + l], 2 * j, 2, unsigned(q.code & 3));
          put_bits(b.hmask[l], 4 * (n / 128) + j, 1, unsigned(q.code >> 2));
        }
      }
    }
  }
  store(out, b);
}

// Q4_K (bits 4) and Q5_K (bits 5): sub-block s of 32 is d * scale * q - dmin * min.
template <class Block, int kBits>
void requantize_q45_k(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<Block>(ref, 0);
  const float d = fp16_to_f32(b.d), min = fp16_to_f32(b.dmin);
  for (int s = 0; s < 8; ++s) {
    uint8_t sc, m;
    get_scale_min_k4(s, b.scales, &sc, &m);
    const float dl = d * float(sc), ml = min * float(m);
    for (int l = 0; l < 32; ++l) {
      const int e = 32 * s + l;
      const Near q = nearest_linear(x[e], 0, (1 << kBits) - 1, (x[e] + ml) / dl, [dl, ml](int c) { return dl * float(c) - ml; });
      if (!nearer(q, x[e], g[e])) continue;
      put_bits(b.qs[32 * (s / 2) + l], 4 * (s % 2), 4, unsigned(q.code & 0xF));
      if constexpr (kBits == 5) put_bits(b.qh[l], s, 1, unsigned(q.code >> 4));
    }
  }
  store(out, b);
}

void requantize_q6_k(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q6_K>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int n = 0; n < 2; ++n) {
    uint8_t* ql = b.ql + 64 * n;
    uint8_t* qh = b.qh + 32 * n;
    const int8_t* sc = b.scales + 8 * n;
    for (int l = 0; l < 32; ++l) {
      // Quarter k of the 128: ql[l + 32 * (k % 2)], nibble k / 2; qh[l] bits 2k.
      for (int k = 0; k < 4; ++k) {
        const int e = 128 * n + l + 32 * k;
        const float dl = d * float(sc[l / 16 + 2 * k]);
        const Near q = nearest_linear(x[e], 0, 63, x[e] / dl + 32.0f, [dl](int c) { return dl * float(int8_t(c - 32)); });
        if (!nearer(q, x[e], g[e])) continue;
        put_bits(ql[l + 32 * (k % 2)], 4 * (k / 2), 4, unsigned(q.code & 0xF));
        put_bits(qh[l], 2 * k, 2, unsigned(q.code >> 4));
      }
    }
  }
  store(out, b);
}

// ---- IQ4: a 16-level table (dequant_iq.cpp) ----

Near nearest_iq4(float v, float dl) {
  return nearest_of(v, 0, 15, [dl](int c) { return dl * float(kvalues_iq4nl[c]); });
}

void requantize_iq4_nl(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq4_nl>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_iq4(x[j], d);
    if (nearer(n, x[j], g[j])) put_nibble(b, j, n.code);
  }
  store(out, b);
}

void requantize_iq4_xs(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_iq4_xs>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int ib = 0; ib < QK_K / 32; ++ib) {
    const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b.scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * float(ls - 32);
    for (int j = 0; j < 32; ++j) {
      const int e = 32 * ib + j;
      const Near n = nearest_iq4(x[e], dl);
      if (nearer(n, x[e], g[e])) put_bits(b.qs[16 * ib + j % 16], 4 * (j / 16), 4, unsigned(n.code));
    }
  }
  store(out, b);
}

// ---- ternary, FP4, Q1_0 / Q2_0 (dequant_other.cpp) ----

// The trit (0, 1, 2 for -1, 0, +1) nearest v at scale d. ggml never writes TQ2_0's code
// 3 (+2), so neither do we (but G's own 3 stays where nothing is nearer).
Near nearest_trit(float v, float d) {
  return nearest_linear(v, 0, 2, v / d + 1.0f, [d](int c) { return float(c - 1) * d; });
}

// TQ1_0's trit n of a packed byte, as dequantize_tq1_0 reads it.
int packed_trit(uint8_t packed, int n) {
  constexpr uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};
  return (uint16_t(uint8_t(packed * pow3[n])) * 3) >> 8;
}

// n trits, the first most significant, as a base-3 fraction of 256 rounded up: the
// packing of quantize_tq.cpp's pack_trits (ggml's quantize_row_tq1_0_ref).
uint8_t pack_trits(const int* t, size_t stride, int n, bool shift_once) {
  uint8_t q = 0;
  for (int k = 0; k < n; ++k) q = uint8_t(q * 3 + t[k * stride]);
  if (shift_once) q = uint8_t(q * 3);
  return uint8_t((uint16_t(q) * 256 + (243 - 1)) / 243);
}

// A byte of `n` trits (elements e, e + stride, ...) is packed again only when one of
// them changes, so a byte stays G's where its trits do.
void requantize_tq1_byte(const float* x, const float* g, float d, uint8_t& byte, size_t stride, int n, bool shift_once) {
  int t[5];
  bool changed = false;
  for (int k = 0; k < n; ++k) {
    const size_t e = k * stride;
    t[k] = packed_trit(byte, k);
    const Near q = nearest_trit(x[e], d);
    if (nearer(q, x[e], g[e]) && q.code != t[k]) {
      t[k] = q.code;
      changed = true;
    }
  }
  if (changed) byte = pack_trits(t, 1, n, shift_once);
}

void requantize_tq1_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_tq1_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  // The element order of dequantize_tq1_0: 5 x 32 per run of 32 bytes, 5 x 16, 4 x 4.
  constexpr size_t kQs = sizeof(b.qs), kQh = sizeof(b.qh);
  size_t e = 0;
  for (size_t j = 0; j < kQs - kQs % 32; j += 32, e += 5 * 32) {
    for (size_t m = 0; m < 32; ++m) requantize_tq1_byte(x + e + m, g + e + m, d, b.qs[j + m], 32, 5, false);
  }
  for (size_t j = kQs - kQs % 32; j < kQs; j += 16, e += 5 * 16) {
    for (size_t m = 0; m < 16; ++m) requantize_tq1_byte(x + e + m, g + e + m, d, b.qs[j + m], 16, 5, false);
  }
  for (size_t j = 0; j < kQh; ++j) requantize_tq1_byte(x + e + j, g + e + j, d, b.qh[j], kQh, 4, true);
  store(out, b);
}

void requantize_tq2_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_tq2_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (size_t j = 0; j < sizeof(b.qs); j += 32) {
    for (size_t l = 0; l < 4; ++l) {
      for (size_t m = 0; m < 32; ++m) {
        const size_t e = 4 * j + 32 * l + m;
        const Near q = nearest_trit(x[e], d);
        if (nearer(q, x[e], g[e])) put_bits(b.qs[j + m], int(2 * l), 2, unsigned(q.code));
      }
    }
  }
  store(out, b);
}

Near nearest_fp4(float v, float d) {
  return nearest_of(v, 0, 15, [d](int c) { return float(kvalues_fp4[c]) * d; });
}

void requantize_mxfp4(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_mxfp4>(ref, 0);
  const float d = e8m0_to_f32_half(b.e);
  for (int j = 0; j < 32; ++j) {
    const Near n = nearest_fp4(x[j], d);
    if (nearer(n, x[j], g[j])) put_nibble(b, j, n.code);
  }
  store(out, b);
}

void requantize_nvfp4(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_nvfp4>(ref, 0);
  for (int s = 0; s < 4; ++s) {
    const float d = ue4m3_to_f32_half(b.d[s]);
    for (int j = 0; j < 16; ++j) {
      const int e = 16 * s + j;
      const Near n = nearest_fp4(x[e], d);
      if (nearer(n, x[e], g[e])) put_bits(b.qs[8 * s + j % 8], 4 * (j / 8), 4, unsigned(n.code));
    }
  }
  store(out, b);
}

// A set bit is +d, a clear one -d.
void requantize_q1_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q1_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 128; ++j) {
    const Near n = nearest_of(x[j], 0, 1, [d](int c) { return c ? d : -d; });
    if (nearer(n, x[j], g[j])) put_bits(b.qs[j / 8], j % 8, 1, unsigned(n.code));
  }
  store(out, b);
}

void requantize_q2_0(const float* x, const float* g, const uint8_t* ref, uint8_t* out) {
  auto b = load_block<block_q2_0>(ref, 0);
  const float d = fp16_to_f32(b.d);
  for (int j = 0; j < 64; ++j) {
    const Near n = nearest_linear(x[j], 0, 3, x[j] / d + 1.0f, [d](int c) { return float(c - 1) * d; });
    if (nearer(n, x[j], g[j])) put_bits(b.qs[j / 4], 2 * (j % 4), 2, unsigned(n.code));
  }
  store(out, b);
}

struct Requantizer {
  GgmlType type;
  RequantizeBlockFn fn;
};

// Every type quantize.cpp's table has but F16 and BF16 (no scales: converted as they are).
constexpr Requantizer kRequantizers[] = {
    {GgmlType::Q4_0, requantize_q4_0},
    {GgmlType::Q4_1, requantize_q4_1},
    {GgmlType::Q5_0, requantize_q5_0},
    {GgmlType::Q5_1, requantize_q5_1},
    {GgmlType::Q8_0, requantize_q8_0},
    {GgmlType::Q2_K, requantize_q2_k},
    {GgmlType::Q3_K, requantize_q3_k},
    {GgmlType::Q4_K, requantize_q45_k<block_q4_K, 4>},
    {GgmlType::Q5_K, requantize_q45_k<block_q5_K, 5>},
    {GgmlType::Q6_K, requantize_q6_k},
    {GgmlType::IQ4_NL, requantize_iq4_nl},
    {GgmlType::IQ4_XS, requantize_iq4_xs},
    {GgmlType::IQ3_S, requantize_iq3_s},
    {GgmlType::IQ3_XXS, requantize_iq3_xxs},
    {GgmlType::IQ2_XXS, requantize_iq2_xxs},
    {GgmlType::IQ2_XS, requantize_iq2_xs},
    {GgmlType::IQ2_S, requantize_iq2_s},
    {GgmlType::IQ1_S, requantize_iq1_s},
    {GgmlType::IQ1_M, requantize_iq1_m},
    {GgmlType::TQ1_0, requantize_tq1_0},
    {GgmlType::TQ2_0, requantize_tq2_0},
    {GgmlType::MXFP4, requantize_mxfp4},
    {GgmlType::NVFP4, requantize_nvfp4},
    {GgmlType::Q1_0, requantize_q1_0},
    {GgmlType::Q2_0, requantize_q2_0},
};

RequantizeBlockFn requantizer(GgmlType type) {
  for (const Requantizer& r : kRequantizers) {
    if (r.type == type) return r.fn;
  }
  return nullptr;
}

}  // namespace
}  // namespace amn::ggml

namespace amn {

bool ggml_can_requantize(GgmlType type) {
  return type == GgmlType::F16 || type == GgmlType::BF16 || ggml::requantizer(type) != nullptr;
}

bool requantize_ggml(GgmlType type, const float* src, const uint8_t* ref, uint8_t* dst, size_t blocks) {
  if (type == GgmlType::F16 || type == GgmlType::BF16) {
    return blocks == 0 || quantize_ggml(type, src, dst, 1, static_cast<int64_t>(blocks), nullptr) != 0;
  }
  const ggml::RequantizeBlockFn fn = ggml::requantizer(type);
  if (!fn) return false;
  const GgmlTraits& t = *ggml_traits(type);
  float g[ggml::QK_K];  // G's values: its codes stay unless another is strictly nearer
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* r = ref + i * t.block_bytes;
    dequantize_ggml(type, r, g, 1);
    fn(src + i * t.block_elements, g, r, dst + i * t.block_bytes);
  }
  return true;
}

}  // namespace amn
