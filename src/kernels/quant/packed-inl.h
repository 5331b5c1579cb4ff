// The Highway half of the integer kernels' table-lookup path (packed_lut.h), compiled
// per target by packed_simd.cpp: moving bits only, no arithmetic, so every target gives
// the bytes of the tables, which the reference's own rounding filled. All vectors are
// 128-bit (one shuffle table is 16 bytes): the same code on SSSE3..AVX-512, NEON and
// WASM SIMD128. Highway's one-lane fallback (HWY_SCALAR) gets plain loops.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_QUANT_PACKED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_QUANT_PACKED_INL_H_
#undef AMN_KERNELS_QUANT_PACKED_INL_H_
#else
#define AMN_KERNELS_QUANT_PACKED_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/byte_lookup-inl.h"
#include "kernels/quant/packed_lut.h"
#include "kernels/quant/quant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Byte shuffles (byte_lookup-inl.h: the swizzle instruction on WASM).
template <class V>
HWY_INLINE V Shuffle(V table, V index) { return amn::HWY_NAMESPACE::LookupBytes16(table, index); }
template <class V>
HWY_INLINE V ShuffleOr0(V table, V index) { return amn::HWY_NAMESPACE::LookupBytes16Or0(table, index); }
#endif

HWY_NOINLINE void UnpackNibbles(const uint8_t* HWY_RESTRICT bytes, size_t n, uint8_t* HWY_RESTRICT codes) {
  size_t k = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::Full128<uint8_t> d;
  const auto low4 = hn::Set(d, uint8_t{0x0F});
  for (; k + 32 <= n; k += 32) {
    const auto b = hn::LoadU(d, bytes + k / 2);
    const auto lo = hn::And(b, low4);
    const auto hi = hn::ShiftRight<4>(b);
    hn::StoreU(hn::InterleaveLower(d, lo, hi), d, codes + k);
    hn::StoreU(hn::InterleaveUpper(d, lo, hi), d, codes + k + 16);
  }
#endif
  for (; k < n; ++k) codes[k] = uint8_t((bytes[k / 2] >> (4 * (k & 1))) & 0x0F);
}

HWY_NOINLINE void NibbleOfWords(const uint8_t* HWY_RESTRICT words, size_t n, uint32_t nibble,
                                uint8_t* HWY_RESTRICT codes) {
  const uint32_t byte = nibble / 2, shift = 4 * (nibble & 1);
  size_t k = 0;
#if HWY_TARGET != HWY_SCALAR
  // Byte `byte` of each word of four 16-byte loads, gathered into the four quarters of
  // one vector (index 0x80: zero).
  const hn::Full128<uint8_t> d;
  HWY_ALIGN uint8_t index[4][16];
  std::memset(index, 0x80, sizeof index);
  for (uint32_t v = 0; v < 4; ++v) {
    for (uint32_t w = 0; w < 4; ++w) index[v][4 * v + w] = uint8_t(4 * w + byte);
  }
  const auto i0 = hn::Load(d, index[0]), i1 = hn::Load(d, index[1]);
  const auto i2 = hn::Load(d, index[2]), i3 = hn::Load(d, index[3]);
  const auto low4 = hn::Set(d, uint8_t{0x0F});
  for (; k + 16 <= n; k += 16) {
    const uint8_t* p = words + 4 * k;
    auto b = hn::Or(ShuffleOr0(hn::LoadU(d, p), i0), ShuffleOr0(hn::LoadU(d, p + 16), i1));
    b = hn::Or(b, hn::Or(ShuffleOr0(hn::LoadU(d, p + 32), i2), ShuffleOr0(hn::LoadU(d, p + 48), i3)));
    if (shift != 0) b = hn::ShiftRight<4>(b);
    hn::StoreU(hn::And(b, low4), d, codes + k);
  }
#endif
  for (; k < n; ++k) codes[k] = uint8_t((words[4 * k + byte] >> shift) & 0x0F);
}

