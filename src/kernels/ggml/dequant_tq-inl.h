// SIMD dequantizers for the 1- and 2-bit types without a codebook: TQ1_0, TQ2_0
// (ternary), Q1_0 (sign bits) and Q2_0. Compiled per Highway target after
// dequant_fp4-inl.h by dequant_simd.cpp, whose DequantizeSimd switch calls them.
// Bit-exact with the scalar references (dequant_other.cpp): the
// quants are decoded with integer operations to the reference's small integers,
// converted exactly (Widen16) and multiplied by the block scale in the reference's
// order; Q1_0 selects between d and -d, the two values the reference writes.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_GGML_DEQUANT_TQ_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_GGML_DEQUANT_TQ_INL_H_
#undef AMN_KERNELS_GGML_DEQUANT_TQ_INL_H_
#else
#define AMN_KERNELS_GGML_DEQUANT_TQ_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"
#include "kernels/ggml/dequant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

using D16x8 = hn::Repartition<uint16_t, D16>;  // the 16 bytes as 8 u16 lanes

// Lane j of an f32 vector tests bit j of a word (kN <= 16 lanes).
alignas(64) static constexpr int32_t kLaneBit[16] = {1,    2,    4,    8,    16,   32,    64,    128,
                                                      256,  512,  1024, 2048, 4096, 8192, 16384, 32768};
// The mask of lanes j whose bit j is set in `bits` (Q1_0's values; the IQ types' signs).
HWY_INLINE hn::Mask<DF> BitsMask(uint32_t bits) {
  const DI di;
  return hn::RebindMask(DF(), hn::TestBit(hn::Set(di, int32_t(bits)), hn::Load(di, kLaneBit)));
}

// 128-bit vectors: the sign bits of eight lanes per byte value (bit j clear: lane j
// negative), XOR-ed into d. -d is d with its sign bit flipped (C's negation, NaN
// included), so this writes the reference's two values with one load and one XOR per
// vector instead of a broadcast, a bit test and a select (WASM, 16 Mi elements: 4.4 ->
// 8.3 Gelem/s; a table per nibble gave 5.7). 8 KiB, in L1 beside the output stream.
alignas(16) static constexpr auto kByteSigns = [] {
  struct {
    uint32_t v[256][8];
  } t{};
  for (int b = 0; b < 256; ++b)
    for (int j = 0; j < 8; ++j) t.v[b][j] = (b >> j) & 1 ? 0u : 0x80000000u;
  return t;
}();

// dequantize_row_q1_0: a set bit is d, a clear bit -d (both computed once, as there).
HWY_NOINLINE void DequantQ1_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q1_0), out += 128) {
    const float d = HalfAt(in);
    uint64_t bits[2];
    std::memcpy(bits, in + 2, 16);
    if constexpr (kN == 4) {
      const DI di;
      const VI vd = hn::BitCast(di, hn::Set(df, d));
      const hn::RebindToUnsigned<DF> du;
      for (size_t e = 0; e < 128; e += 8) {
        const uint32_t* signs = kByteSigns.v[in[2 + e / 8]];
        Store(hn::BitCast(df, hn::Xor(vd, hn::BitCast(di, hn::Load(du, signs)))), out + e);
        Store(hn::BitCast(df, hn::Xor(vd, hn::BitCast(di, hn::Load(du, signs + 4)))), out + e + 4);
      }
    } else {
      const float neg_d = -d;
      const VF vd = hn::Set(df, d), vneg = hn::Set(df, neg_d);
      for (size_t e = 0; e < 128; e += kN) {
        const uint32_t w = uint32_t(bits[e / 64] >> (e % 64));
        Store(hn::IfThenElse(BitsMask(w), vd, vneg), out + e);
      }
    }
  }
}

// dequantize_row_q2_0: (q - 1) * d; element j at bits 2 * (j % 4) of byte j / 4. The four
// bit planes are interleaved back to element order (bytes, then byte pairs).
HWY_NOINLINE void DequantQ2_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const D16 d8;
  const D16x8 d16;
  const V16 three = Set16(3);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q2_0), out += 64) {
    const VF d = hn::Set(df, HalfAt(in));
    const V16 v = Load16(in + 2);
    const V16 p0 = hn::And(v, three);
    const V16 p1 = hn::And(hn::ShiftRight<2>(v), three);
    const V16 p2 = hn::And(hn::ShiftRight<4>(v), three);
    const V16 p3 = hn::ShiftRight<6>(v);
    // a, b: (p0[b], p1[b]) pairs for bytes 0..7 / 8..15; c, e: (p2[b], p3[b]).
    const auto a = hn::BitCast(d16, hn::InterleaveLower(d8, p0, p1));
    const auto b = hn::BitCast(d16, hn::InterleaveUpper(d8, p0, p1));
    const auto c = hn::BitCast(d16, hn::InterleaveLower(d8, p2, p3));
    const auto e = hn::BitCast(d16, hn::InterleaveUpper(d8, p2, p3));
    StoreMul(hn::BitCast(d8, hn::InterleaveLower(d16, a, c)), 1, d, out);
    StoreMul(hn::BitCast(d8, hn::InterleaveUpper(d16, a, c)), 1, d, out + 16);
    StoreMul(hn::BitCast(d8, hn::InterleaveLower(d16, b, e)), 1, d, out + 32);
    StoreMul(hn::BitCast(d8, hn::InterleaveUpper(d16, b, e)), 1, d, out + 48);
  }
}

