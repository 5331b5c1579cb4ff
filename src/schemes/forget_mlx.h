// MLX affine as a forget target: mlx-lm's layout (`<base>.weight` U32, `.scales`,
// `.biases` in the weight's dtype) that mx.quantize makes (fixtures/lethe/mlx), for every
// module mlx-lm's quantize_model quantizes by default (Linear, Embedding, SwitchLinear
// weights whose last dimension the group size divides; lm_head and embeddings included).
#pragma once
#include <memory>

#include "schemes/forget.h"

namespace amn {

// Errors: invalid_argument for bits or a group size mx.quantize refuses ("bits 7: ...",
// "group size 48: ...", named by the request key), or bitsandbytes' settings.
Result<std::unique_ptr<Forgetter>> make_mlx_forgetter(const ForgetSettings& settings);

}  // namespace amn
