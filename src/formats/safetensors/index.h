// Sharded safetensors models: `*.safetensors.index.json` (Hugging Face's
// {"metadata": {...}, "weight_map": {tensor: shard file}}) or a folder of shards.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/source.h"

namespace amn {

struct SafetensorsIndex {
  // tensor name -> shard file name, in the index's order
  std::vector<std::pair<std::string, std::string>> weight_map;
  std::vector<std::string> shards;  // distinct shard names, sorted
};

// Shard names must be plain file names: an index may not reach outside its folder.
Result<SafetensorsIndex> parse_safetensors_index(FileSet& files, uint32_t file,
                                                 const ParseLimits& limits);

}  // namespace amn
