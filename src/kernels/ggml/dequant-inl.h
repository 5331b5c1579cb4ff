// SIMD ggml dequantizers, written once against Highway and compiled per target:
// dequant_simd.cpp includes this through hwy/foreach_target.h (skeleton-inl.h style).
// Every kernel gives exactly the bytes of the scalar reference (dequant_legacy.cpp,
// dequant_k.cpp, themselves bit-exact with ggml's dequantize_row_*): the quants are
// decoded to the same small integers with integer operations, converted to f32 exactly,
// and multiplied and added in the reference's order, each operation rounded on its own
// (Mul then Add/Sub, never a fused multiply-add; the core builds with -ffp-contract=off).
// Per-group factors (d * scale, dmin * min) are computed in scalar code exactly as the
// reference computes them, then broadcast.
//
// Quants are handled 16 bytes at a time (one group of 16, or half a group of 32): bit
// manipulation on a u8 vector, then widened to 16 / kN f32 vectors (kN = 4, 8, 16 lanes:
// CappedTag keeps a vector inside one group). Highway's one-lane fallback target
// (HWY_SCALAR, x86 without SSSE3) has no kernels: the reference runs there.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_GGML_DEQUANT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_GGML_DEQUANT_INL_H_
#undef AMN_KERNELS_GGML_DEQUANT_INL_H_
#else
#define AMN_KERNELS_GGML_DEQUANT_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/byte_lookup-inl.h"
#include "kernels/cast.h"
#include "kernels/ggml/blocks.h"
#include "kernels/ggml/dequantize.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace ggml {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

using DF = hn::CappedTag<float, 16>;
using DI = hn::RebindToSigned<DF>;
using D16 = hn::Full128<uint8_t>;  // 16 quant bytes: one group of 16, or half of 32
using VF = hn::VFromD<DF>;
using VI = hn::VFromD<DI>;
using V16 = hn::VFromD<D16>;
constexpr size_t kN = hn::MaxLanes(DF());  // f32 lanes: 4, 8 or 16
static_assert(kN == 4 || kN == 8 || kN == 16, "16 quants must fill whole f32 vectors");

// ggml's GGML_FP16_TO_FP32 of F16 bits h (HalfAt: of a block scale at p, unaligned).
// Normal numbers (nearly every scale) are widened exactly by moving the bits; zero,
// subnormals, Inf and NaN go to the reference conversion (scalar::f16_to_f32).
HWY_INLINE float HalfBits(uint16_t h) {
  const uint32_t exponent = h & 0x7C00u;
  if (HWY_LIKELY(exponent != 0 && exponent != 0x7C00u)) {
    const uint32_t bits = (uint32_t(h & 0x8000u) << 16) | ((uint32_t(h & 0x7FFFu) << 13) + 0x38000000u);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return scalar::f16_to_f32(h);
}
HWY_INLINE float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return HalfBits(h);
}

