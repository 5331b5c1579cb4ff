// FP8 weight dequantization in Highway, compiled per target by fp8_simd.cpp; bytes
// identical to the reference (fp8.cpp) on every target. Elements that share a scale form
// runs (whole rows for per-tensor and per-channel scales, one row's block for block
// scales), each done in full vectors of f32 lanes:
//  - E4M3: built from bits as fp8_to_f32 builds it (subnormal codes m * 2^-9, exact);
//    the sign is OR-ed afterwards, NaN codes are sign | 0x7FC00000.
//  - E5M2: code << 8 is an F16, widened as cast-inl.h widens F16.
//  - the product and the casts to the target are the reference's, operation for operation.
// On WASM, runs of one scale long enough (a block's rows, whole rows per channel) are
// looked up in a table of the 256 outputs that arithmetic gives (quant-inl.h ScaledRuns).

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_QUANT_FP8_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_QUANT_FP8_INL_H_
#undef AMN_KERNELS_QUANT_FP8_INL_H_
#else
#define AMN_KERNELS_QUANT_FP8_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/cast.h"
#include "kernels/quant/quant-inl.h"
#include "kernels/quant/fp4_values.h"
#include "kernels/quant/fp8.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

// The reference's load_scale.
HWY_INLINE float Fp8Scale(DType t, const uint8_t* base, uint64_t index) {
  if (t == DType::F32) {
    float f;
    std::memcpy(&f, base + 4 * index, 4);
    return f;
  }
  if (t == DType::F8_E8M0) return e8m0_to_f32(base[index]);
  const uint16_t h = static_cast<uint16_t>(base[2 * index] | (base[2 * index + 1] << 8));
  return t == DType::BF16 ? scalar::bf16_to_f32(h) : scalar::f16_to_f32(h);
}

// Lanes(du) codes at w times s, written to out as kTo (kCompute: the dtype the product
// is rounded to first, as fp8.h describes).
template <bool kE5M2, DType kCompute, DType kTo, class DU, class VF = hn::VFromD<hn::Rebind<float, DU>>>
HWY_INLINE void Fp8Vector(DU du, const uint8_t* HWY_RESTRICT w, VF s, uint8_t* HWY_RESTRICT out) {
  using V = hn::VFromD<DU>;
  const hn::Rebind<float, DU> df;
  const V code = LoadBytesToU32(du, w);
  const V low7 = hn::And(code, hn::Set(du, 0x7Fu));
  V value;  // f32 bits of the code
  auto nan = hn::Eq(low7, hn::Set(du, 0x7Fu));
  if constexpr (kE5M2) {
    nan = cast::GreaterSmall(du, low7, 0x7Cu);
    value = cast::F16ToF32Bits(du, hn::ShiftLeft<8>(code));
  } else {
    // Normal codes: the exponent rebiased (+120) in integer arithmetic. Subnormal codes
    // (exponent 0): m * 2^-9, with m converted exactly through 2^23 + m; every float
    // operation sees normal numbers (x86 takes a slow assist on subnormal operands).
    const V normal = hn::Add(hn::ShiftLeft<20>(low7), hn::Set(du, 120u << 23));
    const auto m = hn::Sub(hn::BitCast(df, hn::Or(low7, hn::Set(du, 0x4B000000u))), hn::Set(df, 8388608.0f));
    const V subnormal = hn::BitCast(du, hn::Mul(m, hn::Set(df, 0x1.0p-9f)));
    const V magnitude = hn::IfThenElse(cast::GreaterSmall(du, low7, 7u), normal, subnormal);
    const V sign = hn::ShiftLeft<24>(hn::And(code, hn::Set(du, 0x80u)));
    value = hn::Or(sign, hn::IfThenElse(nan, hn::Set(du, 0x7FC00000u), magnitude));
  }
  const V prod = hn::BitCast(du, hn::Mul(hn::BitCast(df, value), s));
  // F32 compute: a NaN code stays the NaN it decodes to, whatever the scale.
  const V r = RoundedTo<kCompute, kTo>(du, kCompute == DType::F32 ? hn::IfThenElse(nan, value, prod) : prod);
  StoreOut<kTo>(du, r, out);
}

