// NVFP4 encoder: the scalar reference (nvfp4_encode.h), generate_gparam, calculate_qparams
// and _quantize's statements in order.
#include "kernels/lethe/nvfp4_encode.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/cast.h"
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
  if (std::isnan(v)) return 0;
  v = std::min(6.0f, std::max(-6.0f, v));
  const float a = std::fabs(v);
  uint8_t i;
  if (a <= 0.25f) i = 0;
  else if (a < 0.75f) i = 1;
  else if (a <= 1.25f) i = 2;
  else if (a < 1.75f) i = 3;
  else if (a <= 2.5f) i = 4;
  else if (a < 3.5f) i = 5;
  else if (a <= 5.0f) i = 6;
  else i = 7;
  return static_cast<uint8_t>(i | (v < 0 ? 8 : 0));
}

void nvfp4_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, const uint8_t* scale_e4m3,
                         float global_scale, uint8_t* packed, bool signed_zero) {
  const uint64_t groups = cols / 16;
  for (uint64_t r = 0; r < r1 - r0; ++r)
    for (uint64_t g = 0; g < groups; ++g) {
      const float se = quant::fp8_to_f32(DType::F8_E4M3, scale_e4m3[r * groups + g]) / global_scale;  // scale / global_scale
      const float* x = values + r * cols + g * 16;
      uint8_t* out = packed + r * (cols / 2) + g * 8;
      auto code = [&](float v) {
        return signed_zero && v == 0.0f && std::signbit(v) ? uint8_t{8} : nvfp4_code(v / se);
      };
      for (int j = 0; j < 8; ++j) out[j] = static_cast<uint8_t>(code(x[2 * j]) | (code(x[2 * j + 1]) << 4));
    }
}

}  // namespace amn::lethe