HWY_INLINE float FloatAt(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

HWY_INLINE uint32_t U32At(const uint8_t* p) {
  uint32_t u;
  std::memcpy(&u, p, 4);
  return u;
}

HWY_INLINE V16 Load16(const uint8_t* p) { return hn::LoadU(D16(), p); }

// table[idx] for 16 indices 0..15 (byte_lookup-inl.h: the swizzle instruction on WASM).
HWY_INLINE V16 Lookup16(V16 table, V16 idx) { return amn::HWY_NAMESPACE::LookupBytes16(table, idx); }
HWY_INLINE V16 Set16(uint8_t b) { return hn::Set(D16(), b); }
HWY_INLINE void Store(VF v, float* HWY_RESTRICT p) { hn::StoreU(v, DF(), p); }

// i32 lanes holding small non-negative integers (below 2^16) -> exact f32 of
// q - offset (the reference subtracts as integers; either way it is exact).
HWY_INLINE VF ToFloat(VI q, int32_t offset) {
  const DF df;
#if HWY_TARGET == HWY_WASM
  // 2^23 + q has q in its mantissa; subtracting 2^23 + offset gives q - offset exactly.
  // (LLVM turns ConvertTo of a zero-extended u8 into a narrow unsigned conversion that
  // WASM SIMD lacks, and scalarizes it.)
  const VI biased = hn::Or(q, hn::Set(DI(), 0x4B000000));
  return hn::Sub(hn::BitCast(df, biased), hn::Set(df, float(8388608 + offset)));
#else
  return hn::ConvertTo(df, hn::Sub(q, hn::Set(DI(), offset)));
#endif
}

// 16 u8 quants -> 16 / kN vectors of f32 (q - offset), passed to emit(k, v) for
// elements k * kN ...
// (N is kN; a template parameter so that only the branch for this target is compiled.)
template <size_t N = kN, class Emit>
HWY_INLINE void Widen16(V16 v, int32_t offset, const Emit& emit) {
  const hn::Simd<int32_t, N, 0> di;  // DI
  const hn::Half<D16> d8;
  if constexpr (N == 16) {
    emit(0, ToFloat(hn::PromoteTo(di, v), offset));
  } else if constexpr (N == 8) {
    emit(0, ToFloat(hn::PromoteTo(di, hn::LowerHalf(d8, v)), offset));
    emit(1, ToFloat(hn::PromoteTo(di, hn::UpperHalf(d8, v)), offset));
  } else {
#if HWY_TARGET == HWY_WASM
    // The f32 bits of 2^23 + q built by interleaving: q with zero bytes (u16 lanes), then
    // with 0x4B00 (u32 lanes 0x4B0000qq). Two byte shuffles per four vectors plus one
    // each (V8: punpck*) instead of six zero extensions (an upper half costs a shuffle
    // more) and four ORs: ToFloat's exact conversion in fewer instructions (16 Mi
    // elements: Q5_1 / Q5_K 1.25x, TQ1_0 1.4x, TQ2_0 1.9x in Node).
    const hn::Repartition<uint16_t, D16> d16;
    const DF df;
    const auto zero = hn::Zero(D16());
    const auto lo = hn::BitCast(d16, hn::InterleaveLower(D16(), v, zero));
    const auto hi = hn::BitCast(d16, hn::InterleaveUpper(D16(), v, zero));
    const auto exponent = hn::Set(d16, uint16_t{0x4B00});
    const VF bias = hn::Set(df, float(8388608 + offset));
    const auto to_float = [&](hn::VFromD<decltype(d16)> words) { return hn::Sub(hn::BitCast(df, words), bias); };
    emit(0, to_float(hn::InterleaveLower(d16, lo, exponent)));
    emit(1, to_float(hn::InterleaveUpper(d16, lo, exponent)));
    emit(2, to_float(hn::InterleaveLower(d16, hi, exponent)));
    emit(3, to_float(hn::InterleaveUpper(d16, hi, exponent)));
#else
    const hn::Rebind<uint16_t, decltype(d8)> d16;  // 8 u16
    const hn::Half<decltype(d16)> d4;
    const auto lo = hn::PromoteTo(d16, hn::LowerHalf(d8, v));
    const auto hi = hn::PromoteTo(d16, hn::UpperHalf(d8, v));
    emit(0, ToFloat(hn::PromoteTo(di, hn::LowerHalf(d4, lo)), offset));
    emit(1, ToFloat(hn::PromoteTo(di, hn::UpperHalf(d4, lo)), offset));
    emit(2, ToFloat(hn::PromoteTo(di, hn::LowerHalf(d4, hi)), offset));
    emit(3, ToFloat(hn::PromoteTo(di, hn::UpperHalf(d4, hi)), offset));
#endif
  }
}

// 16 i8 values (-128..127, in a u8 vector) -> four vectors of exact f32, passed to
// emit(k, v) for elements 4k ... 4k + 3 (as Widen16; the IQ2/IQ3 signed magnitudes).
// Only 128-bit targets sign the bytes (StoreSigned), so only the 4-lane case exists;
// N is a template parameter so wide targets never instantiate it.
template <size_t N = kN, class Emit>
HWY_INLINE void Widen16Signed(V16 v, const Emit& emit) {
  static_assert(N == 4, "Widen16Signed is used by 128-bit targets only");
#if HWY_TARGET == HWY_WASM
  // LLVM folds the sign extensions into the conversion (sitofp from i8), which WASM SIMD
  // lacks, and scalarizes it: convert q + 128 (the sign bit flipped) as ToFloat does.
  Widen16<N>(hn::Xor(v, Set16(0x80)), 128, emit);
#else
  // i8 -> i16 -> i32: six sign extensions for the four vectors.
  const hn::Repartition<int8_t, D16> ds8;
  const hn::Simd<int32_t, N, 0> di;  // DI
  const DF df;
  const auto s = hn::BitCast(ds8, v);
  const hn::Half<decltype(ds8)> d8;
  const hn::Rebind<int16_t, decltype(d8)> d16;  // 8 i16
  const hn::Half<decltype(d16)> d4;
  const auto lo = hn::PromoteTo(d16, hn::LowerHalf(d8, s));
  const auto hi = hn::PromoteTo(d16, hn::UpperHalf(d8, s));
  emit(0, hn::ConvertTo(df, hn::PromoteTo(di, hn::LowerHalf(d4, lo))));
  emit(1, hn::ConvertTo(df, hn::PromoteTo(di, hn::UpperHalf(d4, lo))));
  emit(2, hn::ConvertTo(df, hn::PromoteTo(di, hn::LowerHalf(d4, hi))));
  emit(3, hn::ConvertTo(df, hn::PromoteTo(di, hn::UpperHalf(d4, hi))));
#endif
}

// The 16 quants at p, times d (Q4_0, Q5_0 and the K-quants without a min).
HWY_INLINE void StoreMul(V16 q, int32_t offset, VF d, float* HWY_RESTRICT out) {
  Widen16(q, offset, [&](size_t k, VF x) { Store(hn::Mul(x, d), out + k * kN); });
}
// q * d + m (Q4_1, Q5_1).
HWY_INLINE void StoreMulAdd(V16 q, VF d, VF m, float* HWY_RESTRICT out) {
  Widen16(q, 0, [&](size_t k, VF x) { Store(hn::Add(hn::Mul(x, d), m), out + k * kN); });
}
// dl * q - ml (Q2_K, Q4_K, Q5_K).
HWY_INLINE void StoreMulSub(V16 q, VF dl, VF ml, float* HWY_RESTRICT out) {
  Widen16(q, 0, [&](size_t k, VF x) { Store(hn::Sub(hn::Mul(dl, x), ml), out + k * kN); });
}

// ---- legacy 32-element blocks ----

// dequantize_row_q8_0 (and Q8_1's Q8_0 part): q * d. kBytes: block size; kQs: offset
// of the 32 int8 quants; the F16 scale is at offset 0. Signed quants: a partial vector
// of kN bytes per f32 vector, sign-extended.
HWY_INLINE VF Int8ToFloat(const uint8_t* p) {
#if HWY_TARGET == HWY_WASM
  // Flip the sign bit: q + 128 as u8, then ToFloat's exact conversion.
  const hn::Rebind<uint8_t, DF> du8;
  const auto u = hn::Xor(hn::LoadU(du8, p), hn::Set(du8, 0x80));
  return ToFloat(hn::BitCast(DI(), hn::PromoteTo(hn::RebindToUnsigned<DF>(), u)), 128);
#else
  const hn::Rebind<int8_t, DF> di8;
  return hn::ConvertTo(DF(), hn::PromoteTo(DI(), hn::LoadU(di8, reinterpret_cast<const int8_t*>(p))));
#endif
}

template <size_t kBytes, size_t kQs>
HWY_NOINLINE void DequantQ8(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += kBytes, out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    for (size_t j = 0; j < 32; j += kN) Store(hn::Mul(Int8ToFloat(in + kQs + j), d), out + j);
  }
}

