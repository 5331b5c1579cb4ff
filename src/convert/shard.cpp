#include "convert/shard.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/checked.h"
#include "core/json.h"
#include "formats/safetensors/write.h"

namespace amn {
namespace {

// Output tensor indices per shard, by input file: file k's tensors, in order, for each
// file that holds any (a file of only consumed companions gives no empty shard).
std::vector<std::vector<uint32_t>> group_by_input(const Plan& plan) {
  std::vector<std::vector<uint32_t>> groups;
  std::map<uint32_t, size_t> group_of;
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    auto [it, added] = group_of.try_emplace(plan.tensor_files[i], groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

// huggingface_hub's split_state_dict_into_shards_factory, step for step: an oversized
// tensor's own shard is appended when it is met, before the shard still being filled.
std::vector<std::vector<uint32_t>> group_by_size(const Plan& plan, uint64_t max_bytes) {
  std::vector<std::vector<uint32_t>> groups;
  std::vector<uint32_t> current;
  uint64_t current_bytes = 0;
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    const uint64_t size = plan.tensors[i].nbytes;
    if (size > max_bytes) {
      groups.push_back({i});
      continue;
    }
    if (current_bytes + size > max_bytes) {
      groups.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.push_back(i);
    current_bytes += size;
  }
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

}  // namespace

std::string shard_file_name(size_t k, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k, count);
  return buf;
}

uint64_t ShardedPlan::output_bytes() const {
  uint64_t n = 0;
  for (const auto& s : shards) n += s.plan.output_bytes();
  return n;
}

std::string shard_index_json(const std::vector<OutputShard>& shards, uint64_t total_size) {
  std::vector<std::pair<std::string_view, std::string_view>> map;
  for (const auto& s : shards) {
    for (const auto& t : s.plan.tensors) map.emplace_back(t.name, s.name);
  }
  // Python sorts str keys by code point; for UTF-8 that is byte order.
  std::sort(map.begin(), map.end());
  std::string o = "{\n  \"metadata\": {\n    \"total_size\": " + std::to_string(total_size) + "\n  },\n  \"weight_map\": {";
  for (size_t i = 0; i < map.size(); ++i) {
    o += i ? ",\n    " : "\n    ";
    append_json_string(o, map[i].first);
    o += ": ";
    append_json_string(o, map[i].second);
  }
  o += map.empty() ? "}\n}\n" : "\n  }\n}\n";
  return o;
}

Result<ShardedPlan> plan_shards(const Model& model, const ConvertOptions& options, const ShardOptions& shard) {
  if (options.to != OutputFormat::safetensors) {
    return make_error(ErrorCode::unsupported, "sharded output is written as safetensors only");
  }
  AMN_ASSIGN(Plan whole, plan_convert(model, options));
  auto groups = shard.max_shard_bytes ? group_by_size(whole, shard.max_shard_bytes) : group_by_input(whole);
  if (groups.empty()) groups.emplace_back();  // a model with no tensors: one empty file
  ShardedPlan out;
  out.shards.resize(groups.size());
  // Where each output tensor went: (shard, index in that shard's plan).
  std::vector<std::pair<uint32_t, uint32_t>> place(whole.tensors.size());
  for (uint32_t g = 0; g < groups.size(); ++g) {
    OutputShard& s = out.shards[g];
    s.name = groups.size() == 1 ? std::string(kSingleShardName) : shard_file_name(g + 1, groups.size());
    s.plan.metadata = whole.metadata;
    s.plan.limits = whole.limits;
    s.plan.ops = whole.ops;  // dequantize_scheme pieces keep their op index
    for (uint32_t i : groups[g]) {
      place[i] = {g, static_cast<uint32_t>(s.plan.tensors.size())};
      s.plan.tensors.push_back(whole.tensors[i]);
      s.plan.tensor_files.push_back(whole.tensor_files[i]);
      out.total_size += whole.tensors[i].nbytes;
    }
  }
  // A tensor's pieces are consecutive and in tensor order, so each shard's pieces come
  // out in its own tensor order.
  for (auto& p : whole.pieces) {
    auto [g, index] = place[p.tensor];
    p.tensor = index;
    out.shards[g].plan.data_bytes += p.out_length;
    out.shards[g].plan.pieces.push_back(std::move(p));
  }
  for (auto& s : out.shards) s.plan.header = safetensors_header(s.plan.tensors, s.plan.metadata);
  if (out.shards.size() > 1) out.index_json = shard_index_json(out.shards, out.total_size);
  return out;
}

Result<uint64_t> parse_shard_size(std::string_view text) {
  auto bad = [&] {
    return make_error(ErrorCode::invalid_argument, "shard size '" + std::string(text) +
                                                       "' is not a size (e.g. 5GB, 500MiB or a number of bytes)");
  };
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  std::string number(text.substr(0, i));
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") return bad();
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1},       {"B", 1},         {"KB", 1e3},     {"MB", 1e6},     {"GB", 1e9},
      {"TB", 1e12},  {"KIB", 1024.0},  {"MIB", 1048576.0}, {"GIB", 1073741824.0}, {"TIB", 1099511627776.0}};
  std::string upper(unit);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& [name, scale] : kUnits) {
    if (upper != name) continue;
    const double bytes = std::strtod(number.c_str(), nullptr) * scale;
    // At least one byte, and no more than fits a uint64 exactly enough to matter.
    if (!(bytes >= 1) || bytes > 9.0e18) return bad();
    return static_cast<uint64_t>(bytes);
  }
  return bad();
}

}  // namespace amn
