// SIMD dequantizers for the 4-bit codebook types: IQ4_NL, IQ4_XS (kvalues_iq4nl) and
// MXFP4, NVFP4 (kvalues_fp4). Compiled per Highway target after dequant-inl.h (whose
// helpers they use) by dequant_simd.cpp, whose DequantizeSimd switch calls them.
// Bit-exact with the scalar references (dequant_iq.cpp,
// dequant_other.cpp): per 16 nibbles one byte-table lookup (Lookup16, dequant-inl.h) gives
// kvalue + 128 as u8, which Widen16 converts exactly to f32 kvalue; then one Mul with
// the block factor, computed in scalar code exactly as the reference computes it.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_GGML_DEQUANT_FP4_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_GGML_DEQUANT_FP4_INL_H_
#undef AMN_KERNELS_GGML_DEQUANT_FP4_INL_H_
#else
#define AMN_KERNELS_GGML_DEQUANT_FP4_INL_H_
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

// The codebooks biased by 128 (u8), so that Widen16(.., 128) yields the signed values.
struct BiasedTable {
  alignas(16) uint8_t v[16];
};
constexpr BiasedTable Biased(const int8_t (&t)[16]) {
  BiasedTable b{};
  for (int i = 0; i < 16; ++i) b.v[i] = uint8_t(t[i] + 128);
  return b;
}
alignas(16) static constexpr BiasedTable kIq4nlBiased = Biased(kvalues_iq4nl);
alignas(16) static constexpr BiasedTable kFp4Biased = Biased(kvalues_fp4);

// d * kvalue for 16 nibble indices (as the IQ4 references: factor first).
HWY_INLINE void StoreLookupDMul(V16 table, V16 idx, VF d, float* HWY_RESTRICT out) {
  Widen16(Lookup16(table, idx), 128, [&](size_t k, VF x) { Store(hn::Mul(d, x), out + k * kN); });
}
// kvalue * d (as the FP4 references: value first).
HWY_INLINE void StoreLookupMulD(V16 table, V16 idx, VF d, float* HWY_RESTRICT out) {
  Widen16(Lookup16(table, idx), 128, [&](size_t k, VF x) { Store(hn::Mul(x, d), out + k * kN); });
}

// dequantize_row_iq4_nl: d * kvalues_iq4nl[q]; element j in the low nibble of qs[j],
// j + 16 high.
HWY_NOINLINE void DequantIQ4_NL(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 table = hn::Load(D16(), kIq4nlBiased.v);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq4_nl), out += 32) {
    const VF d = hn::Set(df, HalfAt(in));
    const V16 v = Load16(in + 2);
    StoreLookupDMul(table, hn::And(v, Set16(0x0F)), d, out);
    StoreLookupDMul(table, hn::ShiftRight<4>(v), d, out + 16);
  }
}

// dequantize_row_iq4_xs: per group of 32, dl = d * (ls - 32) with the 6-bit ls (low 4
// bits in scales_l, high 2 in scales_h); dl * kvalues_iq4nl[q].
HWY_NOINLINE void DequantIQ4_XS(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 table = hn::Load(D16(), kIq4nlBiased.v);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_iq4_xs), out += QK_K) {
    const float d = HalfAt(in);
    uint16_t scales_h;
    std::memcpy(&scales_h, in + 2, 2);
    const uint8_t* scales_l = in + 4;
    const uint8_t* qs = in + 8;
    for (int ib = 0; ib < QK_K / 32; ++ib) {
      const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
      const VF dl = hn::Set(df, d * float(ls - 32));
      const V16 v = Load16(qs + 16 * ib);
      StoreLookupDMul(table, hn::And(v, Set16(0x0F)), dl, out + 32 * ib);
      StoreLookupDMul(table, hn::ShiftRight<4>(v), dl, out + 32 * ib + 16);
    }
  }
}

// ggml_e8m0_to_fp32_half (as dequant_other.cpp): 2^(e - 128), subnormal for e < 2.
HWY_INLINE float E8M0Half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t(0x00200000) << e : uint32_t(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ggml_ue4m3_to_fp32 halved (as dequant_other.cpp's ue4m3_to_f32_half, whose ldexp and
// * 0.5f are exact): 0 and 0x7F read as 0; exponent 0: man * 2^-10; otherwise
// (1 + man / 8) * 2^(exp - 8), a normal float built from its bits (bit 7 ignored).
HWY_INLINE float UE4M3Half(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const uint32_t exp = (x >> 3) & 0xF;
  const uint32_t man = x & 0x7;
  if (exp == 0) return float(man) * 0.0009765625f;  // 2^-10, exact
  const uint32_t bits = ((exp + 119) << 23) | (man << 20);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// dequantize_row_mxfp4: kvalues_fp4[q] * 2^(e - 128); nibbles as Q4_0.
HWY_NOINLINE void DequantMXFP4(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const V16 table = hn::Load(D16(), kFp4Biased.v);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_mxfp4), out += 32) {
    const VF d = hn::Set(df, E8M0Half(in[0]));
    const V16 v = Load16(in + 1);
    StoreLookupMulD(table, hn::And(v, Set16(0x0F)), d, out);
    StoreLookupMulD(table, hn::ShiftRight<4>(v), d, out + 16);
  }
}

// dequantize_row_nvfp4: per 16 elements s, kvalues_fp4[q] * UE4M3(d[s]) / 2; byte j of
// the 8 bytes of s holds element j (low nibble) and j + 8 (high). One 16-byte load
// covers s and s + 1; their halves of the low / high nibble vectors are regrouped.
HWY_NOINLINE void DequantNVFP4(const uint8_t* HWY_RESTRICT in, float* HWY_RESTRICT out, size_t blocks) {
  const DF df;
  const D16 d16;
  const V16 table = hn::Load(d16, kFp4Biased.v);
  for (size_t i = 0; i < blocks; ++i, in += sizeof(block_nvfp4), out += 64) {
    for (int s = 0; s < 4; s += 2) {
      const V16 v = Load16(in + 4 + 8 * s);
      const V16 lo = hn::And(v, Set16(0x0F));
      const V16 hi = hn::ShiftRight<4>(v);
      // [lo 0..7, hi 0..7] (sub-block s), [lo 8..15, hi 8..15] (s + 1).
      const V16 a = hn::ConcatLowerLower(d16, hi, lo);
      const V16 b = hn::ConcatUpperUpper(d16, hi, lo);
      StoreLookupMulD(table, a, hn::Set(df, UE4M3Half(in[s])), out + 16 * s);
      StoreLookupMulD(table, b, hn::Set(df, UE4M3Half(in[s + 1])), out + 16 * s + 16);
    }
  }
}

// This file's kernels, for DequantizeSimd (dequant_simd.cpp): the one place they are named.
inline constexpr Kernel kCodebookSimd[] = {
    {GgmlType::IQ4_NL, DequantIQ4_NL},
    {GgmlType::IQ4_XS, DequantIQ4_XS},
    {GgmlType::MXFP4, DequantMXFP4},
    {GgmlType::NVFP4, DequantNVFP4},
};

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace ggml
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_GGML_DEQUANT_FP4_INL_H_