#if HWY_TARGET != HWY_SCALAR
// 16 codes' outputs from the byte planes of one group.
template <size_t kOutBytes>
HWY_INLINE void Lookup16(const uint8_t* HWY_RESTRICT planes, const uint8_t* HWY_RESTRICT codes,
                         uint8_t* HWY_RESTRICT dst) {
  const hn::Full128<uint8_t> d;
  const auto c = hn::LoadU(d, codes);
  const auto b0 = Shuffle(hn::Load(d, planes), c);
  const auto b1 = Shuffle(hn::Load(d, planes + 16), c);
  if constexpr (kOutBytes == 2) {
    hn::StoreU(hn::InterleaveLower(d, b0, b1), d, dst);
    hn::StoreU(hn::InterleaveUpper(d, b0, b1), d, dst + 16);
  } else {
    const hn::Full128<uint16_t> d16;
    const auto b2 = Shuffle(hn::Load(d, planes + 32), c);
    const auto b3 = Shuffle(hn::Load(d, planes + 48), c);
    const auto l01 = hn::BitCast(d16, hn::InterleaveLower(d, b0, b1));
    const auto u01 = hn::BitCast(d16, hn::InterleaveUpper(d, b0, b1));
    const auto l23 = hn::BitCast(d16, hn::InterleaveLower(d, b2, b3));
    const auto u23 = hn::BitCast(d16, hn::InterleaveUpper(d, b2, b3));
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d16, l01, l23)), d, dst);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d16, l01, l23)), d, dst + 16);
    hn::StoreU(hn::BitCast(d, hn::InterleaveLower(d16, u01, u23)), d, dst + 32);
    hn::StoreU(hn::BitCast(d, hn::InterleaveUpper(d16, u01, u23)), d, dst + 48);
  }
}

template <size_t kOutBytes>
HWY_INLINE void LookupRun(const uint8_t* HWY_RESTRICT planes, const uint8_t* HWY_RESTRICT codes, size_t m,
                          uint8_t* HWY_RESTRICT dst) {
  size_t k = 0;
  for (; k + 16 <= m; k += 16) Lookup16<kOutBytes>(planes, codes + k, dst + k * kOutBytes);
  if (k < m) {
    // The codes buffer is padded (kCodePad); the outputs past the run are dropped.
    HWY_ALIGN uint8_t tail[16 * 4];
    Lookup16<kOutBytes>(planes, codes + k, tail);
    std::memcpy(dst + k * kOutBytes, tail, (m - k) * kOutBytes);
  }
}
#endif

HWY_NOINLINE void LookupRuns(const lut::Tables& t, size_t group, const uint8_t* HWY_RESTRICT codes, size_t n,
                             size_t first_run, size_t group_size, uint8_t* HWY_RESTRICT dst) {
  const size_t ob = t.out_bytes;
  size_t k = 0, run = first_run < n ? first_run : n;
  while (k < n) {
#if HWY_TARGET != HWY_SCALAR
    const uint8_t* planes = t.planes + group * ob * 16;
    if (ob == 2) {
      LookupRun<2>(planes, codes + k, run, dst + k * 2);
    } else {
      LookupRun<4>(planes, codes + k, run, dst + k * 4);
    }
#else
    for (size_t j = 0; j < run; ++j) std::memcpy(dst + (k + j) * ob, t.raw + (group * 16 + codes[k + j]) * ob, ob);
#endif
    k += run;
    ++group;
    run = n - k < group_size ? n - k : group_size;
  }
}

#if HWY_TARGET != HWY_SCALAR
// The target's bits of codes in one group, the reference's operations in order:
// round(q * scale) + bias (kBias) or (q - offset) * scale, rounded to kCanonical and cast
// to kTo. kMayBeNaN false: the group's scale and offset (bias) are finite, so no product,
// sum or difference of them and a code is NaN, and rounding skips its NaN test.
// Called with w = 2^23 + code as f32 (the code OR-ed into 2^23's bits: WASM has no
// int -> float instruction in the narrow form LLVM would pick): w - minus is the code as
// exact f32 (minus 2^23), or already code - offset when the offset is a whole number
// (kOffsetDone, minus 2^23 + offset: one subtraction for both).
template <DType kCanonical, DType kTo, bool kBias, bool kMayBeNaN, bool kOffsetDone = false>
struct AffineCompute {
  using DU = hn::ScalableTag<uint32_t>;
  using DF = hn::Rebind<float, DU>;
  using VF = hn::VFromD<DF>;
  VF s, add, minus;
  AffineCompute(float scale, float add_value, float minus_value)
      : s(hn::Set(DF(), scale)), add(hn::Set(DF(), add_value)), minus(hn::Set(DF(), minus_value)) {}
  HWY_INLINE hn::VFromD<DU> operator()(VF w) const {
    const DU du;
    const DF df;
    const VF q = hn::Sub(w, minus);
    VF v;
    if constexpr (kBias) {
      v = hn::Add(hn::BitCast(df, RoundTrip<kCanonical, kMayBeNaN>(du, hn::BitCast(du, hn::Mul(q, s)))), add);
    } else if constexpr (kOffsetDone) {
      v = hn::Mul(q, s);
    } else {
      v = hn::Mul(hn::Sub(q, add), s);
    }
    return RoundedTo<kCanonical, kTo, kMayBeNaN>(du, hn::BitCast(du, v));
  }
};

