#include "kernels/lethe/mlx_fp_encode.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/bytes.h"
#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/quant/fp4_values.h"

namespace amn::lethe {
namespace {

using quant::kE2M1Signed;
using quant::MlxFpMode;

// One MLX op's result in dtype t: static_cast<T>(float) of MLX's types, round to nearest
// even. A NaN: _MLX_BFloat16 makes every NaN +NaN (0x7FC0), _MLX_Float16 keeps its sign
// (sign | 0x7D00), F32 keeps it as is. Only a NaN's sign matters below (ToFP8 keeps it).
float in_dtype(DType t, float v) {
  if (t == DType::F32) return v;
  if (std::isnan(v)) return t == DType::BF16 ? std::numeric_limits<float>::quiet_NaN() : v;
  return t == DType::BF16 ? scalar::bf16_to_f32(scalar::f32_to_bf16(v))
                          : scalar::f16_to_f32(scalar::f32_to_f16(v));
}

// a / b as x86 computes it (where MLX runs and its bytes were checked): a NaN operand
// passes through with its sign, and 0 / 0 is the default NaN, negative. Spelled out
// because WASM leaves the sign of a NaN it makes unspecified.
float divide(float a, float b) {
  if (std::isnan(a)) return a;
  if (a == 0 && b == 0) return bit_cast<float>(0xFFC00000u);
  return a / b;
}

// static_cast<int32_t>(float) as x86's cvttss2si does it: NaN, +-inf and out of range give
// INT32_MIN (mlx's astype of a non-finite exponent; C++ leaves it undefined).
int32_t to_int32(float x) {
  if (!(x >= -2147483648.0f && x < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(x);
}

// argmin(|x - lut|) over MLX's E2M1 table in dtype t: mlx/backend/cpu/arg_reduce.cpp
// keeps the first element and replaces it only by a strictly smaller one, so ties take the
// lower index and a NaN or infinite x (every distance NaN or inf) takes code 0.
uint8_t fp4_code(DType t, float x) {
  uint8_t best = 0;
  float v = std::abs(in_dtype(t, x - kE2M1Signed[0]));
  for (uint8_t k = 1; k < 16; ++k) {
    const float d = std::abs(in_dtype(t, x - kE2M1Signed[k]));
    if (d < v) {
      v = d;
      best = k;
    }
  }
  return best;
}

float code_value(MlxFpMode mode, uint8_t code) {
  return mode == MlxFpMode::mxfp8 ? quant::mlx_e4m3_to_f32(code) : kE2M1Signed[code];
}

bool same(float a, float b) { return a == b && std::signbit(a) == std::signbit(b); }

// --reuse-scales: a value remember made (code value times scale, exact in F32) takes its
// code, e.g. E4M3's 480 (0x7F, another producer's NaN), which ToFP8 saturates to 448, or
// -0.0 (code 8).
uint8_t exact_code(MlxFpMode mode, float w, float scale, uint8_t code) {
  if (same(code_value(mode, code) * scale, w)) return code;
  if (mode == MlxFpMode::mxfp8) {
    const uint8_t top = std::signbit(w) ? 0xFF : 0x7F;
    return same(code_value(mode, top) * scale, w) ? top : code;
  }
  for (uint8_t k = 0; k < 16; ++k)
    if (same(kE2M1Signed[k] * scale, w)) return k;
  return code;
}

}  // namespace

uint8_t mlx_f32_to_e4m3(float x) {
  // detail::ToFP8, as c10's fp8e4m3fn_from_fp32_value but saturating to 0x7E.
  constexpr uint32_t fp8_max = 543u << 21;      // 448.0f: from there on, 0x7E
  constexpr uint32_t denorm_mask = 141u << 23;  // 2^14: adding it rounds to E4M3's subnormal step
  uint32_t f_bits = bit_cast<uint32_t>(x);
  const uint32_t sign = f_bits & 0x80000000u;
  f_bits ^= sign;
  uint8_t result;
  if (f_bits >= fp8_max) {  // NaN too: its bits are above
    result = 0x7E;
  } else if (f_bits < (121u << 23)) {  // below 2^-6: subnormal E4M3
    result = static_cast<uint8_t>(bit_cast<uint32_t>(bit_cast<float>(f_bits) + bit_cast<float>(denorm_mask)) - denorm_mask);
  } else {
    const uint32_t mant_odd = (f_bits >> 20) & 1;
    const uint32_t high = f_bits + ((static_cast<uint32_t>(7 - 127) << 23) + 0x7FFFFu) + mant_odd;
    result = static_cast<uint8_t>(high >> 20);
  }
  return static_cast<uint8_t>(result | (sign >> 24));
}

float mlx_fp_exponent(DType t, float s) { return in_dtype(t, std::rint(in_dtype(t, std::log2(s)))); }

const int32_t* mlx_fp_exponent_thresholds(DType t) {
  struct Table {
    int32_t at[277];
    bool ok = true;
  };
  // The bits of 2^E (E >= -149) and the exponent there, as an integer.
  const auto lo_bits = [](int E) { return E >= -126 ? uint32_t(E + 127) << 23 : uint32_t(1) << (E + 149); };
  const auto build = [&](DType dt) {
    Table table;
    for (int E = -149; E <= 127; ++E) {
      const uint32_t lo = lo_bits(E), hi = E == 127 ? 0x7F800000u : lo_bits(E + 1);
      const auto f = [&](uint32_t u) { return mlx_fp_exponent(dt, bit_cast<float>(u)); };
      // Expected: E at 2^E, E or E + 1 at the binade's last value (log2 < E + 1, and the
      // roundings can reach E + 1); else no table (the reference does every group).
      const float last = f(hi - 1);
      if (f(lo) != float(E) || !(last == float(E) || last == float(E + 1))) table.ok = false;
      uint32_t a = lo, b = hi;  // the first bits giving E + 1 are in (a, b]; b = hi: none
      if (last == float(E)) a = hi - 1;
      while (b - a > 1) {
        const uint32_t mid = a + (b - a) / 2;
        (f(mid) == float(E) ? a : b) = mid;
      }
      table.at[E + 149] = static_cast<int32_t>(b);
    }
    return table;
  };
  static const Table f32 = build(DType::F32), bf16 = build(DType::BF16), f16 = build(DType::F16);
  const Table& table = t == DType::BF16 ? bf16 : t == DType::F16 ? f16 : f32;
  return table.ok ? table.at : nullptr;
}

namespace {

// max(abs(w)) over a group: mlx/backend/cpu/reduce.cpp gives NaN when any value is NaN.
float group_amax(const float* w, uint64_t n) {
  float amax = -std::numeric_limits<float>::infinity();
  bool nan = false;
  for (uint64_t j = 0; j < n; ++j) {
    const float a = std::abs(w[j]);
    if (std::isnan(a)) nan = true;
    else if (a > amax) amax = a;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

// A group's scale byte from its amax, and the divisor of its codes (in dtype t).
float group_scale(MlxFpMode mode, const quant::MlxFpFormat& f, DType t, float amax, uint8_t* scale_byte) {
  const float s = in_dtype(t, amax / f.maxval);
  if (mode == MlxFpMode::nvfp4) {
    // to_fp8(scales * 1.0f): the F32 product is exact; from_fp8 back in dtype t.
    *scale_byte = mlx_f32_to_e4m3(s);
    return in_dtype(t, quant::mlx_e4m3_to_f32(*scale_byte));
  }
  // where(s == 0, 0, astype(round(log2(s)), int32)) in dtype t (int32 and T give T),
  // then 2^e in t, and astype(e + 127, uint8): the low byte of the int32 conversion.
  float e = 0;
  if (s != 0) e = in_dtype(t, static_cast<float>(to_int32(mlx_fp_exponent(t, s))));
  *scale_byte = static_cast<uint8_t>(static_cast<uint32_t>(to_int32(in_dtype(t, e + 127.0f))) & 0xFF);
  // pow(2, e) with e an integer or -inf: exact 2^e, rounded to t (0 below its range).
  return in_dtype(t, std::isfinite(e) && e > -1000 ? std::ldexp(1.0f, static_cast<int>(e)) : 0.0f);
}

}  // namespace

void mlx_fp_quantize_rows(MlxFpMode mode, const float* values, uint64_t rows, uint64_t cols, DType t, uint8_t* codes,
                          uint8_t* scales, bool reuse) {
  const quant::MlxFpFormat& f = quant::mlx_fp_format(mode);
  const uint64_t groups = rows * (cols / f.group_size);
  const uint64_t code_bytes = mode == MlxFpMode::mxfp8 ? f.group_size : f.group_size / 2;
  // nvfp4 multiplies by the F32 scale_encode (1.0): its codes are chosen in F32.
  const DType code_dtype = mode == MlxFpMode::nvfp4 ? DType::F32 : t;
  uint64_t g = 0;
  // The SIMD kernels unless the reference is forced: each chunk's amax, their scales
  // here (one per group, the reference's code), then the chunk's codes.
  if (!reuse && !reference_impl_forced()) {
    constexpr uint64_t kChunk = 64;
    float amax[kChunk], divisor[kChunk];
    const int32_t* thresholds = mode == MlxFpMode::nvfp4 ? nullptr : mlx_fp_exponent_thresholds(t);
    for (; g < groups; g += kChunk) {
      const uint64_t m = std::min(kChunk, groups - g);
      const float* w = values + g * f.group_size;
      if (!simd::mlx_fp_amax(w, m, f.group_size, amax)) break;
      if (!simd::mlx_fp_scales(amax, m, mode == MlxFpMode::nvfp4, f.maxval, t, thresholds, &scales[g], divisor))
        for (uint64_t k = 0; k < m; ++k) divisor[k] = group_scale(mode, f, t, amax[k], &scales[g + k]);
      simd::mlx_fp_codes(w, m, f.group_size, t, code_dtype, mode == MlxFpMode::mxfp8, divisor, nullptr,
                         codes + g * code_bytes);
    }
  }
  // --reuse-scales: each chunk's stored scales decoded here, its codes in SIMD.
  if (reuse && !reference_impl_forced()) {
    constexpr uint64_t kChunk = 64;
    float scale[kChunk], divisor[kChunk];
    for (; g < groups; g += kChunk) {
      const uint64_t m = std::min(kChunk, groups - g);
      for (uint64_t k = 0; k < m; ++k) {
        const uint8_t b = scales[g + k];
        scale[k] = mode == MlxFpMode::nvfp4 ? quant::mlx_e4m3_to_f32(b) : quant::mlx_e8m0_to_f32(b);
        divisor[k] = in_dtype(t, scale[k]);
      }
      if (!simd::mlx_fp_codes(values + g * f.group_size, m, f.group_size, t, code_dtype, mode == MlxFpMode::mxfp8,
                              divisor, scale, codes + g * code_bytes))
        break;
    }
  }
  for (; g < groups; ++g) {
    const float* w = values + g * f.group_size;
    // The divisor of the codes (in dtype t) and the scale remember multiplies by (F32).
    float divisor, scale;
    if (reuse) {
      scale = mode == MlxFpMode::nvfp4 ? quant::mlx_e4m3_to_f32(scales[g]) : quant::mlx_e8m0_to_f32(scales[g]);
      divisor = in_dtype(t, scale);
    } else {
      divisor = group_scale(mode, f, t, group_amax(w, f.group_size), &scales[g]);
      scale = mode == MlxFpMode::nvfp4 ? quant::mlx_e4m3_to_f32(scales[g]) : divisor;
    }
    for (uint64_t j = 0; j < f.group_size; ++j) {
      const uint64_t i = g * f.group_size + j;
      const float wq = in_dtype(t, divide(w[j], divisor));
      uint8_t code = mode == MlxFpMode::mxfp8 ? mlx_f32_to_e4m3(wq) : fp4_code(code_dtype, wq);
      if (reuse) code = exact_code(mode, w[j], scale, code);
      if (mode == MlxFpMode::mxfp8) {
        codes[i] = code;
      } else if (j % 2 == 0) {
        codes[i / 2] = code;
      } else {
        codes[i / 2] = static_cast<uint8_t>(codes[i / 2] | (code << 4));
      }
    }
  }
}

}  // namespace amn::lethe
