// Sharded output: one Plan per output file. Safetensors: the Hugging Face index that
// names them (model-00001-of-00003.safetensors + model.safetensors.index.json), as
// transformers' save_pretrained writes a checkpoint; by default the output keeps the
// input's shard boundaries, a maximum shard size re-shards instead. GGUF: llama.cpp's
// gguf-split (<prefix>-00001-of-00003.gguf, the KVs in the first file, split.no,
// split.count and split.tensors.count in each).
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
  // A quantized weight's companions (absmax, scales, quant_state, ...: one encoder's
  // outputs) count as one tensor here, so they stay in their weight's shard.
  uint64_t max_shard_bytes = 0;
  bool one = false;  // every tensor in one file (--shards 1)
  // GGUF output, gguf-split's rules: a new file starts when the next tensor (its size
  // padded to 32 bytes) would take the current one past split_max_bytes (a file holds
  // one tensor at least), or after every split_max_tensors tensors. Files are named
  // split_prefix-00001-of-00003.gguf (llama_split_path).
  uint64_t split_max_bytes = 0, split_max_tensors = 0;
  // GGUF output, llama-quantize --keep-split's rule instead: file k holds the tensors of
  // the k-th input file that holds any.
  bool keep_split = false;
  // Each GGUF file ends its KVs with split.no, split.count and split.tensors.count, in
  // llama-quantize's order (forget), not gguf-split's (convert: a split set converted
  // with keep_split is then the same files).
  bool llama_quantize_kv = false;
  std::string split_prefix;
  bool gguf_split() const { return split_max_bytes > 0 || split_max_tensors > 0 || keep_split; }
};

struct OutputShard {
  std::string name;  // model-00001-of-00003.safetensors, or model.safetensors alone
  Plan plan;         // a whole file: header, then pieces
};

struct ShardedPlan {
  std::vector<OutputShard> shards;  // in output order; never empty
  // model.safetensors.index.json's bytes; empty when there is one shard (transformers
  // writes no index for an unsharded checkpoint) and for GGUF.
  std::string index_json;
  uint64_t total_size = 0;  // the index's metadata.total_size: the sum of tensor bytes
  uint64_t output_bytes() const;  // every shard file, headers included (not the index)
};

// Plans a conversion split into shards: safetensors, or GGUF with shard.gguf_split().
Result<ShardedPlan> plan_shards(const Model& model, const ConvertOptions& options, const ShardOptions& shard);

// Cuts a whole-file plan (plan_convert's, or a forget's after its prepares) into the
// files of `shard`. `to`: the whole plan's format. Errors: unsupported for a GGUF plan
// without gguf_split() options, limit past 65535 GGUF files (split.no is a UINT16).
Result<ShardedPlan> split_plan(const Plan& whole, OutputFormat to, const ShardOptions& shard);

// "model-q4-00002-of-00003.gguf": llama.cpp's llama_split_path (1-based k).
std::string gguf_split_file_name(std::string_view prefix, size_t k, size_t count);

// "model-00002-of-00003.safetensors" (1-based k, five digits as transformers writes them).
std::string shard_file_name(size_t k, size_t count);

// The index JSON for tensors in `shards`: {"metadata": {"total_size": N}, "weight_map":
// {name: file}}, keys sorted and indented by two spaces (json.dumps(indent=2,
// sort_keys=True) + "\n", as transformers and huggingface_hub write it).
std::string shard_index_json(const std::vector<OutputShard>& shards, uint64_t total_size);

// A size as transformers' --max_shard_size takes it: "5GB" (10^9), "500MiB" (2^20),
// "1.5GB", or a plain number of bytes. Units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB.
Result<uint64_t> parse_shard_size(std::string_view text);
// A size as gguf-split's --split-max-size takes it: N followed by M (10^6) or G (10^9),
// and, beyond gguf-split, whatever parse_shard_size reads.
Result<uint64_t> parse_split_size(std::string_view text);

}  // namespace amn
