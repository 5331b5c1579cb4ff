// Highway helpers shared by the forget encoders' SIMD kernels (bnb_encode_simd.cpp,
// fp8_encode_simd.cpp), compiled per target by the files that include them. Each helper
// computes, lane by lane, exactly what the scalar reference computes for one value:
//  - AbsMaxBits: amax |x| as the integer max of the sign-cleared bits (for non-negative
//    floats the integer order is the float order, and every NaN is above +Inf), so NaN
//    is detected by the same pass; the callers go back to the reference's scan for the
//    NaN it returns (torch's amax lets the first one through).
//  - E4M3Clamped: c10's fp8e4m3fn_from_fp32_value (f32_to_e4m3fn) after the clamp to
//    +-448, one F32 add per lane that rounds like both of its branches (MLX's ToFP8 too:
//    E4M3ClampedSigned<false>).
//  - F16 / BF16 rounding: cast-inl.h's conversions, which are the scalar casts' bits
//    (tests_native/test_cast.cpp checks them on every target).
//  - EachVector: full vectors, then one zero-padded vector for the remainder (the padded
//    lanes' results are dropped), so no scalar tail has to be kept in step.

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_LETHE_ENCODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_LETHE_ENCODE_INL_H_
#undef AMN_KERNELS_LETHE_ENCODE_INL_H_
#else
#define AMN_KERNELS_LETHE_ENCODE_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/cast-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
namespace cast = ::amn::HWY_NAMESPACE;

// The largest sign-cleared bit pattern of n floats (> 0x7F800000: one of them is NaN).
HWY_INLINE uint32_t AbsMaxBits(const float* HWY_RESTRICT p, size_t n) {
  const hn::ScalableTag<int32_t> di;
  const size_t N = hn::Lanes(di);
  const auto mask = hn::Set(di, 0x7FFFFFFF);
  const int32_t* q = reinterpret_cast<const int32_t*>(p);
  auto m0 = hn::Zero(di), m1 = hn::Zero(di), m2 = hn::Zero(di), m3 = hn::Zero(di);
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    m0 = hn::Max(m0, hn::And(hn::LoadU(di, q + i), mask));
    m1 = hn::Max(m1, hn::And(hn::LoadU(di, q + i + N), mask));
    m2 = hn::Max(m2, hn::And(hn::LoadU(di, q + i + 2 * N), mask));
    m3 = hn::Max(m3, hn::And(hn::LoadU(di, q + i + 3 * N), mask));
  }
  for (; i + N <= n; i += N) m0 = hn::Max(m0, hn::And(hn::LoadU(di, q + i), mask));
  m0 = hn::Max(hn::Max(m0, m1), hn::Max(m2, m3));
  uint32_t r = static_cast<uint32_t>(hn::GetLane(hn::MaxOfLanes(di, m0)));
  for (; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, p + i, 4);
    u &= 0x7FFFFFFFu;
    r = u > r ? u : r;
  }
  return r;
}

#if HWY_TARGET != HWY_SCALAR

// E4M3 of torch.clamp(v, -448, 448) (the clamp skipped for NaN, as the references'
// `if (!isnan(v)) v = min(448, max(-448, v))`), without f32_to_e4m3fn's two branches and
// selects: |v|'s bits clamped to 448's by an integer min (a NaN's bits are above, so it
// becomes 448 too and gets 1 added at the end: 0x7F), then one F32 add of c = 2^(e + 20),
// e = max(|v|'s exponent, -6), rounds |v| to a multiple of 2^(e - 3) (E4M3's spacing in
// that binade, the subnormals' 2^-9 below 2^-6), ties to even; the sum's bits minus c's
// are the multiple k, and the code is k + 8 * (e + 6) (k = 16 reaches the next binade's
// code). The same codes as the reference for all 2^32 inputs (a one-off exhaustive run on
// x86, docs/benchmarks.md "WASM: E4M3 by one add"); tests_native/test_lethe_simd.cpp.
//
// E4M3ClampedSigned: the code of |v| ORed with `sign` (0 or 0x80000000 per lane, the
// caller's). kNaN7F: a NaN gets 0x7F (the references' clamp lets it through); without it
// 448's code 0x7E, as MLX's ToFP8 saturates every |v| >= 448, NaN included.
template <bool kNaN7F, class DF, class VF = hn::VFromD<DF>, class VU = hn::VFromD<hn::RebindToUnsigned<DF>>>
HWY_INLINE VU E4M3ClampedSigned(DF df, VF v, VU sign) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto a = hn::BitCast(di, hn::And(hn::BitCast(du, v), hn::Set(du, 0x7FFFFFFFu)));
  const auto am = hn::Min(a, hn::Set(di, 0x43E00000));  // 448.0f
  const auto eb = hn::Max(hn::And(am, hn::Set(di, 0x7F800000)), hn::Set(di, 121 << 23));
  const auto c = hn::Add(eb, hn::Set(di, 20 << 23));
  const auto s = hn::BitCast(di, hn::Add(hn::BitCast(df, am), hn::BitCast(df, c)));
  auto code = hn::Add(hn::Sub(s, c), hn::Sub(hn::ShiftRight<20>(eb), hn::Set(di, 968)));  // 968: 121 * 8
  if constexpr (kNaN7F) code = hn::Sub(code, hn::VecFromMask(di, hn::Gt(a, hn::Set(di, 0x7F800000))));  // NaN: + 1
  return hn::Or(hn::BitCast(du, code), hn::ShiftRight<24>(sign));
}
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE hn::VFromD<hn::RebindToUnsigned<DF>> E4M3Clamped(DF df, VF v) {
  const hn::RebindToUnsigned<DF> du;
  return E4M3ClampedSigned<true>(df, v, hn::And(hn::BitCast(du, v), hn::Set(du, 0x80000000u)));
}

