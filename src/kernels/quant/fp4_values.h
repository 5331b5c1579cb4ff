// The E2M1 (FP4) code values, shared by the reference (fp4.cpp) and the Highway kernels
// (fp4-inl.h). Aligned for vector loads.
#pragma once
#include <cstdint>
#include <cstring>

namespace amn::quant {

// transformers FP4_VALUES and compressed-tensors kE2M1 * sign: -0.0 at code 8.
alignas(16) inline constexpr float kE2M1Signed[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// ModelOpt e2m1_values: torch.tensor([0, 0.5, ..., 0, -0.5, ...]): code 8 is +0.0.
alignas(16) inline constexpr float kE2M1ModelOpt[16] = {0.0f, 0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                        0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// MXFP4's E8M0 scale, 2^(s - 127), as torch.pow(2.0, s - 127) gives it in f32: exact
// (2^-127 is subnormal), +inf for s = 255.
inline float e8m0_to_f32(uint8_t s) {
  const uint32_t bits = s == 255 ? 0x7F800000u : s == 0 ? 0x00400000u : static_cast<uint32_t>(s) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace amn::quant
