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
// E4M3 with E8M0 scales (MLX mxfp8) to BF16 / F32: integer construction of the exact
// product's bits where it stays normal (Pow2Run), the multiply elsewhere.

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

// E8M0 scales (MLX mxfp8): an E4M3 value times 2^(s - 127) is exact in BF16 and F32
// (4 significant bits) while it stays a normal number, which it does for every code when
// 10 <= s <= 246 (the least subnormal code, 2^-9, reaches exponent field s - 9; 448,
// field s + 8). Then the product's BF16 bits come from the code's in integer arithmetic:
// magnitude = (low7 << 4) + table[min(low7, 8) - 1], the table (16 bytes, indexed with a
// byte shuffle) holding (s - 7) << 7 for normal codes (exponent e, mantissa m: field
// e + s - 7) and, for subnormal codes m * 2^-9, what turns m << 4 into their normalised
// bits; code 0 indexes past the table, which gives 0. Sign bit OR-ed back, NaN codes as
// the reference writes them. The same bits as the multiply; returns how many of the n
// elements it wrote (0 outside that range of s: the caller multiplies).
constexpr int16_t Pow2SubnormalBase(int m) {  // m = 1..7: exponent field offset k = floor(log2 m)
  const int k = m >= 4 ? 2 : m >= 2 ? 1 : 0;
  return static_cast<int16_t>(((k - 9) * 128) + ((m << (7 - k)) & 0x7F) - (m << 4));
}

// Lanes(d16) codes at w to out (Pow2Run's step); kNaN: the codes may hold NaN codes.
template <DType kTo, bool kNaN, class D16, class V = hn::VFromD<D16>>
HWY_INLINE void Pow2Vector(D16 d16, const uint8_t* HWY_RESTRICT w, V table, V nan, uint8_t* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_WASM
  const V code{wasm_i16x8_load8x8(w)};  // one v128.load8x8_s
#else
  const V code = hn::PromoteTo(d16, hn::LoadU(hn::Rebind<int8_t, D16>(), reinterpret_cast<const int8_t*>(w)));
#endif
  const V low7 = hn::And(code, hn::Set(d16, 0x7F));
  // Bytes 2j and 2j + 1 of the table for j = min(low7, 8) - 1; 0xFEFE (past it) for code 0.
  const V index = hn::Sub(hn::Mul(hn::Min(low7, hn::Set(d16, 8)), hn::Set(d16, 0x0202)), hn::Set(d16, 0x0102));
  // Sign and low7 << 4 at once: the sign-extended code shifted left by 4 has bits 11-15 set
  // for a negative code; 0x87FF keeps bit 15 of them.
  const V signed_low = hn::And(hn::ShiftLeft<4>(code), hn::Set(d16, static_cast<int16_t>(0x87FF)));
  V bits = hn::Add(amn::HWY_NAMESPACE::LookupBytes16Or0(table, index), signed_low);
  if constexpr (kNaN) bits = hn::IfThenElse(hn::Eq(low7, hn::Set(d16, 0x7F)), hn::Or(nan, hn::And(code, hn::Set(d16, INT16_MIN))), bits);
  const hn::RebindToUnsigned<D16> du16;
  if constexpr (kTo == DType::BF16) {
    cast::StoreBytes(du16, hn::BitCast(du16, bits), out);
  } else {
    const hn::Half<decltype(du16)> dh;
    const hn::Rebind<uint32_t, decltype(dh)> d32;
    const auto u = hn::BitCast(du16, bits);
    cast::StoreBytes(d32, hn::ShiftLeft<16>(hn::PromoteTo(d32, hn::LowerHalf(dh, u))), out);
    cast::StoreBytes(d32, hn::ShiftLeft<16>(hn::PromoteTo(d32, hn::UpperHalf(dh, u))), out + 2 * hn::Lanes(d16));
  }
}

// Whether any of n E4M3 codes is a NaN code (0x7F, 0xFF): (code & 0x7F) + 1 reaches bit 7.
HWY_INLINE bool AnyE4M3NaN(const uint8_t* HWY_RESTRICT w, size_t n) {
  const hn::ScalableTag<uint8_t> d8;
  auto seen = hn::Zero(d8);
  size_t i = 0;
  for (; i + hn::Lanes(d8) <= n; i += hn::Lanes(d8))
    seen = hn::Or(seen, hn::Add(hn::And(hn::LoadU(d8, w + i), hn::Set(d8, 0x7F)), hn::Set(d8, 1)));
  if (!hn::AllFalse(d8, hn::TestBit(seen, hn::Set(d8, 0x80)))) return true;
  for (; i < n; ++i)
    if ((w[i] & 0x7F) == 0x7F) return true;
  return false;
}

template <DType kTo, bool kNaN>
HWY_INLINE size_t Pow2Run(const uint8_t* HWY_RESTRICT w, size_t n, uint8_t s, uint8_t* HWY_RESTRICT out) {
  if (s < 10 || s > 246) return 0;
  const hn::ScalableTag<int16_t> d16;  // codes sign-extended
  const size_t lanes = hn::Lanes(d16);
  constexpr size_t kOut = OutBytes(kTo);
  alignas(16) static constexpr int16_t kBase[8] = {
      Pow2SubnormalBase(1), Pow2SubnormalBase(2), Pow2SubnormalBase(3), Pow2SubnormalBase(4),
      Pow2SubnormalBase(5), Pow2SubnormalBase(6), Pow2SubnormalBase(7), -7 * 128};
  const auto table = hn::Add(hn::LoadDup128(d16, kBase), hn::Set(d16, static_cast<int16_t>(s << 7)));
  // A NaN code's F32 is sign | 0x7FC00000; PyTorch's BF16 cast of any NaN is 0xFFFF (cast.h).
  const auto nan = hn::Set(d16, static_cast<int16_t>(kTo == DType::BF16 ? -1 : 0x7FC0));
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) Pow2Vector<kTo, kNaN>(d16, w + i, table, nan, out + i * kOut);
  return i;
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
  if constexpr (!kE5M2 && kCompute == DType::F32 && kTo != DType::F16) {
    if (p.scale == DType::F8_E8M0) {  // a run per row and block: Pow2Run, the rest multiplied
      for (uint64_t r = row_begin; r < row_end; ++r) {
        const uint8_t* row_scales = scales + r / p.block_rows * p.scale_cols;
        // 128-bit vectors: rows without NaN codes (every row a quantizer writes) skip the NaN
        // select, at the cost of a pass over the row (1.13x on WASM and SSE4; a loss with
        // AVX2 / AVX-512, whose wider vectors test fewer times).
        const bool nan_codes =
            HWY_MAX_BYTES > 16 || AnyE4M3NaN(weight + (r - row_begin) * p.cols, static_cast<size_t>(p.cols));
        for (uint64_t c = 0, g = 0; c < p.cols; c += p.block_cols, ++g) {  // g: the block, no division
          const uint64_t n = p.cols - c < p.block_cols ? p.cols - c : p.block_cols;
          const uint64_t first = (r - row_begin) * p.cols + c;
          const uint8_t* w = weight + first;
          uint8_t* o = out + first * kOut;
          const size_t done = nan_codes ? Pow2Run<kTo, true>(w, static_cast<size_t>(n), row_scales[g], o)
                                        : Pow2Run<kTo, false>(w, static_cast<size_t>(n), row_scales[g], o);
          if (done < n) runs(first + done, 1, n - done, e8m0_to_f32(row_scales[g]));
        }
      }
      return;
    }
  }
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
