// compressed-tensors FP8 encoders: the scalar reference (fp8_ct_encode.h), calculate_qparams'
// and _quantize's statements in order, each rounded to the weight's dtype as torch does.
#include "kernels/lethe/fp8_ct_encode.h"

#include <algorithm>
#include <cmath>

#include "kernels/cast.h"
#include "kernels/lethe/encode_simd.h"
#include "kernels/lethe/fp8_encode.h"
#include "kernels/lethe/torch_ops.h"

namespace amn::lethe {
namespace {

float eps_of(DType src) {
  switch (src) {
    case DType::BF16:
      return 0.0078125f;  // torch.finfo(torch.bfloat16).eps = 2^-7
    case DType::F16:
      return 0.0009765625f;  // 2^-10
    default:
      return 1.1920928955078125e-7f;  // 2^-23
  }
}

}  // namespace

float ct_fp8_scale(float amax, DType src) {
  // max_val_pos / (float(bit_range) / 2): bit_range = 448 - (-448), so / 448.0 in src
  const float s = round_to(amax / 448.0f, src);
  return s == 0 ? eps_of(src) : s;  // torch.where(scales == 0, eps, scales)
}

void ct_fp8_channel_scales(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, float* scale) {
  for (uint64_t r = 0; r < r1 - r0; ++r) scale[r] = ct_fp8_scale(absmax(values + r * cols, cols), src);
}

void ct_fp8_quantize_rows(const float* values, uint64_t cols, uint64_t r0, uint64_t r1, DType src, const float* scale,
                          bool per_row, bool add_zero_point, uint8_t* out) {
  if (!reference_impl_forced() && simd::ct_fp8_rows(values, cols, r1 - r0, src, scale, per_row, add_zero_point, out))
    return;  // the SIMD kernel
  for (uint64_t r = 0; r < r1 - r0; ++r) {
    const float s = per_row ? scale[r] : scale[0];
    for (uint64_t c = 0; c < cols; ++c) {
      float v = round_to(values[r * cols + c] / s, src);  // scaled = x / scale
      if (add_zero_point) v = v + 0.0f;                    // scaled += zero_point (0): -0 -> +0
      if (!std::isnan(v)) v = std::min(448.0f, std::max(-448.0f, v));  // torch.clamp keeps NaN
      out[r * cols + c] = f32_to_e4m3fn(v);
    }
  }
}

}  // namespace amn::lethe
