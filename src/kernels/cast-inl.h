// SIMD casts, written once against Highway and compiled per target: cast.cpp includes
// this through hwy/foreach_target.h (skeleton-inl.h style). Each kernel gives exactly
// the bytes of the scalar reference (cast_scalar.cpp); the F16/BF16 bit manipulation is
// our own because Highway 1.0.3's bf16 DemoteTo truncates and its f16 conversions
// differ between targets (NaNs, emulation). Leftover elements go to the reference.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_CAST_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_CAST_INL_H_
#undef AMN_KERNELS_CAST_INL_H_
#else
#define AMN_KERNELS_CAST_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"
#include "kernels/cast.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Tensor bytes need not be aligned to the element size: load and store u8 lanes and
// reinterpret them.
template <class D>
HWY_INLINE hn::VFromD<D> LoadBytes(D d, const uint8_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
  // One lane: Highway cannot BitCast one u8 to a wider lane here.
  hn::TFromD<D> t;
  hwy::CopyBytes<sizeof(t)>(p, &t);
  return hn::Set(d, t);
#else
  const hn::Repartition<uint8_t, D> du8;
  return hn::BitCast(d, hn::LoadU(du8, p));
#endif
}

template <class D>
HWY_INLINE void StoreBytes(D /*d*/, hn::VFromD<D> v, uint8_t* HWY_RESTRICT p) {
#if HWY_TARGET == HWY_SCALAR
  const hn::TFromD<D> t = hn::GetLane(v);
  hwy::CopyBytes<sizeof(t)>(&t, p);
#else
  const hn::Repartition<uint8_t, D> du8;
  hn::StoreU(hn::BitCast(du8, v), du8, p);
#endif
}

// How many leading elements to give to the reference so that vector loads start at a
// multiple of their size: 64-byte loads that straddle cache lines run at half speed
// (measured on Zen 5, bench/README.md). Possible only when `in` is aligned to its
// element size, as tensor data in files usually is.
HWY_INLINE size_t ElementsToAlign(const uint8_t* in, size_t elem_bytes, size_t vector_bytes,
                                  size_t count) {
  const size_t address = reinterpret_cast<uintptr_t>(in);
  if (address % elem_bytes != 0 || address % vector_bytes == 0) return 0;
  const size_t head = (vector_bytes - address % vector_bytes) / elem_bytes;
  return head < count ? head : count;
}

// a > b for u32 lanes known to be below 2^31 (signed compares exist on every target).
template <class DU32, class V = hn::VFromD<DU32>>
HWY_INLINE auto GreaterSmall(DU32 du32, V a, uint32_t b) {
  const hn::RebindToSigned<DU32> di32;
  return hn::RebindMask(du32, hn::Gt(hn::BitCast(di32, a), hn::Set(di32, int32_t(b))));
}

// F32 bits -> BF16 bits in the low half of each u32 lane (round_bf16 in the reference).
// kMayBeNaN false: the caller knows no lane is NaN, and the NaN select is left out.
// Infinities stay infinite and finite values that round past the largest BF16 become
// infinite, as in the reference; no sum wraps (at most 0xFF800000 + 0x8000).
template <bool kMayBeNaN = true, class DU32, class V = hn::VFromD<DU32>>
HWY_INLINE V F32ToBF16Bits(DU32 du32, V u, uint32_t nan_bits) {
  const V lowest_kept = hn::And(hn::ShiftRight<16>(u), hn::Set(du32, 1));
  const V rounded = hn::ShiftRight<16>(hn::Add(u, hn::Add(lowest_kept, hn::Set(du32, 0x7FFF))));
  if constexpr (!kMayBeNaN) return rounded;
  const auto is_nan = GreaterSmall(du32, hn::And(u, hn::Set(du32, 0x7FFFFFFFu)), 0x7F800000u);
  return hn::IfThenElse(is_nan, hn::Set(du32, nan_bits), rounded);
}

