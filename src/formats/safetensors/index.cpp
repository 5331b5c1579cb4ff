#include "formats/safetensors/index.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include <simdjson.h>

#include "core/json_syntax.h"
#include "core/text.h"

namespace amn {
namespace {

Error index_error(const std::string& name, std::string message) {
  return make_error(ErrorCode::parse, name + ": " + std::move(message));
}

bool is_plain_file_name(std::string_view s) {
  if (s.empty() || s == "." || s == "..") return false;
  return s.find('/') == std::string_view::npos && s.find('\\') == std::string_view::npos &&
         s.find('\0') == std::string_view::npos;
}

}  // namespace

Result<SafetensorsIndex> parse_safetensors_index(FileSet& files, uint32_t file,
                                                 const ParseLimits& requested) {
  const ParseLimits limits = effective_limits(requested);
  const std::string& name = files.name(file);
  const uint64_t size = files.size(file);
  if (size > kHardMaxSafetensorsHeader || size > limits.max_single_alloc) {
    return make_error(ErrorCode::limit, name + ": index file of " + std::to_string(size) + " bytes is too large");
  }
  MemoryBudget budget(limits, name);
  AMN_TRY(budget.charge(size, "the index text", 0));
  AMN_TRY(budget.charge(size * kJsonDomBytesPerByte, "the JSON parser's tape for the index", 0));
  AMN_ASSIGN(auto text, files.read(file, 0, size));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(text.data(), text.size(), true).get(root)) {
    uint64_t at = kNoOffset;
    std::string why = describe_json_error(err, std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), 0, at);
    Error e = index_error(name, "not valid JSON: " + std::move(why));
    e.offset = at;
    return e;
  }
  simdjson::dom::object map;
  if (root["weight_map"].get_object().get(map)) {
    return index_error(name, "has no \"weight_map\" object");
  }
  if (map.size() > limits.max_item_count) {
    return make_error(ErrorCode::limit, name + ": weight_map lists more than " +
                                            std::to_string(limits.max_item_count) + " tensors");
  }
  SafetensorsIndex out;
  std::unordered_set<std::string_view> seen;
  std::set<std::string> shards;
  for (auto kv : map) {
    std::string_view shard;
    if (kv.value.get_string().get(shard)) {
      return index_error(name, "weight_map value for " + quote(kv.key) + " is not a string");
    }
    if (!seen.insert(kv.key).second) {
      return index_error(name, "duplicate tensor name " + quote(kv.key) + " in weight_map");
    }
    if (!is_plain_file_name(shard)) {
      return index_error(name, "shard name " + quote(shard) + " is not a plain file name in the index's folder");
    }
    AMN_TRY(budget.charge(sizeof(out.weight_map[0]) + kv.key.size() + 2 * shard.size(), "the weight_map"));
    out.weight_map.emplace_back(std::string(kv.key), std::string(shard));
    shards.insert(std::string(shard));
    if (shards.size() > kHardMaxShards) return make_error(ErrorCode::limit, name + ": too many shards");
  }
  out.shards.assign(shards.begin(), shards.end());
  return out;
}

}  // namespace amn
