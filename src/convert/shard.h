// Sharded output: one safetensors Plan per output file and the Hugging Face index that
// names them (model-00001-of-00003.safetensors + model.safetensors.index.json), as
// transformers' save_pretrained writes a checkpoint. By default the output keeps the
// input's shard boundaries; a maximum shard size re-shards instead.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convert/plan.h"
#include "core/error.h"
#include "core/model.h"

namespace amn {

inline constexpr std::string_view kShardIndexName = "model.safetensors.index.json";
inline constexpr std::string_view kSingleShardName = "model.safetensors";

struct ShardOptions {
  // 0: shard k of the output holds the tensors whose (first) record lives in the k-th
  // input file that holds any. > 0: Hugging Face's split_torch_state_dict_into_shards
  // rule: a new shard starts when the next tensor would take the current one past this
  // many bytes; a tensor larger than the limit gets a shard of its own.
  uint64_t max_shard_bytes = 0;
};

struct OutputShard {
  std::string name;  // model-00001-of-00003.safetensors, or model.safetensors alone
  Plan plan;         // a whole safetensors file: header, then pieces
};

struct ShardedPlan {
  std::vector<OutputShard> shards;  // in output order; never empty
  // model.safetensors.index.json's bytes; empty when there is one shard (transformers
  // writes no index for an unsharded checkpoint).
  std::string index_json;
  uint64_t total_size = 0;  // the index's metadata.total_size: the sum of tensor bytes
  uint64_t output_bytes() const;  // every shard file, headers included (not the index)
};

// Plans a safetensors conversion split into shards. `options.to` must be safetensors.
Result<ShardedPlan> plan_shards(const Model& model, const ConvertOptions& options, const ShardOptions& shard);

// "model-00002-of-00003.safetensors" (1-based k, five digits as transformers writes them).
std::string shard_file_name(size_t k, size_t count);

// The index JSON for tensors in `shards`: {"metadata": {"total_size": N}, "weight_map":
// {name: file}}, keys sorted and indented by two spaces (json.dumps(indent=2,
// sort_keys=True) + "\n", as transformers and huggingface_hub write it).
std::string shard_index_json(const std::vector<OutputShard>& shards, uint64_t total_size);

// A size as transformers' --max_shard_size takes it: "5GB" (10^9), "500MiB" (2^20),
// "1.5GB", or a plain number of bytes. Units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB.
Result<uint64_t> parse_shard_size(std::string_view text);

}  // namespace amn
