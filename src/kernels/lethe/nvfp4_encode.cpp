// NVFP4 encoder: the scalar reference (nvfp4_encode.h), generate_gparam, calculate_qparams
// and _quantize's statements in order.
#include "kernels/lethe/nvfp4_encode.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/fp8_encode.h"
#include "kernels/lethe/torch_ops.h"
#include "kernels/quant/fp8.h"

namespace amn::lethe {
namespace {

float tiny_of(DType src) { return src == DType::F16 ? 6.103515625e-05f : 1.17549435082228750797e-38f; }

}  // namespace

float nvfp4_global_scale(float amax, DType src) {
  if (std::isnan(amax)) return 1.0f;
  const float a = std::max(amax, tiny_of(src));
  const float g = round_to(round_to(1.0f / a, src) * 2688.0f, src);
  return std::isfinite(g) ? g : 1.0f;  // nan_to_num(nan=1, posinf=1, neginf=1)
}

void nvfp4_block_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, float global_scale,
                        uint8_t* scale_e4m3) {
  if (!reference_impl_forced() && simd::nvfp4_scales(values, cols, r1 - r0, src, global_scale, scale_e4m3))
    return;  // the SIMD kernel
  const uint64_t groups = cols / 16;
  for (uint64_t r = 0; r < r1 - r0; ++r)
    for (uint64_t g = 0; g < groups; ++g) {
      const float amax = absmax(values + r * cols + g * 16, 16);
      const float s = round_to(amax / 6.0f, src);  // max_val_pos / (float(bit_range) / 2)
      float f = global_scale * s;                   // global_scale * scales: F32
      if (!std::isnan(f)) f = std::min(448.0f, std::max(-448.0f, f));
      uint8_t code = f32_to_e4m3fn(f);
      if ((code & 0x7F) == 0) code = 0x20;  // torch.where(scales == 0, 0.125, scales)
      scale_e4m3[r * groups + g] = code;
    }
}

uint8_t nvfp4_code(float v) {
  // The thresholds in order, counted without branches (a chain of ifs here made the encoder
  // branch on every value): |v| <= 0.25 -> 0, < 0.75 -> 1, <= 1.25 -> 2, < 1.75 -> 3,
  // <= 2.5 -> 4, < 3.5 -> 5, <= 5 -> 6, else 7; clamping to [-6, 6] first changes none of
  // these nor the sign.
  const float a = std::fabs(v);
  const int i = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  const int code = i | (v < 0 ? 8 : 0);
  return static_cast<uint8_t>(v != v ? 0 : code);
}

void nvfp4_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, const uint8_t* scale_e4m3,
                         float global_scale, uint8_t* packed, bool signed_zero) {
  if (!reference_impl_forced() &&
      simd::nvfp4_rows(values, cols, r1 - r0, scale_e4m3, global_scale, packed, signed_zero))
    return;  // the SIMD kernel
  const uint64_t groups = cols / 16;
  for (uint64_t r = 0; r < r1 - r0; ++r)
    for (uint64_t g = 0; g < groups; ++g) {
      const float se = quant::fp8_to_f32(DType::F8_E4M3, scale_e4m3[r * groups + g]) / global_scale;  // scale / global_scale
      const float* x = values + r * cols + g * 16;
      uint8_t c[16];
      for (int j = 0; j < 16; ++j) c[j] = nvfp4_code(x[j] / se);
      if (signed_zero)
        for (int j = 0; j < 16; ++j)
          if (x[j] == 0.0f && std::signbit(x[j])) c[j] = 8;
      uint8_t* out = packed + r * (cols / 2) + g * 8;
      for (int j = 0; j < 8; ++j) out[j] = static_cast<uint8_t>(c[2 * j] | (c[2 * j + 1] << 4));
    }
}

}  // namespace amn::lethe
