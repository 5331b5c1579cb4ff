#include "schemes/gguf_prune.h"

#include <algorithm>

#include "formats/gguf/describe.h"
#include "schemes/gguf_mix.h"

namespace amn {
namespace {

std::string renumbered(std::string_view name, const BlockNumber& b, int64_t layer) {
  std::string out(name);
  return out.replace(b.pos, b.len, std::to_string(layer));
}

}  // namespace

std::optional<BlockNumber> find_block_number(std::string_view name) {
  for (size_t at = name.find("blk."); at != std::string_view::npos; at = name.find("blk.", at + 1)) {
    const size_t start = at + 4;
    size_t end = start;
    uint64_t value = 0;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9') {
      value = std::min<uint64_t>(value * 10 + static_cast<uint64_t>(name[end] - '0'), uint64_t{1} << 40);
      ++end;
    }
    if (end > start && end < name.size() && name[end] == '.') return BlockNumber{start, end - start, value};
  }
  return std::nullopt;
}

Result<LayerPrune> prune_layers(std::span<const std::string> names, std::span<const uint32_t> prune) {
  LayerPrune out;
  out.names.assign(names.begin(), names.end());
  if (prune.empty()) return out;
  int64_t next_id = 0;
  for (size_t i : gguf_loader_order_of(names.size(), [&](size_t k) -> std::string_view { return names[k]; })) {
    const auto b = find_block_number(names[i]);
    if (!b) continue;  // kept as it is
    if (b->value > INT32_MAX) {
      return make_error(ErrorCode::invalid_argument, "pruneLayers: the layer number of tensor '" + names[i] + "' is past int range");
    }
    const int64_t blk = static_cast<int64_t>(b->value);
    auto [it, added] = out.layers.try_emplace(blk);
    if (added) {
      if (std::binary_search(prune.begin(), prune.end(), static_cast<uint32_t>(blk))) {
        it->second = std::nullopt;
      } else if (blk < static_cast<int64_t>(prune.front())) {
        it->second = blk;
        next_id = blk + 1;
      } else {
        it->second = next_id++;
      }
    }
    if (it->second) out.names[i] = renumbered(names[i], *b, *it->second);
    else out.names[i] = std::nullopt;
  }
  out.block_count = static_cast<uint32_t>(next_id);
  return out;
}

ImportanceMatrix prune_imatrix(const ImportanceMatrix& m, const LayerPrune& prune) {
  if (prune.layers.empty()) return m;
  ImportanceMatrix out = m;
  out.entries.clear();
  for (const auto& [name, values] : m.entries) {
    const auto b = find_block_number(name);
    if (!b) {
      out.entries.emplace(name, values);
      continue;
    }
    const auto it = prune.layers.find(static_cast<int64_t>(b->value));
    if (it == prune.layers.end() || !it->second) continue;  // a layer the model lacks, or pruned
    out.entries.insert_or_assign(renumbered(name, *b, *it->second), values);
  }
  return out;
}

Result<PrunedModel> prune_model(const Model& model, std::span<const uint32_t> prune) {
  if (model.format != ModelFormat::gguf || !model.format_state) {
    return make_error(ErrorCode::unsupported, "pruneLayers: llama-quantize prunes the layers of a GGUF input (its KVs count them)");
  }
  const GgufFile& g = static_cast<const GgufState&>(*model.format_state).header;
  const GgufValue* arch = g.find("general.architecture");
  if (!arch || arch->type != GgufType::STRING) {
    return make_error(ErrorCode::invalid_argument, "pruneLayers: the GGUF has no general.architecture (llama-quantize needs it)");
  }
  std::vector<std::string> names;
  names.reserve(model.tensors.size());
  for (const auto& t : model.tensors) names.push_back(t.name);
  PrunedModel out;
  AMN_ASSIGN(out.prune, prune_layers(names, prune));
  out.model = model;
  out.model.tensors.clear();
  out.model.part_of.clear();
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    if (!out.prune.names[i]) continue;
    out.model.tensors.push_back(model.tensors[i]);
    out.model.tensors.back().name = *out.prune.names[i];
    if (i < model.part_of.size()) out.model.part_of.push_back(model.part_of[i]);
  }
  const std::string prefix = arch->str + ".";
  GgufValue count;
  count.type = GgufType::UINT32;
  count.u = out.prune.block_count;
  out.block_count = {prefix + "block_count", std::move(count)};
  const GgufValue* layers = g.find(prefix + "block_count");
  const uint64_t n_layer = layers ? layers->as_uint().value_or(0) : 0;  // 0: none given
  for (const auto& [key, v] : g.kv) {
    const uint64_t size = v.type == GgufType::ARRAY ? gguf_fixed_size(v.elem_type) : 0;
    if (n_layer == 0 || size == 0 || v.count != n_layer || !key.starts_with(prefix)) continue;
    GgufValue kept = v;
    kept.raw.clear();
    kept.count = 0;
    for (uint64_t i = 0; i < v.count; ++i) {
      if (i <= UINT32_MAX && std::binary_search(prune.begin(), prune.end(), static_cast<uint32_t>(i))) continue;
      kept.raw.insert(kept.raw.end(), v.raw.begin() + static_cast<std::ptrdiff_t>(i * size),
                      v.raw.begin() + static_cast<std::ptrdiff_t>((i + 1) * size));
      ++kept.count;
    }
    out.layer_arrays.emplace_back(key, std::move(kept));
  }
  return out;
}

}  // namespace amn