// lethe::round_to(v, F16), i.e. f16_to_f32(f32_to_f16(v)), without the F16 bits: F16's
// normal range keeps 10 mantissa bits, rounded to nearest even in integer arithmetic (as
// F32ToBF16Bits keeps 7), and a sum reaching 2^16 is F16's infinity; below 2^-14 the
// value is rounded to a multiple of 2^-24 by the F32 adder ((|v| + 0.5) - 0.5, exact there,
// ties to even); NaN is F16's quiet NaN widened (sign | 0x7FC00000). The same bits as the
// scalar casts for every one of the 2^32 inputs (checked exhaustively on x86; see
// tests_native/test_lethe_simd.cpp). kFinite: the caller knows every lane is finite and
// rounds to a finite F16 (|v| < 65520), so the overflow and NaN selects are left out.
// kNormalOnly (with kFinite): the caller does not need F16's subnormals — every use of
// a value below 2^-14 gives what it gives for the value's F16 subnormal — so those lanes
// are rounded as normal ones (to 10 mantissa bits at their own exponent, still below 2^-14
// in magnitude, ties to even), leaving out the adder's path and its select.
template <bool kFinite = false, bool kNormalOnly = false, class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF RoundToF16(DF df, VF v) {
  static_assert(!kNormalOnly || kFinite, "kNormalOnly leaves out the NaN select too");
  const hn::RebindToUnsigned<DF> du;
  const auto u = hn::BitCast(du, v);
  const auto a = hn::And(u, hn::Set(du, 0x7FFFFFFFu));
  const auto sign = hn::Xor(u, a);
  const auto odd = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1u));
  auto r = hn::And(hn::Add(a, hn::Add(odd, hn::Set(du, 0xFFFu))), hn::Set(du, 0xFFFFE000u));
  if constexpr (!kFinite) r = hn::IfThenElse(cast::GreaterSmall(du, r, 0x477FFFFFu), hn::Set(du, 0x7F800000u), r);
  if constexpr (kNormalOnly) return hn::BitCast(df, hn::Or(sign, r));
  const auto half = hn::Set(df, 0.5f);
  const auto sub = hn::BitCast(du, hn::Sub(hn::Add(hn::BitCast(df, a), half), half));
  r = hn::IfThenElse(cast::GreaterSmall(du, a, 0x387FFFFFu), r, sub);
  if constexpr (!kFinite) r = hn::IfThenElse(cast::GreaterSmall(du, a, 0x7F800000u), hn::Set(du, 0x7FC00000u), r);
  return hn::BitCast(df, hn::Or(sign, r));
}
template <class DF, class VF = hn::VFromD<DF>>
HWY_INLINE VF RoundToBF16(DF df, VF v) {
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(df, hn::ShiftLeft<16>(cast::F32ToBF16Bits(du, hn::BitCast(du, v), 0xFFFFu)));
}

// fn(v) -> u32 lanes whose low bytes are the outputs, for each f32 vector of in[0, n):
// out[i] = low byte of lane i. The last partial vector is zero-padded.
template <class DF, class Fn>
HWY_INLINE void EachVector(DF df, const float* HWY_RESTRICT in, size_t n, uint8_t* HWY_RESTRICT out, const Fn& fn) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint8_t, DF> d8;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  const hn::RebindToUnsigned<DF> du;
  const auto low = hn::Set(du, 0xFFu);
#if HWY_TARGET == HWY_WASM
  // Four vectors narrowed to one full 16-byte store (DemoteTo would narrow each vector
  // twice and store 4 bytes); every value is below 256, so the saturating narrows are exact.
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto a = hn::And(fn(hn::LoadU(df, in + i)), low), b = hn::And(fn(hn::LoadU(df, in + i + N)), low);
    const auto c = hn::And(fn(hn::LoadU(df, in + i + 2 * N)), low), e = hn::And(fn(hn::LoadU(df, in + i + 3 * N)), low);
    wasm_v128_store(out + i, wasm_u8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(a.raw, b.raw),
                                                     wasm_i16x8_narrow_i32x4(c.raw, e.raw)));
  }
#endif
  for (; i + N <= n; i += N) hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, hn::And(fn(hn::LoadU(df, in + i)), low))), d8, out + i);
  if (i == n) return;
  HWY_ALIGN float pad[HWY_MAX_BYTES / sizeof(float)] = {};
  uint8_t bytes[HWY_MAX_BYTES / sizeof(float)];
  std::memcpy(pad, in + i, (n - i) * sizeof(float));
  hn::StoreU(hn::DemoteTo(d8, hn::BitCast(di, hn::And(fn(hn::Load(df, pad)), low))), d8, bytes);
  std::memcpy(out + i, bytes, n - i);
}

#endif  // HWY_TARGET != HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace lethe
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