// dequantize_row_tq2_0: (q - 1) * d with 2-bit q; per 32 bytes, bits 2l..2l+1 of byte m
// are element 32l + m.
HWY_NOINLINE void DequantTQ2_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 three = Set16(3);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_tq2_0), out += QK_K) {
    const VF d = hn::Set(df, HalfAt(in + 64));
    for (size_t j = 0; j < 64; j += 32) {
      for (size_t h = 0; h < 32; h += 16) {
        const V16 v = Load16(in + j + h);
        float* o = out + 4 * j + h;
        StoreMul(hn::And(v, three), 1, d, o);
        StoreMul(hn::And(hn::ShiftRight<2>(v), three), 1, d, o + 32);
        StoreMul(hn::And(hn::ShiftRight<4>(v), three), 1, d, o + 64);
        StoreMul(hn::ShiftRight<6>(v), 1, d, o + 96);
      }
    }
  }
}

// Trit n of 16 TQ1_0 bytes: ((byte * 3^n) mod 256 * 3) >> 8 (0, 1 or 2), with `pow3`
// holding 3^n of each byte pair (one per u16 lane). In u16 lanes, x * 3^n keeps
// (lo * 3^n) mod 256 in its low byte, and (x & 0xFF00) * 3^n holds (hi * 3^n) mod 256 in
// its high byte; MulHigh of (that byte << 8) by 3 is (byte * 3) >> 8.
HWY_INLINE V16 Trits(V16 v, hn::VFromD<D16x8> pow3) {
  const D16x8 d16;
  const auto x = hn::BitCast(d16, v);
  const auto three = hn::Set(d16, 3);
#if HWY_TARGET == HWY_WASM
  // Highway 1.0.3 builds MulHigh on WASM from two widening multiplies and a shuffle;
  // plain 16-bit products do it here (t * 3 < 768 fits): the low trit is
  // ((lo * 3^n mod 256) * 3) >> 8, the high one ((hi * 3^n mod 256) * 3) & 0xFF00 in
  // place.
  const auto low_byte = hn::Set(d16, 0x00FF);
  const auto lo = hn::ShiftRight<8>(hn::Mul(hn::And(hn::Mul(x, pow3), low_byte), three));
  const auto hi_t = hn::And(hn::Mul(hn::ShiftRight<8>(x), pow3), low_byte);
  const auto hi = hn::And(hn::Mul(hi_t, three), hn::Set(d16, 0xFF00));
  return hn::BitCast(D16(), hn::Or(lo, hi));
#else
  const auto lo = hn::MulHigh(hn::ShiftLeft<8>(hn::Mul(x, pow3)), three);
  const auto hi = hn::MulHigh(hn::Mul(hn::And(x, hn::Set(d16, 0xFF00)), pow3), three);
  return hn::BitCast(D16(), hn::Or(lo, hn::ShiftLeft<8>(hi)));
#endif
}

// dequantize_row_tq1_0: (trit - 1) * d. qs[0..31] hold trits 0..4 of elements 32n + m,
// qs[32..47] those of 160 + 16n + m, qh[0..3] trits 0..3 of 240 + 4n + j.
alignas(16) static constexpr uint16_t kQhPow3[8] = {1, 1, 3, 3, 9, 9, 27, 27};
HWY_NOINLINE void DequantTQ1_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const D16x8 d16;
  constexpr uint16_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto qh_pow3 = hn::Load(d16, kQhPow3);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_tq1_0), out += QK_K) {
    const VF d = hn::Set(df, HalfAt(in + 52));
    const V16 a = Load16(in), b = Load16(in + 16), c = Load16(in + 32);
    for (size_t n = 0; n < 5; ++n) {
      const auto pow3 = hn::Set(d16, kPow3[n]);
      StoreMul(Trits(a, pow3), 1, d, out + 32 * n);
      StoreMul(Trits(b, pow3), 1, d, out + 32 * n + 16);
      StoreMul(Trits(c, pow3), 1, d, out + 160 + 16 * n);
    }
    // qh[j] at bytes 4n + j.
    const V16 qh = hn::BitCast(D16(), hn::Set(hn::Repartition<uint32_t, D16>(), U32At(in + 48)));
    StoreMul(Trits(qh, qh_pow3), 1, d, out + 240);
  }
}

// This file's kernels, for DequantizeSimd (dequant_simd.cpp): the one place they are named.
inline constexpr Kernel kTernarySimd[] = {
    {GgmlType::TQ1_0, DequantTQ1_0},
    {GgmlType::TQ2_0, DequantTQ2_0},
    {GgmlType::Q1_0, DequantQ1_0},
    {GgmlType::Q2_0, DequantQ2_0},
};

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_GGML_DEQUANT_TQ_INL_H_