// F32 bits -> F16 bits in the low half of each u32 lane: the reference's float trick,
// operation for operation (-ffp-contract=off keeps Mul and Add unfused). The clamp of
// the exponent is done on (w & 0x7F800000), which is the reference's `bias >> 1`, so it
// stays below 2^31 and a signed Max works on every target.
// kMayBeNaN false: as F32ToBF16Bits.
template <bool kMayBeNaN = true, class DU32, class V = hn::VFromD<DU32>>
HWY_INLINE V F32ToF16Bits(DU32 du32, V w) {
  const hn::Rebind<float, DU32> df32;
  const hn::RebindToSigned<DU32> di32;
  const V nonsign_w = hn::And(w, hn::Set(du32, 0x7FFFFFFFu));
  auto base = hn::Mul(hn::Mul(hn::BitCast(df32, nonsign_w), hn::Set(df32, 0x1.0p+112f)),
                      hn::Set(df32, 0x1.0p-110f));
  const auto half_bias =
      hn::Max(hn::BitCast(di32, hn::And(w, hn::Set(du32, 0x7F800000u))), hn::Set(di32, 0x38800000));
  const V bias_bits = hn::Add(hn::BitCast(du32, half_bias), hn::Set(du32, 0x07800000u));
  base = hn::Add(hn::BitCast(df32, bias_bits), base);
  const V bits = hn::BitCast(du32, base);
  const V exp_bits = hn::And(hn::ShiftRight<13>(bits), hn::Set(du32, 0x7C00u));
  const V mantissa_bits = hn::And(bits, hn::Set(du32, 0x0FFFu));
  const V nonsign = hn::Add(exp_bits, mantissa_bits);
  const V sign = hn::ShiftRight<16>(hn::And(w, hn::Set(du32, 0x80000000u)));
  if constexpr (!kMayBeNaN) return hn::Or(sign, nonsign);
  const auto is_nan = GreaterSmall(du32, nonsign_w, 0x7F800000u);
  return hn::Or(sign, hn::IfThenElse(is_nan, hn::Set(du32, 0x7E00u), nonsign));
}

// F16 bits (low half of each u32 lane) -> F32 bits, as the reference computes them.
template <class DU32, class V = hn::VFromD<DU32>>
HWY_INLINE V F16ToF32Bits(DU32 du32, V h) {
  const hn::Rebind<float, DU32> df32;
  const V sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du32, 0x8000u)));
  const V nonsign = hn::And(h, hn::Set(du32, 0x7FFFu));
  const V shifted = hn::ShiftLeft<13>(nonsign);
  const V normal = hn::Add(shifted, hn::Set(du32, 0x38000000u));
  // Exponent 31: OR-ing 0x7F800000 onto (0x7C00 | m) << 13 gives 0x7F800000 | m << 13.
  const V inf = hn::Or(shifted, hn::Set(du32, 0x7F800000u));
  const V inf_or_nan =
      hn::IfThenElse(GreaterSmall(du32, nonsign, 0x7C00u), hn::Or(inf, hn::Set(du32, 0x00400000u)), inf);
  // Subnormals and zero: (0.5 + m * 2^-24) - 0.5 is exactly m * 2^-24, the value the
  // reference gets by int -> float conversion; the float subtraction only ever sees
  // finite values. (A vector ConvertTo is avoided: LLVM narrows it to an unsigned
  // 16-bit conversion that WASM SIMD lacks, and scalarizes it.)
  const V subnormal = hn::BitCast(
      du32, hn::Sub(hn::BitCast(df32, hn::Or(nonsign, hn::Set(du32, 0x3F000000u))), hn::Set(df32, 0.5f)));
  V r = hn::IfThenElse(GreaterSmall(du32, nonsign, 0x7BFFu), inf_or_nan, normal);
  r = hn::IfThenElse(GreaterSmall(du32, nonsign, 0x03FFu), r, subnormal);
  return hn::Or(sign, r);
}