// dequantize_row_q4_0: (q - 8) * d; element j in the low nibble of qs[j], j + 16 high.
HWY_NOINLINE void DequantQ4_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q4_0), out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    const V16 v = Load16(in + 2);
    StoreMul(hn::And(v, Set16(0x0F)), 8, d, out);
    StoreMul(hn::ShiftRight<4>(v), 8, d, out + 16);
  }
}

// dequantize_row_q4_1: q * d + m.
HWY_NOINLINE void DequantQ4_1(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q4_1), out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    const VF m = hn::Set(df, HalfAt(in + 2));
    const V16 v = Load16(in + 4);
    StoreMulAdd(hn::And(v, Set16(0x0F)), d, m, out);
    StoreMulAdd(hn::ShiftRight<4>(v), d, m, out + 16);
  }
}

// Q5_0 / Q5_1: the 5-bit quants of elements 0..15 (low nibbles | bit j of qh, as 16)
// and 16..31 (high nibbles | bit 16 + j), the same integers as the reference's
// (q & 0x0F) | q5_high_lo(qh, j) and (q >> 4) | q5_high_hi(qh, j).
alignas(16) static constexpr uint8_t kQhByteLo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
alignas(16) static constexpr uint8_t kQhByteHi[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
alignas(16) static constexpr uint8_t kBitOfByte[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
struct Q5Pair {
  V16 lo, hi;
};
HWY_INLINE Q5Pair Q5Quants(const uint8_t* qs, uint32_t qh) {
  const D16 d16;
  const V16 v = Load16(qs);
  const V16 words = hn::BitCast(d16, hn::Set(hn::Repartition<uint32_t, D16>(), qh));
  const V16 bit = hn::Load(d16, kBitOfByte);
  const V16 sixteen = Set16(16);
  const V16 high_lo = hn::IfThenElseZero(hn::TestBit(Lookup16(words, hn::Load(d16, kQhByteLo)), bit), sixteen);
  const V16 high_hi = hn::IfThenElseZero(hn::TestBit(Lookup16(words, hn::Load(d16, kQhByteHi)), bit), sixteen);
  return {hn::Or(hn::And(v, Set16(0x0F)), high_lo), hn::Or(hn::ShiftRight<4>(v), high_hi)};
}

// dequantize_row_q5_0: (q - 16) * d.
HWY_NOINLINE void DequantQ5_0(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q5_0), out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    const Q5Pair q = Q5Quants(in + 6, U32At(in + 2));
    StoreMul(q.lo, 16, d, out);
    StoreMul(q.hi, 16, d, out + 16);
  }
}

