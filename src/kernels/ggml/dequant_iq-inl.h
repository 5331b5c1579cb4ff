// SIMD dequantizers for the grid types: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M. Compiled per Highway target after dequant_tq-inl.h by dequant_simd.cpp, whose
// DequantizeSimd switch calls them. Bit-exact with the scalar
// references (dequant_iq.cpp): grid rows are fetched with scalar index arithmetic (as
// there) and 8-byte loads, two or four rows to a 16-byte vector; the magnitudes are
// widened exactly to f32 and the float operations are the reference's, in its order,
// on whole vectors:
// - IQ2/IQ3: db * magnitude, negated where the element's sign bit is set, as the
//   reference defines ggml's "* -1.f" (dequant_iq.cpp: the two differ only in a NaN's
//   sign). The sign is applied to the magnitude bytes (StoreSigned), and db * -m is the
//   reference's -(db * m) for every db but NaN, which has its own path;
// - IQ1: dl * (g + delta), where g + delta (g in -1, 0, 1, delta = +-1/8) is exact and
//   is formed as (8g +- 1) * 0.125f, also exact, so that the delta sign can vary per 8
//   lanes inside one vector; the 0.125f goes into dl (StoreIQ1).
// Per-group factors (db, dl) are computed in scalar code exactly as the reference does.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_GGML_DEQUANT_IQ_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_GGML_DEQUANT_IQ_INL_H_
#undef AMN_KERNELS_GGML_DEQUANT_IQ_INL_H_
#else
#define AMN_KERNELS_GGML_DEQUANT_IQ_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/dequant-inl.h"
#include "kernels/ggml/dequant_tq-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

HWY_INLINE uint16_t U16At(const uint8_t* p) {
  uint16_t u;
  std::memcpy(&u, p, 2);
  return u;
}

// Rows a (bytes 0..7) and b (8..15) of a grid of 8-byte entries.
HWY_INLINE V16 Rows8(const uint64_t* grid, unsigned a, unsigned b) {
  const hn::Half<D16> d8;
  const auto* bytes = reinterpret_cast<const uint8_t*>(grid);
  return hn::Combine(D16(), hn::LoadU(d8, bytes + 8 * size_t(b)), hn::LoadU(d8, bytes + 8 * size_t(a)));
}

// Rows a, b, c, e (4 bytes each, in that order) of a grid of 4-byte entries.
HWY_INLINE V16 Rows4(const uint32_t* grid, unsigned a, unsigned b, unsigned c, unsigned e) {
  const hn::Repartition<uint64_t, D16> d64;
  const uint64_t lo = grid[a] | uint64_t(grid[b]) << 32;
  const uint64_t hi = grid[c] | uint64_t(grid[e]) << 32;
  return hn::BitCast(D16(), hn::InterleaveLower(d64, hn::Set(d64, lo), hn::Set(d64, hi)));
}

// The eight bytes of each sign byte: 0xFF where its bit j is set, 0 elsewhere.
alignas(16) static constexpr auto kSignByteMasks = [] {
  struct {
    uint64_t v[256];
  } t{};
  for (int b = 0; b < 256; ++b)
    for (int j = 0; j < 8; ++j) t.v[b] |= uint64_t((b >> j) & 1 ? 0xFF : 0) << (8 * j);
  return t;
}();

// Bytes 0xFF where bit j of `bits` (bits 0..15) is set, 0 elsewhere: two 8-byte rows of
// kSignByteMasks (as the grid rows are fetched), fewer instructions than spreading the
// bits over the lanes and testing them (WASM, 16 Mi elements: IQ2 / IQ3 1.2-1.3x).
HWY_INLINE V16 BitBytes(uint32_t bits) { return Rows8(kSignByteMasks.v, bits & 0xFF, (bits >> 8) & 0xFF); }

// 16 magnitudes m (u8) -> db * m, negated where bit j of `signs` is set: Xor of the f32
// sign bit, exactly the reference's -v (NaN included).
HWY_INLINE void StoreSignedFlip(V16 magnitudes, uint32_t signs, VF db, float* HWY_RESTRICT out) {
  const VF sign_bit = hn::Set(DF(), -0.0f);
  Widen16(magnitudes, 0, [&](size_t k, VF m) {
    const VF flip = hn::IfThenElseZero(BitsMask(signs >> (k * kN)), sign_bit);
    Store(hn::Xor(hn::Mul(db, m), flip), out + k * kN);
  });
}