template <bool kE5M2, DType kCompute, DType kTo>
HWY_NOINLINE void Fp8Rows(const Fp8Params& p, const uint8_t* HWY_RESTRICT weight, const uint8_t* HWY_RESTRICT scales,
                          uint64_t row_begin, uint64_t row_end, uint8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<float, decltype(du)> df;
  constexpr size_t kOut = OutBytes(kTo);
  // `rows` runs of n elements from element `first` of the range, cols apart, scale s.
  auto runs = [&](uint64_t first, uint64_t rows, uint64_t n, float s) {
    const auto vs = hn::Set(df, s);
    ScaledRuns<kOut>(du, weight + first, static_cast<size_t>(rows), static_cast<size_t>(n),
                     static_cast<size_t>(p.cols), out + first * kOut,
                     [&](const uint8_t* w, uint8_t* o) { Fp8Vector<kE5M2, kCompute, kTo>(du, w, vs, o); });
  };
  for (uint64_t r = row_begin; r < row_end;) {
    const uint64_t sr = r / p.block_rows;
    const uint64_t stop = row_end < (sr + 1) * p.block_rows ? row_end : (sr + 1) * p.block_rows;
    if (p.scale_cols == 1) {
      runs((r - row_begin) * p.cols, 1, (stop - r) * p.cols, Fp8Scale(p.scale, scales, sr));  // whole rows: one run
      r = stop;
      continue;
    }
    // Block scales: where ScaledRuns builds tables, a block's rows at once (one table per
    // block); elsewhere row by row, in memory order (walking a 128 x 128 block's rows,
    // 11 KiB and more apart, ran 20x slower with AVX-512).
    const uint64_t rows_at_once = kScaledRunTables ? stop - r : 1;
    for (; r < stop; r += rows_at_once) {
      for (uint64_t c = 0; c < p.cols; c += p.block_cols) {
        const uint64_t n = p.cols - c < p.block_cols ? p.cols - c : p.block_cols;
        runs((r - row_begin) * p.cols + c, rows_at_once, n,
             Fp8Scale(p.scale, scales, sr * p.scale_cols + c / p.block_cols));
      }
    }
  }
}

template <bool kE5M2, DType kCompute>
HWY_INLINE void Fp8RowsTo(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                          uint64_t row_end, DType to, uint8_t* out) {
  if (to == DType::BF16) return Fp8Rows<kE5M2, kCompute, DType::BF16>(p, weight, scales, row_begin, row_end, out);
  if (to == DType::F16) return Fp8Rows<kE5M2, kCompute, DType::F16>(p, weight, scales, row_begin, row_end, out);
  Fp8Rows<kE5M2, kCompute, DType::F32>(p, weight, scales, row_begin, row_end, out);
}

template <bool kE5M2>
HWY_INLINE void Fp8RowsCompute(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                               uint64_t row_end, DType to, uint8_t* out) {
  if (p.compute == DType::BF16) return Fp8RowsTo<kE5M2, DType::BF16>(p, weight, scales, row_begin, row_end, to, out);
  if (p.compute == DType::F16) return Fp8RowsTo<kE5M2, DType::F16>(p, weight, scales, row_begin, row_end, to, out);
  Fp8RowsTo<kE5M2, DType::F32>(p, weight, scales, row_begin, row_end, to, out);
}

#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry point exported by fp8_simd.cpp; false (nothing written) where
// there is no kernel (Highway's one-lane fallback target).
HWY_NOINLINE bool Fp8RowsSimd(const Fp8Params& p, const uint8_t* weight, const uint8_t* scales, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)p, (void)weight, (void)scales, (void)row_begin, (void)row_end, (void)to, (void)out;
  return false;
#else
  if (p.weight == DType::F8_E5M2) Fp8RowsCompute<true>(p, weight, scales, row_begin, row_end, to, out);
  else Fp8RowsCompute<false>(p, weight, scales, row_begin, row_end, to, out);
  return true;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace quant
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_QUANT_FP8_INL_H_
