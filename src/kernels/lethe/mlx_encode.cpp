#include "kernels/lethe/mlx_encode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/quant/packed.h"

namespace amn::lethe {
namespace {

using scalar::bf16_to_f32;
using scalar::f16_to_f32;
using scalar::f32_to_bf16;
using scalar::f32_to_f16;

// static_cast<T>(float) as MLX's types do it: round to nearest even; a NaN scale or bias
// (a group with an infinity) is MLX's bfloat16 NaN 0x7FC0.
void store(DType t, float v, uint8_t* bytes, uint64_t i) {
  if (t == DType::F32) {
    std::memcpy(bytes + i * 4, &v, 4);
    return;
  }
  const uint16_t h = t == DType::BF16 ? (std::isnan(v) ? uint16_t(0x7FC0) : f32_to_bf16(v)) : f32_to_f16(v);
  std::memcpy(bytes + i * 2, &h, 2);
}

// One MLX op's result in dtype t (mx.dequantize computes in the scales' dtype).
float round_to(DType t, float v) {
  if (t == DType::F32) return v;
  return t == DType::BF16 ? bf16_to_f32(f32_to_bf16(v)) : f16_to_f32(f32_to_f16(v));
}

// std::min(std::max(rint(x), 0), n_bins) then static_cast<uint64_t>: a NaN stays NaN
// through MLX's std::max / std::min (argument order) and its cast is the integer
// indefinite (x86) or 0 (aarch64), whose bits within the packed word are 0 either way.
uint32_t code_of(float x, float n_bins) {
  float q = std::rint(x);
  q = std::min(std::max(q, 0.0f), n_bins);
  return std::isnan(q) ? 0u : static_cast<uint32_t>(q);
}

}  // namespace

MlxAffine mlx_affine_params(const float* w, uint64_t n, uint32_t bits) {
  float w_min = std::numeric_limits<float>::infinity();
  float w_max = -w_min;
  for (uint64_t j = 0; j < n; ++j) {  // std::max / std::min as MLX calls them: a NaN is passed over
    w_max = std::max(w_max, w[j]);
    w_min = std::min(w_min, w[j]);
  }
  return mlx_affine_params_of_range(w_min, w_max, bits);
}

MlxAffine mlx_affine_params_of_range(float w_min, float w_max, uint32_t bits) {
  const float n_bins = float((1u << bits) - 1);
  const float eps = 1e-7f;
  const bool mask = std::abs(w_min) > std::abs(w_max);
  float scale = std::max((w_max - w_min) / n_bins, eps);
  scale = mask ? scale : -scale;
  const float edge = mask ? w_min : w_max;
  const float q0 = std::rint(edge / scale);
  float bias = 0;
  if (q0 != 0) {
    scale = edge / q0;
    bias = edge;
  }
  return {scale, bias};
}

void mlx_affine_quantize_rows(const float* values, uint64_t rows, uint64_t cols, uint32_t bits, uint64_t group,
                              DType scale_dtype, uint8_t* packed, uint8_t* scales, uint8_t* biases, bool reuse) {
  const float n_bins = float((1u << bits) - 1);
  const uint64_t groups = rows * (cols / group);
  const uint64_t group_bytes = group * bits / 8;  // group is a multiple of 32: whole bytes
  uint64_t g = 0;
  // The SIMD kernels (2, 3, 4, 5, 6 and 8 bits) unless the reference is forced: each
  // chunk's ranges, their scales and biases here, then the chunk's codes.
  if (!reuse && !reference_impl_forced()) {
    constexpr uint64_t kChunk = 64;
    float lo[kChunk], hi[kChunk], scale[kChunk], bias[kChunk];
    for (; g < groups; g += kChunk) {
      const uint64_t m = std::min(kChunk, groups - g);
      if (!simd::mlx_ranges(values + g * group, m, group, bits, lo, hi)) break;
      for (uint64_t k = 0; k < m; ++k) {
        const MlxAffine a = mlx_affine_params_of_range(lo[k], hi[k], bits);
        store(scale_dtype, a.scale, scales, g + k);
        store(scale_dtype, a.bias, biases, g + k);
        scale[k] = a.scale;
        bias[k] = a.bias;
      }
      simd::mlx_codes(values + g * group, m, group, bits, scale, bias, packed + g * group_bytes);
    }
  }
  // --reuse-scales: each chunk's stored scales and biases read here, its codes in SIMD.
  if (reuse && !reference_impl_forced()) {
    constexpr uint64_t kChunk = 64;
    float scale[kChunk], bias[kChunk];
    for (; g < groups; g += kChunk) {
      const uint64_t m = std::min(kChunk, groups - g);
      quant::load_quant_floats(scale_dtype, scales, g, m, scale);
      quant::load_quant_floats(scale_dtype, biases, g, m, bias);
      if (!simd::mlx_reuse_codes(values + g * group, m, group, bits, scale_dtype, scale, bias, packed + g * group_bytes))
        break;
    }
  }
  for (; g < groups; ++g) {
    const float* w = values + g * group;
    MlxAffine a;
    if (reuse) {
      a = {quant::load_quant_float(scale_dtype, scales, g), quant::load_quant_float(scale_dtype, biases, g)};
    } else {
      a = mlx_affine_params(w, group, bits);
      store(scale_dtype, a.scale, scales, g);
      store(scale_dtype, a.bias, biases, g);
    }
    uint8_t* out = packed + g * group_bytes;
    std::memset(out, 0, group_bytes);
    for (uint64_t j = 0; j < group; ++j) {
      uint32_t q = code_of((w[j] - a.bias) / a.scale, n_bins);
      if (reuse) {
        // mx.dequantize: round(round(q * scale) + bias) in the scales' dtype.
        auto back = [&](uint32_t c) { return round_to(scale_dtype, round_to(scale_dtype, float(c) * a.scale) + a.bias); };
        if (back(q) != w[j]) {
          if (q > 0 && back(q - 1) == w[j]) --q;
          else if (q < n_bins && back(q + 1) == w[j]) ++q;
        }
      }
      const uint64_t bit = j * bits;
      const uint32_t v = q << (bit % 8);  // at most 8 + 7 bits: two bytes
      out[bit / 8] |= uint8_t(v);
      if ((bit % 8) + bits > 8) out[bit / 8 + 1] |= uint8_t(v >> 8);
    }
  }
}

}  // namespace amn::lethe