// The same for magnitudes 1..127 (every IQ2/IQ3 grid byte). With 128-bit vectors (4 f32
// lanes: WASM, NEON, SSE4) the sign is applied to the bytes instead, (m ^ -1) - -1 =
// -m: one negation per 16 elements rather than a select per f32 vector (in cache: WASM
// 1.2-1.3x, SSE4 1.13-1.2x). AVX2 and AVX-512 keep the per-lane flip (a compare or a
// mask register per 8 or 16 lanes), where the byte path measured 3-5 % slower. db * -m is the same float as -(db * m) (rounding is symmetric; m is never 0,
// so no signed zero differs) except when db is NaN, whose sign the reference flips:
// such groups take the per-lane flip (random input only; ggml's quantizers never write
// them).
// A template so that the discarded 128-bit branch is not instantiated on wide targets.
template <size_t N = kN>
HWY_INLINE void StoreSigned(V16 magnitudes, uint32_t signs, float db, float* HWY_RESTRICT out) {
  const VF vdb = hn::Set(DF(), db);
  if constexpr (N > 4) {
    StoreSignedFlip(magnitudes, signs, vdb, out);
  } else {
    if (HWY_UNLIKELY(db != db)) return StoreSignedFlip(magnitudes, signs, vdb, out);
    const V16 negative = BitBytes(signs);
    const V16 q = hn::Sub(hn::Xor(magnitudes, negative), negative);
    Widen16Signed<N>(q, [&](size_t k, VF x) { Store(hn::Mul(vdb, x), out + k * kN); });
  }
}

// ksigns_iq2xs of four 7-bit fields of `packed` (bits 0..27), as one word: bit 8l + j is
// the sign of element j of group l.
HWY_INLINE uint32_t Signs4x7(uint32_t packed) {
  return uint32_t(ksigns_iq2xs[packed & 127]) | uint32_t(ksigns_iq2xs[(packed >> 7) & 127]) << 8 |
         uint32_t(ksigns_iq2xs[(packed >> 14) & 127]) << 16 | uint32_t(ksigns_iq2xs[(packed >> 21) & 127]) << 24;
}

// dequantize_row_iq2_xxs: per 32, db = d * (0.5 + s) * 0.25; four 8-bit grid indices,
// four 7-bit sign fields.
HWY_NOINLINE void DequantIQ2_XXS(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq2_xxs)) {
    const float d = HalfAt(in);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32, out += 32) {
      const uint8_t* q = in + 2 + 8 * ib32;
      const uint32_t aux1 = U32At(q + 4);
      const float db = d * (0.5f + float(aux1 >> 28)) * 0.25f;
      const uint32_t signs = Signs4x7(aux1);
      StoreSigned(Rows8(iq2xxs_grid, q[0], q[1]), signs & 0xFFFF, db, out);
      StoreSigned(Rows8(iq2xxs_grid, q[2], q[3]), signs >> 16, db, out + 16);
    }
  }
}

// dequantize_row_iq2_xs: per 8, a 9-bit grid index and 7 sign bits; per 16 a scale.
HWY_NOINLINE void DequantIQ2_XS(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq2_xs)) {
    const float d = HalfAt(in);
    const uint8_t* scales = in + 66;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32, out += 32) {
      const uint8_t* qs = in + 2 + 8 * ib32;
      const float db0 = d * (0.5f + float(scales[ib32] & 0xf)) * 0.25f;
      const float db1 = d * (0.5f + float(scales[ib32] >> 4)) * 0.25f;
      const unsigned q0 = U16At(qs), q1 = U16At(qs + 2), q2 = U16At(qs + 4), q3 = U16At(qs + 6);
      const uint32_t s01 = uint32_t(ksigns_iq2xs[q0 >> 9]) | uint32_t(ksigns_iq2xs[q1 >> 9]) << 8;
      const uint32_t s23 = uint32_t(ksigns_iq2xs[q2 >> 9]) | uint32_t(ksigns_iq2xs[q3 >> 9]) << 8;
      StoreSigned(Rows8(iq2xs_grid, q0 & 511, q1 & 511), s01, db0, out);
      StoreSigned(Rows8(iq2xs_grid, q2 & 511, q3 & 511), s23, db1, out + 16);
    }
  }
}

