// GGUF as a conversion target (called by plan_convert).
#pragma once
#include "convert/plan.h"
#include "core/model.h"

namespace amn {

// Maps the plan's tensors to ggml types, builds the header from the KVs (the source
// GGUF's, then options.gguf_kv; kept in plan.gguf_kv), and inserts the zero padding GGUF's
// alignment needs.
Status finish_gguf_plan(const Model& model, const ConvertOptions& options, Plan& plan);

// The layout step alone: `plan` holds its tensors and their pieces without padding; its
// header becomes the GGUF header of `kv` (general.alignment, else 32, aligns the data).
Status lay_out_gguf(const std::vector<std::pair<std::string, GgufValue>>& kv, Plan& plan);

}  // namespace amn
