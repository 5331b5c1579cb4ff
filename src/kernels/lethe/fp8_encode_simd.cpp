// FP8 E4M3 encoders in Highway (encode_simd.h), and the amax they and the other encoders
// share, compiled here once per Highway target (foreach_target.h re-includes this file);
// the same bytes as the references (fp8_encode.cpp, fp8_ct_encode.cpp, torch_ops.h) on
// every target:
//  - amax: AbsMaxBits, per tile for 128 x 128 tiles (row by row, in memory order, each
//    tile's running maximum kept per tile column); a NaN goes back to the reference's scan.
//  - fp8-block: x * scale, an invalid product of two non-NaN values (0 x Inf) made the
//    negative NaN the reference writes (only tiles whose scale is 0, Inf or NaN can have
//    one), the clamp to +-448 (NaN kept), E4M3.
//  - compressed-tensors: x / scale (a true division, as the reference), rounded to the
//    weight's dtype with kernels/cast.h's bits, + 0 when a zero point is registered, the
//    clamp, E4M3.
// On x86-64 several targets are built and chosen at run time; on aarch64 and WASM the one
// static target is a direct call. Selection: kernels/cast.h (force_impl, AMN_FORCE_IMPL).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/lethe/fp8_encode_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include <cmath>
#include <cstring>
#include <limits>

#include "hwy/highway.h"
#include "kernels/lethe/encode-inl.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/torch_ops.h"  // absmax_scan