// The affine path with its dtypes and form fixed.
template <DType kCanonical, DType kTo, bool kBias>
HWY_NOINLINE void AffineRunsT(const lut::AffineArgs& a) {
  const float* add = kBias ? a.g.bias : a.g.offset;
#if HWY_TARGET == HWY_WASM
  // Codes16Runs (quant-inl.h): with NaN-free rounding when every group is finite (and
  // every offset foldable), else with the full rounding, or ScaledRuns' table where a
  // group is long enough.
  size_t groups = 1;
  if (a.n > a.first_run) groups += (a.n - a.first_run + a.group_size - 1) / a.group_size;
  bool finite = true;
  for (size_t g = 0; g < groups && finite; ++g) {
    finite = std::isfinite(a.g.scale[g]) && std::isfinite(add[g]) && (kBias || FoldableOffset(add[g]));
  }
  constexpr float kTwo23 = 8388608.0f;  // w - 2^23 = code
  if (finite) {
    return Codes16Runs<kTo>(a.codes, a.code_xor, a.n, a.first_run, a.group_size, a.dst, [&](size_t g) {
      const float minus = kBias ? kTwo23 : kTwo23 + add[g];
      return AffineCompute<kCanonical, kTo, kBias, false, !kBias>(a.g.scale[g], add[g], minus);
    });
  }
  if (a.first_run < kTable256MinCodes && a.group_size < kTable256MinCodes) {
    return Codes16Runs<kTo>(a.codes, a.code_xor, a.n, a.first_run, a.group_size, a.dst, [&](size_t g) {
      return AffineCompute<kCanonical, kTo, kBias, true>(a.g.scale[g], add[g], kTwo23);
    });
  }
#endif
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<float, decltype(du)> df;
  constexpr size_t kOut = OutBytes(kTo);
  const auto x = hn::Set(du, a.code_xor);
  const auto two23_bits = hn::Set(du, 0x4B000000u);
  size_t k = 0, run = a.first_run < a.n ? a.first_run : a.n;
  for (size_t group = 0; k < a.n; ++group) {
    const AffineCompute<kCanonical, kTo, kBias, true> compute(a.g.scale[group], add[group], 8388608.0f);
    // (per-channel scales on WASM: a table of the 256 outputs, quant-inl.h ScaledRuns)
    ScaledRuns<kOut>(du, a.codes + k, 1, run, 0, a.dst + k * kOut, [&](const uint8_t* c, uint8_t* o) {
      StoreOut<kTo>(du, compute(hn::BitCast(df, hn::Or(hn::Xor(LoadBytesToU32(du, c), x), two23_bits))), o);
    });
    k += run;
    run = a.n - k < a.group_size ? a.n - k : a.group_size;
  }
}

template <DType kCanonical, bool kBias>
HWY_INLINE void AffineRunsTo(DType out, const lut::AffineArgs& a) {
  if (out == DType::BF16) return AffineRunsT<kCanonical, DType::BF16, kBias>(a);
  if (out == DType::F16) return AffineRunsT<kCanonical, DType::F16, kBias>(a);
  AffineRunsT<kCanonical, DType::F32, kBias>(a);
}

template <bool kBias>
HWY_INLINE void AffineRunsCanonical(DType canonical, DType out, const lut::AffineArgs& a) {
  if (canonical == DType::BF16) return AffineRunsTo<DType::BF16, kBias>(out, a);
  if (canonical == DType::F16) return AffineRunsTo<DType::F16, kBias>(out, a);
  AffineRunsTo<DType::F32, kBias>(out, a);
}
#endif  // HWY_TARGET != HWY_SCALAR

// lut::affine_runs; false (nothing written) on Highway's one-lane fallback.
HWY_NOINLINE bool AffineRuns(DType canonical, DType out, const lut::AffineArgs& a) {
#if HWY_TARGET == HWY_SCALAR
  (void)canonical, (void)out, (void)a;
  return false;
#else
  if (a.g.bias) AffineRunsCanonical<true>(canonical, out, a);
  else AffineRunsCanonical<false>(canonical, out, a);
  return true;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace quant
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_QUANT_PACKED_INL_H_