// dequantize_row_iq2_s: per 8, a 10-bit grid index (8 bits in qs, 2 in qh) and 8 explicit
// sign bits; per 16 a scale.
HWY_NOINLINE void DequantIQ2_S(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq2_s)) {
    const float d = HalfAt(in);
    const uint8_t* qh = in + 66;
    const uint8_t* scales = in + 74;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32, out += 32) {
      const uint8_t* qs = in + 2 + 4 * ib32;
      const uint32_t signs = U32At(in + 2 + QK_K / 8 + 4 * ib32);
      const float db0 = d * (0.5f + float(scales[ib32] & 0xf)) * 0.25f;
      const float db1 = d * (0.5f + float(scales[ib32] >> 4)) * 0.25f;
      const unsigned h = qh[ib32];
      const unsigned i0 = qs[0] | ((h << 8) & 0x300), i1 = qs[1] | ((h << 6) & 0x300);
      const unsigned i2 = qs[2] | ((h << 4) & 0x300), i3 = qs[3] | ((h << 2) & 0x300);
      StoreSigned(Rows8(iq2s_grid, i0, i1), signs & 0xFFFF, db0, out);
      StoreSigned(Rows8(iq2s_grid, i2, i3), signs >> 16, db1, out + 16);
    }
  }
}

// dequantize_row_iq3_xxs: per 32, db = d * (0.5 + s) * 0.5; eight 8-bit indices into a
// grid of 4 magnitudes, four 7-bit sign fields (one per 8).
HWY_NOINLINE void DequantIQ3_XXS(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq3_xxs)) {
    const float d = HalfAt(in);
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32, out += 32) {
      const uint8_t* qs = in + 2 + 8 * ib32;
      const uint32_t aux32 = U32At(in + 2 + QK_K / 4 + 4 * ib32);
      const float db = d * (0.5f + float(aux32 >> 28)) * 0.5f;
      const uint32_t signs = Signs4x7(aux32);
      StoreSigned(Rows4(iq3xxs_grid, qs[0], qs[1], qs[2], qs[3]), signs & 0xFFFF, db, out);
      StoreSigned(Rows4(iq3xxs_grid, qs[4], qs[5], qs[6], qs[7]), signs >> 16, db, out + 16);
    }
  }
}

// dequantize_row_iq3_s: per 64, two scales db = d * (1 + 2s); per 8, two 9-bit indices
// (9th bits in qh) into the 4-magnitude grid and 8 explicit sign bits.
HWY_NOINLINE void DequantIQ3_S(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq3_s)) {
    const float d = HalfAt(in);
    const uint8_t* scales = in + 106;
    for (int ib32 = 0; ib32 < QK_K / 32; ++ib32, out += 32) {
      const uint8_t* qs = in + 2 + 8 * ib32;
      const unsigned h = in[66 + ib32];
      const uint32_t signs = U32At(in + 74 + 4 * ib32);
      const uint8_t sc = scales[ib32 / 2];
      const float db = d * float(1 + 2 * (ib32 % 2 == 0 ? sc & 0xf : sc >> 4));
      // Index 2l: bit 2l of h; index 2l + 1: bit 2l + 1.
      const auto idx = [&](int k) { return unsigned(qs[k] | ((h << (8 - k)) & 256)); };
      StoreSigned(Rows4(iq3s_grid, idx(0), idx(1), idx(2), idx(3)), signs & 0xFFFF, db, out);
      StoreSigned(Rows4(iq3s_grid, idx(4), idx(5), idx(6), idx(7)), signs >> 16, db, out + 16);
    }
  }
}