HWY_BEFORE_NAMESPACE();
namespace amn {
namespace lethe {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

HWY_NOINLINE float Absmax(const float* HWY_RESTRICT values, uint64_t count) {
  const uint32_t bits = AbsMaxBits(values, static_cast<size_t>(count));
  if (bits > 0x7F800000u) return absmax_scan(values, count);  // the first NaN, as torch's amax
  float r;
  std::memcpy(&r, &bits, 4);
  return r;
}

HWY_NOINLINE bool Fp8TileAbsmaxBits(const float* HWY_RESTRICT values, uint64_t cols, uint64_t rows,
                                    uint64_t block_rows, uint64_t block_cols, uint32_t* HWY_RESTRICT bits) {
  const uint64_t tile_cols = (cols + block_cols - 1) / block_cols;
  const uint64_t tile_rows = (rows + block_rows - 1) / block_rows;
  for (uint64_t i = 0; i < tile_rows * tile_cols; ++i) bits[i] = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    uint32_t* t = bits + (r / block_rows) * tile_cols;
    const float* row = values + r * cols;
    for (uint64_t tc = 0, c = 0; tc < tile_cols; ++tc, c += block_cols) {
      const uint64_t n = cols - c < block_cols ? cols - c : block_cols;
      const uint32_t m = AbsMaxBits(row + c, static_cast<size_t>(n));
      t[tc] = m > t[tc] ? m : t[tc];
    }
  }
  return true;
}

#if HWY_TARGET == HWY_SCALAR
HWY_NOINLINE bool Fp8BlockRows(const float*, uint64_t, uint64_t, uint64_t, uint64_t, const float*, uint8_t*) {
  return false;
}
HWY_NOINLINE bool CtFp8Rows(const float*, uint64_t, uint64_t, DType, const float*, bool, bool, uint8_t*) {
  return false;
}
#else

HWY_NOINLINE bool Fp8BlockRows(const float* HWY_RESTRICT values, uint64_t cols, uint64_t rows, uint64_t block_rows,
                               uint64_t block_cols, const float* HWY_RESTRICT scale, uint8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const uint64_t tile_cols = (cols + block_cols - 1) / block_cols;
  // The x86 FPU's default NaN (what the reference writes for an invalid product).
  const auto invalid = hn::Set(df, -std::numeric_limits<float>::quiet_NaN());
  for (uint64_t r = 0; r < rows; ++r) {
    const float* s = scale + (r / block_rows) * tile_cols;
    for (uint64_t tc = 0, c = 0; tc < tile_cols; ++tc, c += block_cols) {
      const uint64_t n = cols - c < block_cols ? cols - c : block_cols;
      const auto vs = hn::Set(df, s[tc]);
      // A finite non-zero scale makes no invalid product (0 x Inf needs a zero or an
      // infinite factor): a NaN product is then x's NaN, and the select is left out.
      if (std::isfinite(s[tc]) && s[tc] != 0.0f) {
        EachVector(df, values + r * cols + c, static_cast<size_t>(n), out + r * cols + c,
                   [&](hn::VFromD<decltype(df)> x) { return E4M3Clamped(df, hn::Mul(x, vs)); });
        continue;
      }
      EachVector(df, values + r * cols + c, static_cast<size_t>(n), out + r * cols + c, [&](hn::VFromD<decltype(df)> x) {
        auto v = hn::Mul(x, vs);
        v = hn::IfThenElse(hn::AndNot(hn::Eq(v, v), hn::Eq(x, x)), invalid, v);
        return E4M3Clamped(df, v);
      });
    }
  }
  return true;
}

template <DType kSrc>
HWY_INLINE void CtFp8Row(const float* HWY_RESTRICT x, uint64_t cols, float s, bool add_zero_point,
                         uint8_t* HWY_RESTRICT out) {
  const hn::ScalableTag<float> df;
  const auto vs = hn::Set(df, s);
  const auto zero = hn::Zero(df);
  EachVector(df, x, static_cast<size_t>(cols), out, [&](hn::VFromD<decltype(df)> v) {
    v = hn::Div(v, vs);
    if constexpr (kSrc == DType::BF16) v = RoundToBF16(df, v);
    if constexpr (kSrc == DType::F16) v = RoundToF16(df, v);
    if (add_zero_point) v = hn::Add(v, zero);
    return E4M3Clamped(df, v);
  });
}

HWY_NOINLINE bool CtFp8Rows(const float* HWY_RESTRICT values, uint64_t cols, uint64_t rows, DType src,
                            const float* HWY_RESTRICT scale, bool per_row, bool add_zero_point,
                            uint8_t* HWY_RESTRICT out) {
  for (uint64_t r = 0; r < rows; ++r) {
    const float s = per_row ? scale[r] : scale[0];
    const float* x = values + r * cols;
    uint8_t* o = out + r * cols;
    if (src == DType::BF16) {
      CtFp8Row<DType::BF16>(x, cols, s, add_zero_point, o);
    } else if (src == DType::F16) {
      CtFp8Row<DType::F16>(x, cols, s, add_zero_point, o);
    } else {
      CtFp8Row<DType::F32>(x, cols, s, add_zero_point, o);
    }
  }
  return true;
}

#endif  // HWY_TARGET == HWY_SCALAR

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace lethe
}  // namespace amn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace amn {
namespace lethe {

HWY_EXPORT(Absmax);
HWY_EXPORT(Fp8TileAbsmaxBits);
HWY_EXPORT(Fp8BlockRows);
HWY_EXPORT(CtFp8Rows);

namespace simd {

float absmax(const float* values, uint64_t count) { return HWY_DYNAMIC_DISPATCH(Absmax)(values, count); }

bool fp8_tile_absmax_bits(const float* values, uint64_t cols, uint64_t rows, uint64_t block_rows,
                          uint64_t block_cols, uint32_t* bits) {
  return HWY_DYNAMIC_DISPATCH(Fp8TileAbsmaxBits)(values, cols, rows, block_rows, block_cols, bits);
}

bool fp8_block_rows(const float* values, uint64_t cols, uint64_t rows, uint64_t block_rows, uint64_t block_cols,
                    const float* scale, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(Fp8BlockRows)(values, cols, rows, block_rows, block_cols, scale, out);
}

bool ct_fp8_rows(const float* values, uint64_t cols, uint64_t rows, DType src, const float* scale, bool per_row,
                 bool add_zero_point, uint8_t* out) {
  return HWY_DYNAMIC_DISPATCH(CtFp8Rows)(values, cols, rows, src, scale, per_row, add_zero_point, out);
}

}  // namespace simd
}  // namespace lethe
}  // namespace amn
#endif  // HWY_ONCE
