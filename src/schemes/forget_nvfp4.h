// NVFP4 as a forget target: compressed-tensors `nvfp4-pack-quantized` (`weight_packed`,
// `weight_scale` E4M3 per 16, `weight_global_scale`), as llm-compressor's model_free_ptq
// writes it with the NVFP4A16 preset (fixtures/lethe/nvfp4), one global scale shared by a
// fused q/k/v, gate/up, w1/w3 or wq_a/wkv_a_with_mqa set.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "schemes/forget.h"

namespace amn {

Result<std::unique_ptr<Forgetter>> make_nvfp4_forgetter(const ForgetSettings& settings);

// llm-compressor's fused sets (get_fused_names: _DEFAULT_FUSED_MAPPINGS_LIST matched by
// match_names_set_eager over the names in natural order): indices into `names`, each set
// complete. Errors: unsupported where the producer raises (a member matched twice
// before its set completed).
Result<std::vector<std::vector<size_t>>> nvfp4_fused_sets(const std::vector<std::string>& names);

}  // namespace amn