// 16 IQ1 grid values g (bytes 0xFF, 0, 1) of two groups of 8 whose deltas have sign
// bytes c0, c1 (16 - 1 for -1/8, 16 + 1 for +1/8) -> dl * (g + delta), with g + delta =
// float(8g + s) * 0.125f (both exact). `dl8` is dl * 0.125f (exact: dl's exponent is
// far above f32's minimum), so dl8 * float(8g + s) has the same exact real value as the
// reference's product, rounded once: the same float, one multiply fewer per vector.
HWY_INLINE void StoreIQ1(V16 g, V16 c, VF dl8, float* HWY_RESTRICT out) {
  const V16 biased = hn::Add(hn::ShiftLeft<3>(g), c);  // 8g + s + 16, wrapping
  Widen16(biased, 16, [&](size_t k, VF x) { Store(hn::Mul(dl8, x), out + k * kN); });
}
HWY_INLINE uint8_t DeltaByte(bool negative) { return negative ? 15 : 17; }
HWY_INLINE V16 DeltaBytes(uint8_t c0, uint8_t c1) {
  const hn::Half<D16> d8;
  return hn::Combine(D16(), hn::Set(d8, c1), hn::Set(d8, c0));
}

// dequantize_row_iq1_s: per 32, dl = d * (2s + 1) and one delta sign; 11-bit indices
// (8 bits in qs, 3 in qh) into iq1s_grid.
HWY_NOINLINE void DequantIQ1_S(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq1_s)) {
    const float d = HalfAt(in);
    for (int ib = 0; ib < QK_K / 32; ++ib, out += 32) {
      const uint8_t* qs = in + 2 + 4 * ib;
      const unsigned qh = U16At(in + 34 + 2 * ib);
      const VF dl = hn::Set(df, d * float(2 * ((qh >> 12) & 7) + 1) * 0.125f);
      const V16 c = Set16(DeltaByte(qh & 0x8000));
      const auto idx = [&](int l) { return unsigned(qs[l] | (((qh >> 3 * l) & 7) << 8)); };
      StoreIQ1(Rows8(iq1s_grid, idx(0), idx(1)), c, dl, out);
      StoreIQ1(Rows8(iq1s_grid, idx(2), idx(3)), c, dl, out + 16);
    }
  }
}

// dequantize_row_iq1_m: per 16 a 3-bit scale, per 8 a delta sign; the F16 super-block
// scale is the top nibbles of the four scale words.
HWY_NOINLINE void DequantIQ1_M(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq1_m)) {
    uint16_t sc[4];
    std::memcpy(sc, in + 48, sizeof sc);
    const float d = HalfBits(uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                      (sc[3] & 0xf000)));
    for (int ib = 0; ib < QK_K / 32; ++ib, out += 32) {
      const uint8_t* qs = in + 4 * ib;
      const uint8_t* qh = in + 32 + 2 * ib;
      const unsigned s = sc[ib / 2] >> (6 * (ib % 2));
      const VF dl1 = hn::Set(df, d * float(2 * (s & 0x7) + 1) * 0.125f);
      const VF dl2 = hn::Set(df, d * float(2 * ((s >> 3) & 0x7) + 1) * 0.125f);
      const unsigned i0 = qs[0] | ((qh[0] << 8) & 0x700), i1 = qs[1] | ((qh[0] << 4) & 0x700);
      const unsigned i2 = qs[2] | ((qh[1] << 8) & 0x700), i3 = qs[3] | ((qh[1] << 4) & 0x700);
      StoreIQ1(Rows8(iq1s_grid, i0, i1), DeltaBytes(DeltaByte(qh[0] & 0x08), DeltaByte(qh[0] & 0x80)), dl1, out);
      StoreIQ1(Rows8(iq1s_grid, i2, i3), DeltaBytes(DeltaByte(qh[1] & 0x08), DeltaByte(qh[1] & 0x80)), dl2,
               out + 16);
    }
  }
}

// This file's kernels, for DequantizeSimd (dequant_simd.cpp): the one place they are named.
inline constexpr Kernel kGridSimd[] = {
    {GgmlType::IQ2_XXS, DequantIQ2_XXS},
    {GgmlType::IQ2_XS, DequantIQ2_XS},
    {GgmlType::IQ2_S, DequantIQ2_S},
    {GgmlType::IQ3_XXS, DequantIQ3_XXS},
    {GgmlType::IQ3_S, DequantIQ3_S},
    {GgmlType::IQ1_S, DequantIQ1_S},
    {GgmlType::IQ1_M, DequantIQ1_M},
};

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_GGML_DEQUANT_IQ_INL_H_
