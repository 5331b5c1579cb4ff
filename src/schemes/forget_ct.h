// compressed-tensors `float-quantized` as a forget target: fp8-channel (one scale per
// output row) and fp8-tensor (one per tensor), E4M3 `weight` and `weight_scale` in the
// weight's dtype, as llm-compressor's model_free_ptq writes them (fixtures/lethe/fp8_ct).
#pragma once
#include <memory>

#include "schemes/forget.h"

namespace amn {

Result<std::unique_ptr<Forgetter>> make_ct_forgetter(const ForgetSettings& settings);

}  // namespace amn
