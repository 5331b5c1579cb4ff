// MXFP4 as a forget target: the gpt-oss checkpoint layout (`<p>_blocks` U8
// [..., out, in / 32, 16], `<p>_scales` U8 [..., out, in / 32]) that transformers'
// quantize_to_mxfp4 makes (fixtures/lethe/mxfp4), for the experts' gate_up_proj and
// down_proj by default (transformers' Mxfp4 replaces only the gpt-oss MoE experts).
#pragma once
#include <memory>

#include "schemes/forget.h"

namespace amn {

Result<std::unique_ptr<Forgetter>> make_mxfp4_forgetter(const ForgetSettings& settings);

}  // namespace amn