// dequantize_row_q5_1: q * d + m.
HWY_NOINLINE void DequantQ5_1(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q5_1), out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    const VF m = hn::Set(df, HalfAt(in + 2));
    const Q5Pair q = Q5Quants(in + 8, U32At(in + 4));
    StoreMulAdd(q.lo, d, m, out);
    StoreMulAdd(q.hi, d, m, out + 16);
  }
}

// ---- K-quants: super-blocks of 256 ----

// d * scale and dmin * min of the eight groups of 32 of a Q4_K / Q5_K super-block.
HWY_INLINE void FactorsK4(const uint8_t* scales, float d, float dmin, float* dl, float* ml) {
  for (int g = 0; g < 8; ++g) {
    uint8_t sc, m;
    get_scale_min_k4(g, scales, &sc, &m);
    dl[g] = d * float(sc);
    ml[g] = dmin * float(m);
  }
}

// dequantize_row_q4_K: per group of 32, dl * q - ml; groups 2c and 2c + 1 are the low
// and high nibbles of the same 32 bytes.
HWY_NOINLINE void DequantQ4_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q4_K), out += QK_K) {
    float dl[8], ml[8];
    FactorsK4(in + 4, HalfAt(in), HalfAt(in + 2), dl, ml);
    const uint8_t* qs = in + 16;
    for (int c = 0; c < 4; ++c) {
      const VF d1 = hn::Set(df, dl[2 * c]), m1 = hn::Set(df, ml[2 * c]);
      const VF d2 = hn::Set(df, dl[2 * c + 1]), m2 = hn::Set(df, ml[2 * c + 1]);
      for (int h = 0; h < 2; ++h) {
        const V16 v = Load16(qs + 32 * c + 16 * h);
        StoreMulSub(hn::And(v, Set16(0x0F)), d1, m1, out + 64 * c + 16 * h);
        StoreMulSub(hn::ShiftRight<4>(v), d2, m2, out + 64 * c + 32 + 16 * h);
      }
    }
  }
}

