// bitsandbytes dequantization in Highway, compiled per target by bnb_simd.cpp; bytes
// identical to the reference (bnb.cpp) on every target.
//  - NF4 / FP4: one absmax per block of at least 32 elements, so each block builds its
//    16-entry table of lut[code] * absmax outputs (quant-inl.h; FP4's code 8 stays -0.0)
//    and looks its codes up per nibble, high nibble first. Ranges may start and end
//    anywhere (odd elements included): the block edges that do not fill 32 codes read the
//    same table one element at a time.
//  - int8: (q * SCB[row]) * (1 / 127) in f32 lanes, then PyTorch's casts. q converts
//    exactly through 2^23 + (q + 128), with no int -> float instruction (WASM lacks the
//    narrow one LLVM would pick). On WASM, rows with a finite SCB go 16 codes per step
//    with NaN-free rounding (quant-inl.h Codes16Runs); others, long enough, are looked up
//    in a table of their 256 outputs (ScaledRuns).

// Per-target include guard (toggled by foreach_target.h).
#if defined(AMN_KERNELS_QUANT_BNB_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AMN_KERNELS_QUANT_BNB_INL_H_
#undef AMN_KERNELS_QUANT_BNB_INL_H_
#else
#define AMN_KERNELS_QUANT_BNB_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/quant/bnb.h"
#include "kernels/quant/quant-inl.h"

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace quant {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

template <DType kTo>
HWY_NOINLINE void Bnb4Range(const float* HWY_RESTRICT lut, uint64_t blocksize, const uint8_t* HWY_RESTRICT packed,
                            const float* HWY_RESTRICT absmax, uint64_t begin, uint64_t end, uint8_t* HWY_RESTRICT out) {
  constexpr size_t kB = OutBytes(kTo);
  const auto code_at = [&](uint64_t i) {
    return static_cast<uint8_t>((i & 1) ? (packed[i / 2] & 0x0F) : (packed[i / 2] >> 4));
  };
  for (uint64_t i = begin; i < end;) {
    const uint64_t block = i / blocksize;
    const uint64_t stop = end < (block + 1) * blocksize ? end : (block + 1) * blocksize;
    const Table16<kB> t = ProductTable<kTo>(lut, absmax[block]);
    uint64_t vector_end = i + ((stop - i) & ~uint64_t{31});
    if (i & 1) vector_end = i + 1 + ((stop - i - 1) & ~uint64_t{31});  // an odd first element alone
    if (i & 1 || vector_end < stop) {
      const TableBytes<kB> bytes(t);
      if (i & 1) {
        bytes.store(code_at(i), out + (i - begin) * kB);
        ++i;
      }
      for (uint64_t j = vector_end; j < stop; ++j) bytes.store(code_at(j), out + (j - begin) * kB);
    }
    for (; i < vector_end; i += 32) StorePacked32<true>(t, packed + i / 2, out + (i - begin) * kB);
    i = stop;
  }
}

template <DType kTo>
HWY_NOINLINE void Int8Rows(uint64_t cols, const uint8_t* HWY_RESTRICT weight, const uint8_t* HWY_RESTRICT scb,
                           uint64_t row_begin, uint64_t row_end, uint8_t* HWY_RESTRICT out) {
  constexpr size_t kB = OutBytes(kTo);
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<float, decltype(du)> df;
  // torch: A * stats.view(-1, 1) * 7.874015718698502e-3, the scalar taken as float.
  const auto inv127 = hn::Set(df, static_cast<float>(7.874015718698502e-3));
  const auto bias = hn::Set(df, 8388608.0f + 128.0f);
#if HWY_TARGET == HWY_WASM
  // Rows with a finite SCB: 16 codes per step with NaN-free rounding (no product of a
  // finite scale and a code is NaN), a table beside on long rows (quant-inl.h Codes16Runs).
  bool finite = true;
  for (uint64_t r = row_begin; r < row_end && finite; ++r) {
    float scale;
    std::memcpy(&scale, scb + 4 * r, 4);
    finite = std::isfinite(scale);
  }
  if (finite) {
    const size_t n = static_cast<size_t>((row_end - row_begin) * cols);
    return Codes16Runs<kTo>(weight, 0x80, n, cols, cols, out, [&](size_t g) {
      float scale;
      std::memcpy(&scale, scb + 4 * (row_begin + g), 4);
      const auto s = hn::Set(df, scale);
      return [s, inv127, bias](hn::VFromD<decltype(df)> w) {
        const decltype(du) du;
        return F32BitsTo<kTo, false>(du, hn::BitCast(du, hn::Mul(hn::Mul(hn::Sub(w, bias), s), inv127)));
      };
    });
  }
#endif
  for (uint64_t r = row_begin; r < row_end; ++r) {
    float scale;
    std::memcpy(&scale, scb + 4 * r, 4);
    const auto s = hn::Set(df, scale);
    const uint64_t first = (r - row_begin) * cols;
    const auto vector = [&](const uint8_t* w, uint8_t* o) {
      const auto biased = hn::Xor(LoadBytesToU32(du, w), hn::Set(du, 0x80u));  // q + 128
      const auto q = hn::Sub(hn::BitCast(df, hn::Or(biased, hn::Set(du, 0x4B000000u))), bias);
      const auto v = hn::Mul(hn::Mul(q, s), inv127);
      StoreOut<kTo>(du, F32BitsTo<kTo>(du, hn::BitCast(du, v)), o);
    };
    ScaledRuns<kB>(du, weight + first, 1, static_cast<size_t>(cols), 0, out + first * kB, vector);
  }
}

#endif  // HWY_TARGET != HWY_SCALAR

// The per-target entry points exported by bnb_simd.cpp; false (nothing written) where
// there is no kernel (Highway's one-lane fallback target). Arguments as bnb.h's.
HWY_NOINLINE bool Bnb4Simd(const Bnb4Params& p, const uint8_t* packed, const float* absmax, uint64_t begin,
                           uint64_t end, DType to, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)p, (void)packed, (void)absmax, (void)begin, (void)end, (void)to, (void)out;
  return false;
#else
  // From bnb.cpp's function: values GCC cannot see, so it cannot rewrite x * -c as
  // -(x * c) (that flips a NaN absmax's sign, where the reference's product keeps it).
  alignas(16) float lut[16];
  for (int c = 0; c < 16; ++c) lut[c] = bnb4_codebook(p.type, static_cast<uint8_t>(c));
  if (to == DType::BF16) Bnb4Range<DType::BF16>(lut, p.blocksize, packed, absmax, begin, end, out);
  else if (to == DType::F16) Bnb4Range<DType::F16>(lut, p.blocksize, packed, absmax, begin, end, out);
  else Bnb4Range<DType::F32>(lut, p.blocksize, packed, absmax, begin, end, out);
  return true;
#endif
}

HWY_NOINLINE bool BnbInt8Simd(uint64_t cols, const uint8_t* weight, const uint8_t* scb, uint64_t row_begin,
                              uint64_t row_end, DType to, uint8_t* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)cols, (void)weight, (void)scb, (void)row_begin, (void)row_end, (void)to, (void)out;
  return false;
#else
  if (to == DType::BF16) Int8Rows<DType::BF16>(cols, weight, scb, row_begin, row_end, out);
  else if (to == DType::F16) Int8Rows<DType::F16>(cols, weight, scb, row_begin, row_end, out);
  else Int8Rows<DType::F32>(cols, weight, scb, row_begin, row_end, out);
  return true;
#endif
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace quant
}  // namespace amn
HWY_AFTER_NAMESPACE();

#endif  // AMN_KERNELS_QUANT_BNB_INL_H_
