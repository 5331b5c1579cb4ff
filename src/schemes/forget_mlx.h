// MLX affine as a forget target: mlx-lm's layout (`<base>.weight` U32, `.scales`,
// `.biases` in the weight's dtype) that mx.quantize makes (fixtures/lethe/mlx), for every
// module mlx-lm's quantize_model quantizes by default (Linear, Embedding, SwitchLinear
// weights whose last dimension the group size divides; lm_head and embeddings included).
#pragma once
#include <array>
#include <memory>
#include <string_view>

#include "schemes/forget.h"

namespace amn {

// mx.quantize's modes (mlx/primitives.cpp string_to_quantization_mode), the --mode choices.
inline constexpr std::array<std::string_view, 4> kMlxModes = {"affine", "mxfp4", "nvfp4", "mxfp8"};

// Errors: invalid_argument for a mode, bits or a group size mx.quantize refuses ("bits 7:
// ...", "group size 48: ...", "mode mxfp5: ...", named by the request key; the
// floating-point modes take only their own bits and group size), or bitsandbytes' settings.
Result<std::unique_ptr<Forgetter>> make_mlx_forgetter(const ForgetSettings& settings);

}  // namespace amn