// dequantize_row_q5_K: as Q4_K plus 16 where bit 2c (low nibbles) / 2c + 1 (high) of
// qh[l] is set.
HWY_NOINLINE void DequantQ5_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 sixteen = Set16(16);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q5_K), out += QK_K) {
    float dl[8], ml[8];
    FactorsK4(in + 4, HalfAt(in), HalfAt(in + 2), dl, ml);
    const uint8_t* qh = in + 16;
    const uint8_t* qs = in + 48;
    const V16 h0 = Load16(qh), h1 = Load16(qh + 16);
    for (int c = 0; c < 4; ++c) {
      const VF d1 = hn::Set(df, dl[2 * c]), m1 = hn::Set(df, ml[2 * c]);
      const VF d2 = hn::Set(df, dl[2 * c + 1]), m2 = hn::Set(df, ml[2 * c + 1]);
      const V16 u1 = Set16(uint8_t(1u << (2 * c)));
      const V16 u2 = Set16(uint8_t(2u << (2 * c)));
      for (int h = 0; h < 2; ++h) {
        const V16 v = Load16(qs + 32 * c + 16 * h);
        const V16 hb = h == 0 ? h0 : h1;
        const V16 q1 = hn::Or(hn::And(v, Set16(0x0F)), hn::IfThenElseZero(hn::TestBit(hb, u1), sixteen));
        const V16 q2 = hn::Or(hn::ShiftRight<4>(v), hn::IfThenElseZero(hn::TestBit(hb, u2), sixteen));
        StoreMulSub(q1, d1, m1, out + 64 * c + 16 * h);
        StoreMulSub(q2, d2, m2, out + 64 * c + 32 + 16 * h);
      }
    }
  }
}

// dequantize_row_q6_K: per group of 16, (d * scale) * (q - 32). Per 128 elements, byte
// l of ql / ql + 32 holds elements l, l + 32 (low nibbles) and l + 64, l + 96 (high);
// qh[l] holds their top two bits at bits 0-1, 2-3, 4-5, 6-7.
HWY_NOINLINE void DequantQ6_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q6_K), out += QK_K) {
    const float d = HalfAt(in + 208);
    float ds[16];
    for (int g = 0; g < 16; ++g) ds[g] = d * float(int8_t(in[192 + g]));
    for (int c = 0; c < 2; ++c) {
      const uint8_t* ql = in + 64 * c;
      const uint8_t* qh = in + 128 + 32 * c;
      const float* sc = ds + 8 * c;
      float* o = out + 128 * c;
      for (int h = 0; h < 2; ++h) {
        const V16 a = Load16(ql + 16 * h);
        const V16 b = Load16(ql + 32 + 16 * h);
        const V16 hb = Load16(qh + 16 * h);
        const V16 q1 = hn::Or(hn::And(a, Set16(0x0F)), hn::ShiftLeft<4>(hn::And(hb, Set16(0x03))));
        const V16 q2 = hn::Or(hn::And(b, Set16(0x0F)), hn::ShiftLeft<2>(hn::And(hb, Set16(0x0C))));
        const V16 q3 = hn::Or(hn::ShiftRight<4>(a), hn::And(hb, Set16(0x30)));
        const V16 q4 = hn::Or(hn::ShiftRight<4>(b), hn::ShiftRight<2>(hn::And(hb, Set16(0xC0))));
        StoreMul(q1, 32, hn::Set(df, sc[h + 0]), o + 16 * h);
        StoreMul(q2, 32, hn::Set(df, sc[h + 2]), o + 32 + 16 * h);
        StoreMul(q3, 32, hn::Set(df, sc[h + 4]), o + 64 + 16 * h);
        StoreMul(q4, 32, hn::Set(df, sc[h + 6]), o + 96 + 16 * h);
      }
    }
  }
}