// Element conversions on u32 lanes holding the source bits (16-bit sources in the low
// half); Narrow/Widen/Same below run them over arrays.
struct F32ToBF16 {
  static constexpr DType kFrom = DType::F32, kTo = DType::BF16;
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V v) { return F32ToBF16Bits(d, v, 0xFFFFu); }
};
struct F32ToF16 {
  static constexpr DType kFrom = DType::F32, kTo = DType::F16;
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V v) { return F32ToF16Bits(d, v); }
};
struct F16ToF32 {
  static constexpr DType kFrom = DType::F16, kTo = DType::F32;
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V v) { return F16ToF32Bits(d, v); }
};
struct BF16ToF32 {
  static constexpr DType kFrom = DType::BF16, kTo = DType::F32;
  template <class D, class V>
  static HWY_INLINE V Apply(D /*d*/, V v) { return hn::ShiftLeft<16>(v); }
};
struct F16ToBF16 {
  static constexpr DType kFrom = DType::F16, kTo = DType::BF16;
  // F16 NaNs give 0x7FC0 here, not F32's 0xFFFF (see cast.h).
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V v) { return F32ToBF16Bits(d, F16ToF32Bits(d, v), 0x7FC0u); }
};
struct BF16ToF16 {
  static constexpr DType kFrom = DType::BF16, kTo = DType::F16;
  template <class D, class V>
  static HWY_INLINE V Apply(D d, V v) { return F32ToF16Bits(d, hn::ShiftLeft<16>(v)); }
};

// 4-byte -> 2-byte elements.
template <class Op>
HWY_NOINLINE void Narrow(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t count) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const hn::RebindToSigned<decltype(du32)> di32;
  const size_t n = hn::Lanes(du32);
  size_t i = ElementsToAlign(in, 4, n * 4, count);
  scalar::cast_floats(Op::kFrom, Op::kTo, in, out, i);
  for (; i + n <= count; i += n) {
    const auto r = Op::Apply(du32, LoadBytes(du32, in + 4 * i));
    StoreBytes(du16, hn::DemoteTo(du16, hn::BitCast(di32, r)), out + 2 * i);  // r <= 0xFFFF
  }
  scalar::cast_floats(Op::kFrom, Op::kTo, in + 4 * i, out + 2 * i, count - i);
}

// 2-byte -> 4-byte elements.
template <class Op>
HWY_NOINLINE void Widen(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t count) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const size_t n = hn::Lanes(du32);
  size_t i = ElementsToAlign(in, 2, n * 2, count);
  scalar::cast_floats(Op::kFrom, Op::kTo, in, out, i);
#if HWY_TARGET != HWY_SCALAR
  // A whole vector of 16-bit lanes per load, widened in two halves: fewer, full loads
  // (WASM's BF16 -> F32 gained a quarter).
  const hn::Repartition<uint16_t, decltype(du32)> du16x2;
  const hn::Half<decltype(du16x2)> du16h;
  for (; i + 2 * n <= count; i += 2 * n) {
    const auto v = LoadBytes(du16x2, in + 2 * i);
    StoreBytes(du32, Op::Apply(du32, hn::PromoteTo(du32, hn::LowerHalf(du16h, v))), out + 4 * i);
    StoreBytes(du32, Op::Apply(du32, hn::PromoteTo(du32, hn::UpperHalf(du16h, v))), out + 4 * (i + n));
  }
#endif
  for (; i + n <= count; i += n) {
    const auto h = hn::PromoteTo(du32, LoadBytes(du16, in + 2 * i));
    StoreBytes(du32, Op::Apply(du32, h), out + 4 * i);
  }
  scalar::cast_floats(Op::kFrom, Op::kTo, in + 2 * i, out + 4 * i, count - i);
}

// 2-byte -> 2-byte elements, through u32 lanes.
template <class Op>
HWY_NOINLINE void Same(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t count) {
  const hn::ScalableTag<uint32_t> du32;
  const hn::Rebind<uint16_t, decltype(du32)> du16;
  const hn::RebindToSigned<decltype(du32)> di32;
  const size_t n = hn::Lanes(du32);
  size_t i = ElementsToAlign(in, 2, n * 2, count);
  scalar::cast_floats(Op::kFrom, Op::kTo, in, out, i);
#if HWY_TARGET != HWY_SCALAR
  // As in Widen: whole vectors in and out, converted in two halves.
  const hn::Repartition<uint16_t, decltype(du32)> du16x2;
  const hn::Half<decltype(du16x2)> du16h;
  for (; i + 2 * n <= count; i += 2 * n) {
    const auto v = LoadBytes(du16x2, in + 2 * i);
    const auto lo = Op::Apply(du32, hn::PromoteTo(du32, hn::LowerHalf(du16h, v)));
    const auto hi = Op::Apply(du32, hn::PromoteTo(du32, hn::UpperHalf(du16h, v)));
    const auto r = hn::Combine(du16x2, hn::DemoteTo(du16h, hn::BitCast(di32, hi)),
                               hn::DemoteTo(du16h, hn::BitCast(di32, lo)));
    StoreBytes(du16x2, r, out + 2 * i);
  }
#endif
  for (; i + n <= count; i += n) {
    const auto r = Op::Apply(du32, hn::PromoteTo(du32, LoadBytes(du16, in + 2 * i)));
    StoreBytes(du16, hn::DemoteTo(du16, hn::BitCast(di32, r)), out + 2 * i);
  }
  scalar::cast_floats(Op::kFrom, Op::kTo, in + 2 * i, out + 2 * i, count - i);
}

