// llama-quantize's --prune-layers (src/llama-quant.cpp, remap_layer and remap_imatrix, at
// the commit kernels/ggml/blocks.h names): the tensors of the listed layers are left out,
// the later layers renumbered down, and {arch}.block_count set to the layers kept.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/model.h"
#include "formats/gguf/kv_input.h"
#include "formats/gguf/imatrix.h"

namespace amn {

struct LayerPrune {
  // Per name given (in the order given): its new name, or nullopt when its layer is pruned.
  std::vector<std::optional<std::string>> names;
  // Each layer met, old number -> new (nullopt: pruned); remap_layer's `mapped`.
  std::map<int64_t, std::optional<int64_t>> layers;
  uint32_t block_count = 0;  // remap_layer's next_id after the walk: the new block_count
};

// The first "blk.N." in `name` (std::regex_search of blk\.(\d+)\.): where N starts, its
// length and value; nullopt when there is none. N past INT32_MAX is returned as is (the
// caller refuses it: llama-quantize's std::stoi throws).
struct BlockNumber {
  size_t pos = 0, len = 0;
  uint64_t value = 0;
};
std::optional<BlockNumber> find_block_number(std::string_view name);

// remap_layer over `names` in the loader's order (gguf_loader_order): a layer below the
// first pruned one keeps its number, a pruned layer is dropped, every other one takes the
// next free number. `prune` is sorted and unique (empty: every name as it is). Errors: invalid_argument
// for a layer number past int range.
Result<LayerPrune> prune_layers(std::span<const std::string> names, std::span<const uint32_t> prune);

// The matrix as the pruned model's names look it up (remap_imatrix asks for the old name
// of a new one): each entry of a kept layer under its new number, the pruned layers'
// entries left out, names without a layer as they are.
ImportanceMatrix prune_imatrix(const ImportanceMatrix& m, const LayerPrune& prune);

// A GGUF model as llama-quantize --prune-layers quantizes it: the pruned layers' tensors
// left out, the rest renamed (model.part_of follows), and the KVs that replace the
// input's: {arch}.block_count, and beyond llama-quantize every per-layer array (an
// {arch}.* array of numbers with block_count elements, such as head_count_kv) without the
// pruned layers' elements: llama-quantize leaves them whole, and llama.cpp then refuses
// the file (ggml-org/llama.cpp issue 27976). Errors: unsupported for an input that is not
// GGUF, invalid_argument without general.architecture (llama-quantize reads only GGUF,
// named by its architecture).
struct PrunedModel {
  Model model;
  LayerPrune prune;
  GgufKv block_count;                // set as llama-quantize sets it
  std::vector<GgufKv> layer_arrays;  // replaced where they stand
};
Result<PrunedModel> prune_model(const Model& model, std::span<const uint32_t> prune);

}  // namespace amn