// dequantize_row_q2_K: per group of 16, dl * q - ml with dl = d * (scale & 15),
// ml = dmin * (scale >> 4). Per 128 elements, byte l of 32 holds elements l, l + 32,
// l + 64, l + 96 in bits 0-1, 2-3, 4-5, 6-7.
HWY_NOINLINE void DequantQ2_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 three = Set16(3);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q2_K), out += QK_K) {
    const float d = HalfAt(in + 80);
    const float dmin = HalfAt(in + 82);
    float dl[16], ml[16];
    for (int g = 0; g < 16; ++g) {
      dl[g] = d * float(in[g] & 0xF);
      ml[g] = dmin * float(in[g] >> 4);
    }
    for (int c = 0; c < 2; ++c) {
      for (int h = 0; h < 2; ++h) {
        const V16 v = Load16(in + 16 + 32 * c + 16 * h);
        float* o = out + 128 * c + 16 * h;
        const int g = 8 * c + h;  // + 2j
        StoreMulSub(hn::And(v, three), hn::Set(df, dl[g]), hn::Set(df, ml[g]), o);
        StoreMulSub(hn::And(hn::ShiftRight<2>(v), three), hn::Set(df, dl[g + 2]), hn::Set(df, ml[g + 2]), o + 32);
        StoreMulSub(hn::And(hn::ShiftRight<4>(v), three), hn::Set(df, dl[g + 4]), hn::Set(df, ml[g + 4]), o + 64);
        StoreMulSub(hn::ShiftRight<6>(v), hn::Set(df, dl[g + 6]), hn::Set(df, ml[g + 6]), o + 96);
      }
    }
  }
}

// dequantize_row_q3_K: per group of 16, dl * (low - (high bit ? 0 : 4)) with
// dl = d * (scale - 32). Low 2 bits as Q2_K; the high bit of element 128c + 32j + l is
// bit 4c + j of hmask[l]. low - (bit ? 0 : 4) = (low | bit << 2) - 4.
HWY_NOINLINE void DequantQ3_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 three = Set16(3);
  const V16 four = Set16(4);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q3_K), out += QK_K) {
    const float d = HalfAt(in + 108);
    int8_t scales[16];
    unpack_q3_k_scales(in + 96, scales);
    float dl[16];
    for (int g = 0; g < 16; ++g) dl[g] = d * float(scales[g] - 32);
    for (int c = 0; c < 2; ++c) {
      for (int h = 0; h < 2; ++h) {
        const V16 v = Load16(in + 32 + 32 * c + 16 * h);
        const V16 hm = Load16(in + 16 * h);
        float* o = out + 128 * c + 16 * h;
        const int g = 8 * c + h;  // + 2j
        const auto high = [&](int j) {
          return hn::IfThenElseZero(hn::TestBit(hm, Set16(uint8_t(1u << (4 * c + j)))), four);
        };
        StoreMul(hn::Or(hn::And(v, three), high(0)), 4, hn::Set(df, dl[g]), o);
        StoreMul(hn::Or(hn::And(hn::ShiftRight<2>(v), three), high(1)), 4, hn::Set(df, dl[g + 2]), o + 32);
        StoreMul(hn::Or(hn::And(hn::ShiftRight<4>(v), three), high(2)), 4, hn::Set(df, dl[g + 4]), o + 64);
        StoreMul(hn::Or(hn::ShiftRight<6>(v), high(3)), 4, hn::Set(df, dl[g + 6]), o + 96);
      }
    }
  }
}

// dequantize_row_q8_K: d * q with an F32 scale.
HWY_NOINLINE void DequantQ8_K(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_q8_K), out += QK_K) {
    const VF d = hn::Set(df, FloatAt(in));
    for (size_t j = 0; j < QK_K; j += kN) Store(hn::Mul(d, Int8ToFloat(in + 4 + j)), out + j);
  }
}

// This file's kernels, for DequantizeSimd (dequant_simd.cpp): the one place they are named.
inline constexpr Kernel kLegacyAndKSimd[] = {
    {GgmlType::Q4_0, DequantQ4_0},
    {GgmlType::Q4_1, DequantQ4_1},
    {GgmlType::Q5_0, DequantQ5_0},
    {GgmlType::Q5_1, DequantQ5_1},
    {GgmlType::Q8_0, DequantQ8<sizeof(block_q8_0), 2>},
    {GgmlType::Q8_1, DequantQ8<sizeof(block_q8_1), 4>},
    {GgmlType::Q2_K, DequantQ2_K},
    {GgmlType::Q3_K, DequantQ3_K},
    {GgmlType::Q4_K, DequantQ4_K},
    {GgmlType::Q5_K, DequantQ5_K},
    {GgmlType::Q6_K, DequantQ6_K},
    {GgmlType::Q8_K, DequantQ8_K},
};

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_GGML_DEQUANT_INL_H_