// F64 -> F32 with the hardware conversion, only where every lane is finite and within
// float's range: NaN bits would be unspecified on WASM, and Highway's emulated targets
// saturate overflow to FLT_MAX. Other vectors (rare in real weights) go to the reference.
// Highway 1.0.3 has no f64 vectors on WASM: there the reference does it all.
// inline: other kernels' -inl.h files include this one too (one definition per program).
inline HWY_NOINLINE void F64ToF32(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t count) {
#if HWY_HAVE_FLOAT64
  const hn::ScalableTag<double> df64;
  const hn::Rebind<float, decltype(df64)> df32;
  const size_t n = hn::Lanes(df64);
  const auto limit = hn::Set(df64, 3.4028234663852886e+38);  // FLT_MAX
  size_t i = ElementsToAlign(in, 8, n * 8, count);
  scalar::cast_floats(DType::F64, DType::F32, in, out, i);
  for (; i + n <= count; i += n) {
    const auto v = LoadBytes(df64, in + 8 * i);
    if (HWY_LIKELY(hn::AllTrue(df64, hn::Le(hn::Abs(v), limit)))) {
      StoreBytes(df32, hn::DemoteTo(df32, v), out + 4 * i);
    } else {
      scalar::cast_floats(DType::F64, DType::F32, in + 8 * i, out + 4 * i, n);
    }
  }
  scalar::cast_floats(DType::F64, DType::F32, in + 8 * i, out + 4 * i, count - i);
#else
  scalar::cast_floats(DType::F64, DType::F32, in, out, count);
#endif
}

// F64 -> F16/BF16 through F32, a stack block at a time (no allocation).
template <class Op>
HWY_NOINLINE void F64ToHalf(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t count) {
  constexpr size_t kBlock = 512;  // a multiple of every target's lane count
  HWY_ALIGN uint8_t f32[kBlock * 4];
  for (size_t i = 0; i < count; i += kBlock) {
    const size_t m = count - i < kBlock ? count - i : kBlock;
    F64ToF32(in + 8 * i, f32, m);
    Narrow<Op>(f32, out + 2 * i, m);
  }
}

// The per-target entry point exported to cast.cpp. Pairs without a kernel (copies,
// unsupported types) go to the reference.
inline HWY_NOINLINE void CastFloats(DType from, DType to, const uint8_t* in, uint8_t* out, size_t count) {
  using D = DType;
  if (from == D::F32 && to == D::BF16) return Narrow<F32ToBF16>(in, out, count);
  if (from == D::F32 && to == D::F16) return Narrow<F32ToF16>(in, out, count);
  if (from == D::F16 && to == D::F32) return Widen<F16ToF32>(in, out, count);
  if (from == D::BF16 && to == D::F32) return Widen<BF16ToF32>(in, out, count);
  if (from == D::F16 && to == D::BF16) return Same<F16ToBF16>(in, out, count);
  if (from == D::BF16 && to == D::F16) return Same<BF16ToF16>(in, out, count);
  if (from == D::F64 && to == D::F32) return F64ToF32(in, out, count);
  if (from == D::F64 && to == D::F16) return F64ToHalf<F32ToF16>(in, out, count);
  if (from == D::F64 && to == D::BF16) return F64ToHalf<F32ToBF16>(in, out, count);
  scalar::cast_floats(from, to, in, out, count);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_CAST_INL_H_
