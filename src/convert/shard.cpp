#include "convert/shard.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/checked.h"
#include "core/json.h"
#include "convert/plan_gguf.h"
#include "formats/gguf/write.h"
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

// Runs of tensors that must share a shard: one encoder's outputs (a quantized weight and
// its companions, consecutive in the plan), else each tensor alone.
std::vector<std::vector<uint32_t>> units_of(const Plan& plan) {
  std::vector<int64_t> encoder(plan.tensors.size(), -1);
  for (const auto& p : plan.pieces) {
    if (p.kind == PieceKind::encode) encoder[p.tensor] = p.op;
  }
  std::vector<std::vector<uint32_t>> units;
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    if (i > 0 && encoder[i] >= 0 && encoder[i] == encoder[i - 1]) units.back().push_back(i);
    else units.push_back({i});
  }
  return units;
}

// huggingface_hub's split_state_dict_into_shards_factory, step for step (over units, not
// tensors): an oversized unit's own shard is appended when it is met, before the shard
// still being filled.
std::vector<std::vector<uint32_t>> group_by_size(const Plan& plan, uint64_t max_bytes) {
  std::vector<std::vector<uint32_t>> groups;
  std::vector<uint32_t> current;
  uint64_t current_bytes = 0;
  for (const auto& unit : units_of(plan)) {
    uint64_t size = 0;
    for (uint32_t i : unit) size += plan.tensors[i].nbytes;
    if (size > max_bytes) {
      groups.push_back(unit);
      continue;
    }
    if (current_bytes + size > max_bytes) {
      groups.push_back(std::move(current));
      current.clear();
      current_bytes = 0;
    }
    current.insert(current.end(), unit.begin(), unit.end());
    current_bytes += size;
  }
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

// gguf-split's split_strategy: sizes are the tensors' padded to GGUF_DEFAULT_ALIGNMENT (32)
// whatever general.alignment says, metadata not counted; a file never starts empty (where
// gguf-split fails: a first tensor larger than the maximum).
std::vector<std::vector<uint32_t>> group_gguf(const Plan& plan, const ShardOptions& shard) {
  std::vector<std::vector<uint32_t>> groups(1);
  uint64_t current = 0;
  for (uint32_t i = 0; i < plan.tensors.size(); ++i) {
    const uint64_t n = (plan.tensors[i].nbytes + 31) / 32 * 32;
    bool split = false;
    if (shard.split_max_bytes) split = current + n > shard.split_max_bytes;
    else split = i > 0 && i % shard.split_max_tensors == 0;
    if (split && !groups.back().empty()) {
      groups.emplace_back();
      current = 0;
    }
    current += n;
    groups.back().push_back(i);
  }
  return groups;
}

// The KVs of GGUF file k of `count` (gguf-split's new_ctx_out): the first holds every KV
// of the whole file; each ends with split.no (UINT16), split.tensors.count (INT32, the
// tensors of every file) and split.count (UINT16). That order is gguf-split's: ggml's
// gguf_set_val_* removes a key and appends it, and split.count is set twice (a
// placeholder, then the count). llama-quantize --keep-split sets them once each, in the
// order split.no, split.count, split.tensors.count (`llama_quantize`).
std::vector<std::pair<std::string, GgufValue>> split_kv(const Plan& whole, size_t k, size_t count, bool llama_quantize) {
  std::vector<std::pair<std::string, GgufValue>> kv;
  if (k == 0) {
    for (const auto& [key, value] : whole.gguf_kv) {
      if (key != "split.no" && key != "split.count" && key != "split.tensors.count") kv.emplace_back(key, value);
    }
  }
  kv.emplace_back("split.no", gguf_value_uint(GgufType::UINT16, k));
  const auto tensors = gguf_value_int(GgufType::INT32, static_cast<int64_t>(whole.tensors.size()));
  if (llama_quantize) kv.emplace_back("split.count", gguf_value_uint(GgufType::UINT16, count));
  kv.emplace_back("split.tensors.count", tensors);
  if (!llama_quantize) kv.emplace_back("split.count", gguf_value_uint(GgufType::UINT16, count));
  return kv;
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

std::string gguf_split_file_name(std::string_view prefix, size_t k, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.gguf", k, count);
  return std::string(prefix) + buf;
}

Result<ShardedPlan> split_plan(const Plan& whole, OutputFormat to, const ShardOptions& shard) {
  const bool gguf = to == OutputFormat::gguf;
  if (gguf && !shard.gguf_split()) {
    return make_error(ErrorCode::unsupported, "a GGUF output is split by size, tensor count or the input's files only");
  }
  std::vector<std::vector<uint32_t>> groups;
  if (gguf) {
    groups = shard.keep_split ? group_by_input(whole) : group_gguf(whole, shard);
  } else if (shard.one) {
    groups.emplace_back();
    for (uint32_t i = 0; i < whole.tensors.size(); ++i) groups.back().push_back(i);
  } else {
    groups = shard.max_shard_bytes ? group_by_size(whole, shard.max_shard_bytes) : group_by_input(whole);
  }
  if (groups.empty()) groups.emplace_back();  // a model with no tensors: one empty file
  if (gguf && groups.size() > UINT16_MAX) {
    return make_error(ErrorCode::limit, "a split GGUF holds at most 65535 files (split.count is a UINT16), not " +
                                            std::to_string(groups.size()));
  }
  ShardedPlan out;
  out.shards.resize(groups.size());
  // Where each output tensor went: (shard, index in that shard's plan).
  std::vector<std::pair<uint32_t, uint32_t>> place(whole.tensors.size());
  for (uint32_t g = 0; g < groups.size(); ++g) {
    OutputShard& s = out.shards[g];
    if (gguf) s.name = gguf_split_file_name(shard.split_prefix, g + 1, groups.size());
    else s.name = groups.size() == 1 ? std::string(kSingleShardName) : shard_file_name(g + 1, groups.size());
    s.plan.metadata = whole.metadata;
    s.plan.limits = whole.limits;
    s.plan.ops = whole.ops;  // dequantize_scheme and encode pieces keep their op index
    s.plan.encoders = whole.encoders;
    for (uint32_t i : groups[g]) {
      place[i] = {g, static_cast<uint32_t>(s.plan.tensors.size())};
      s.plan.tensors.push_back(whole.tensors[i]);
      s.plan.tensor_files.push_back(whole.tensor_files.empty() ? 0 : whole.tensor_files[i]);
      out.total_size += whole.tensors[i].nbytes;
    }
  }
  // A tensor's pieces are consecutive and in tensor order, so each shard's pieces come
  // out in its own tensor order. A GGUF plan's padding is laid out again per file.
  for (const auto& whole_piece : whole.pieces) {
    if (gguf && whole_piece.kind == PieceKind::zeros) continue;
    Piece p = whole_piece;
    auto [g, index] = place[p.tensor];
    p.tensor = index;
    out.shards[g].plan.data_bytes += p.out_length;
    out.shards[g].plan.pieces.push_back(std::move(p));
  }
  for (size_t g = 0; g < out.shards.size(); ++g) {
    Plan& plan = out.shards[g].plan;
    if (gguf) AMN_TRY(lay_out_gguf(split_kv(whole, g, out.shards.size(), shard.llama_quantize_kv), plan));
    else plan.header = safetensors_header(plan.tensors, plan.metadata);
  }
  if (!gguf && out.shards.size() > 1) out.index_json = shard_index_json(out.shards, out.total_size);
  return out;
}

Result<ShardedPlan> plan_shards(const Model& model, const ConvertOptions& options, const ShardOptions& shard) {
  AMN_ASSIGN(Plan whole, plan_convert(model, options));
  return split_plan(whole, options.to, shard);
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

namespace amn {

Result<uint64_t> parse_split_size(std::string_view text) {
  // gguf-split's split_str_to_n_bytes: a whole number and M or G, decimal units.
  if (text.size() >= 2 && (text.back() == 'M' || text.back() == 'G')) {
    const std::string_view digits = text.substr(0, text.size() - 1);
    if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return parse_shard_size(std::string(digits) + (text.back() == 'M' ? "MB" : "GB"));
    }
  }
  return parse_shard_size(text);
}

}  // namespace amn
