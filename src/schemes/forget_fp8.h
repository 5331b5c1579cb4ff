// FP8 as a forget target. fp8-block: transformers' FineGrainedFP8 (Fp8Quantize.convert),
// E4M3 with one F32 scale per 128x128 tile, the DeepSeek-V3 layout (`weight` F8_E4M3,
// `weight_scale_inv` F32); docs/formats/quantized/fp8.md.
#pragma once
#include <memory>

#include "schemes/forget.h"

namespace amn {

Result<std::unique_ptr<Forgetter>> make_fp8_forgetter(const ForgetSettings& settings);

}  // namespace amn
