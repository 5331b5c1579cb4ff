// The forget verb's policy, shared by every surface: a request becomes a forget plan
// (the scheme, which tensors), and an output folder gets config.json with the
// producer's quantization_config written in.
#pragma once
#include <string>

#include "convert/plan_forget.h"
#include "convert/shard.h"
#include "core/model.h"
#include "session/request.h"

namespace amn {

// `like`: the forgetter made from request.like's model (schemes/forget_like.h), which the
// surface opened; required when request.like is set. `imatrix`: request.imatrix's file,
// parsed (parse_imatrix), which the surface read; required when request.imatrix is set.
Result<ForgetPlan> plan_forget_request(const Model& model, const ConvertRequest& request, Surface surface,
                                       std::shared_ptr<const Forgetter> like = nullptr,
                                       std::shared_ptr<const ImportanceMatrix> imatrix = nullptr);

// The input's config.json with "quantization_config" set to the forgetter's, as
// transformers' save_pretrained writes a config (json.dumps(indent=2, sort_keys=True) and
// a newline); "" when the input has no config.json.
std::string forget_config_json(const Model& model, const Forgetter& forgetter);

// The files of a forget's output folder named `folder` (after the plan's prepares): the
// model sharded as the request asks (convert/shard.h: the input's shards by default,
// --max-shard-size, --shards 1; --to gguf: --split-max-size / --split-max-tensors, files
// named after the folder), model.safetensors alone when there is one shard.
Result<ShardedPlan> forget_output_files(const ForgetPlan& plan, const ConvertRequest& request, std::string_view folder);

}  // namespace amn
