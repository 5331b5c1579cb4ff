#include "session/open.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <simdjson.h>

#include "core/json_syntax.h"
#include "formats/gguf/describe.h"
#include "formats/gguf/parse.h"
#include "formats/npy/header.h"
#include "formats/npy/npy.h"
#include "formats/pth/parse.h"
#include "formats/zip/zip.h"
#include "formats/safetensors/index.h"
#include "formats/safetensors/parse.h"
#include "schemes/detect.h"
#include "schemes/quant_config.h"
#include "session/registry.h"

namespace amn {
namespace {

Error with_file_prefix(const std::string& file, Error e) {
  if (e.code != ErrorCode::need_bytes && e.code != ErrorCode::need_files) {
    e.message = file + ": " + e.message;
  }
  return e;
}

// A sibling JSON object, minified, or "" when the set has no such file. A broken one is a
// warning, not a failure: the tensors are still readable without it.
Result<std::string> read_json_object(FileSet& files, const char* name, const ParseLimits& limits, Model& model) {
  auto id = files.find(name);
  if (!id) return std::string();
  const uint64_t size = files.size(*id);
  if (size > kHardMaxSafetensorsHeader || size > limits.max_single_alloc) {
    model.warnings.push_back(std::string(name) + " is larger than the header limit; ignored");
    return std::string();
  }
  AMN_ASSIGN(auto text, files.read(*id, 0, size));
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(text.data(), text.size(), true).get(root)) {
    uint64_t at = 0;  // words with the byte, not simdjson's error names (core/json_syntax.h)
    model.warnings.push_back(std::string(name) + " is not valid JSON (" + describe_json_error(err, std::string_view(reinterpret_cast<const char*>(text.data()), text.size()), 0, at) + "); ignored");
    return std::string();
  }
  if (!root.is_object()) {
    model.warnings.push_back(std::string(name) + " is not a JSON object; ignored");
    return std::string();
  }
  return std::string(simdjson::minify(root));
}

// config.json, and the first quantizer config present (GPTQModel reads only the first).
Status read_config(FileSet& files, const ParseLimits& limits, Model& model) {
  AMN_ASSIGN(model.config_json, read_json_object(files, kConfigFileName, limits, model));
  for (size_t i = 1; i < kConfigFileNames.size() && model.quant_config_json.empty(); ++i) {
    AMN_ASSIGN(model.quant_config_json, read_json_object(files, kConfigFileNames[i], limits, model));
    if (!model.quant_config_json.empty()) model.quant_config_file = kConfigFileNames[i];
  }
  return {};
}

// Whether the format's open reads the config files beside it (GGUF keeps its own
// metadata: open_gguf only lists them).
bool reads_config(ModelFormat format) { return format != ModelFormat::gguf; }

bool is_torch_name(std::string_view name) {
  return name.ends_with(".bin") || name.ends_with(".pt") || name.ends_with(".pth") || name.ends_with(".ckpt");
}

// A shard is safetensors, or (pytorch_model-00001-of-00002.bin) a torch.save file.
Status add_torch_shard(FileSet& files, uint32_t id, const ParseLimits& limits, Model& model,
                       std::map<std::string, uint32_t, std::less<>>& owner) {
  auto shard = parse_pth(files, id, limits);
  if (!shard) return with_file_prefix(files.name(id), std::move(shard).error());
  for (auto& w : shard->warnings) model.warnings.push_back(files.name(id) + ": " + w);
  if (model.details_json.empty()) {  // the first shard's pickle verdict stands for the rest
    model.details_json = shard->details_json;
    model.details_text = shard->details_text;
  }
  for (auto& t : shard->tensors) {
    auto [it, inserted] = owner.emplace(t.name, id);
    if (!inserted) {
      return make_error(ErrorCode::parse, "tensor '" + t.name + "' appears in both " +
                                              files.name(it->second) + " and " + files.name(id));
    }
    t.file = id;
    model.tensors.push_back(std::move(t));
  }
  return {};
}

Status add_shard(FileSet& files, uint32_t id, const ParseLimits& limits, Model& model,
                 std::map<std::string, uint32_t, std::less<>>& owner) {
  if (is_torch_name(files.name(id))) return add_torch_shard(files, id, limits, model, owner);
  auto header = parse_safetensors(files, id, limits);
  if (!header) return with_file_prefix(files.name(id), std::move(header).error());
  model.files[id].header_bytes = header->header_bytes;
  for (auto& kv : header->metadata) {
    bool present = std::any_of(model.metadata.begin(), model.metadata.end(),
                               [&](const auto& m) { return m.first == kv.first; });
    if (!present) model.metadata.push_back(std::move(kv));
  }
  for (auto& t : header->tensors) {
    auto [it, inserted] = owner.emplace(t.name, id);
    if (!inserted) {
      return make_error(ErrorCode::parse, "tensor '" + t.name + "' appears in both " +
                                              files.name(it->second) + " and " + files.name(id));
    }
    model.tensors.push_back(std::move(t));
  }
  return {};
}

// Parses every shard before failing on need_bytes, so one round asks for all headers.
Status add_shards(FileSet& files, const std::vector<uint32_t>& ids, const ParseLimits& limits,
                  Model& model, std::map<std::string, uint32_t, std::less<>>& owner) {
  std::vector<ByteRange> need;
  for (uint32_t id : ids) {
    auto st = add_shard(files, id, limits, model, owner);
    if (!st) {
      if (st.error().code != ErrorCode::need_bytes) return std::move(st).error();
      need.insert(need.end(), st.error().need_bytes.begin(), st.error().need_bytes.end());
    }
  }
  if (need.empty()) return {};
  Error e = make_error(ErrorCode::need_bytes, "shard headers not yet available");
  e.need_bytes = std::move(need);
  return e;
}

Result<Model> open_safetensors(FileSet& files, const ParseLimits& limits) {
  Model model;
  model.format = ModelFormat::safetensors;
  for (uint32_t i = 0; i < files.count(); ++i) model.files.push_back({files.name(i), files.size(i), 0});
  std::map<std::string, uint32_t, std::less<>> owner;

  const std::string& entry = files.name(0);
  if (entry_is_index(entry)) {
    AMN_ASSIGN(auto index, parse_safetensors_index(files, 0, limits));
    std::vector<std::string> missing;
    std::vector<uint32_t> ids;
    for (const auto& shard : index.shards) {
      auto id = files.find(shard);
      if (!id) missing.push_back(shard);
      else ids.push_back(*id);
    }
    if (!missing.empty()) {
      Error e = make_error(ErrorCode::need_files, entry + " names shards that are not open: " + missing.front() +
                                                      (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more" : ""));
      e.need_files = std::move(missing);
      return e;
    }
    const bool torch = !index.shards.empty() && is_torch_name(index.shards.front());
    for (const auto& shard : index.shards) {
      if (is_torch_name(shard) != torch) {
        return make_error(ErrorCode::unsupported, entry + " mixes safetensors and PyTorch shards (" +
                                                      index.shards.front() + ", " + shard + ")");
      }
    }
    if (torch) model.format = ModelFormat::pth;
    AMN_TRY(add_shards(files, ids, limits, model, owner));
    for (const auto& [tensor, shard] : index.weight_map) {
      auto it = owner.find(tensor);
      if (it == owner.end()) {
        return make_error(ErrorCode::parse, entry + ": tensor '" + tensor + "' is mapped to " + shard +
                                                ", which does not hold it");
      }
      if (files.name(it->second) != shard) {
        return make_error(ErrorCode::parse, entry + ": tensor '" + tensor + "' is mapped to " + shard +
                                                " but is stored in " + files.name(it->second));
      }
    }
    if (owner.size() != index.weight_map.size()) {
      for (const auto& t : model.tensors) {
        bool listed = std::any_of(index.weight_map.begin(), index.weight_map.end(),
                                  [&](const auto& w) { return w.first == t.name; });
        if (!listed) {
          return make_error(ErrorCode::parse, entry + ": shard " + files.name(t.file) + " holds tensor '" +
                                                  t.name + "' that the index does not list");
        }
      }
    }
    model.index_name = entry;
    model.sharded = true;
  } else {
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < files.count(); ++i) {
      if (i == 0 || files.name(i).ends_with(".safetensors")) ids.push_back(i);
    }
    std::sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return files.name(a) < files.name(b); });
    if (ids.size() == 1) {
      AMN_ASSIGN(auto header, parse_safetensors(files, 0, limits));
      model.files[0].header_bytes = header.header_bytes;
      model.metadata = std::move(header.metadata);
      model.tensors = std::move(header.tensors);
    } else {
      AMN_TRY(add_shards(files, ids, limits, model, owner));
    }
    model.sharded = ids.size() > 1;
  }
  AMN_TRY(read_config(files, limits, model));
  AMN_TRY(detect_schemes(model, files));
  return model;
}

bool looks_like_zip(std::span<const uint8_t> head) {
  // A local header, or the end record of an empty archive.
  return head.size() >= 4 && head[0] == 'P' && head[1] == 'K' &&
         ((head[2] == 3 && head[3] == 4) || (head[2] == 5 && head[3] == 6));
}

bool looks_like_npy(std::span<const uint8_t> head) {
  static constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  return head.size() >= 6 && std::equal(kMagic, kMagic + 6, head.begin());
}

// NumPy and PyTorch files: config files beside them are read as for safetensors.
Result<Model> with_sibling_config(FileSet& files, const ParseLimits& limits, Result<Model> model) {
  if (!model) return with_file_prefix(files.name(0), std::move(model).error());
  for (uint32_t i = static_cast<uint32_t>(model->files.size()); i < files.count(); ++i) {
    model->files.push_back({files.name(i), files.size(i), 0});
  }
  AMN_TRY(read_config(files, limits, *model));
  return model;
}

std::string split_file_name(const std::string& prefix, uint32_t no, uint32_t count) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "-%05u-of-%05u.gguf", no, count);
  return prefix + buf;
}

// A GGUF file, or every shard of a split model (llama.cpp's gguf-split naming and KVs).
Result<Model> open_gguf(FileSet& files, const ParseLimits& limits) {
  Model model;
  model.format = ModelFormat::gguf;
  for (uint32_t i = 0; i < files.count(); ++i) model.files.push_back({files.name(i), files.size(i), 0});
  AMN_ASSIGN(auto first, parse_gguf(files, 0, limits));
  std::vector<std::pair<uint32_t, GgufFile>> shards;  // (file id, header) in shard order
  const auto name = gguf_split_name(files.name(0));
  if (first.split && first.split->count > 1 && name) {
    const uint32_t count = first.split->count;
    std::vector<std::string> missing;
    std::vector<uint32_t> ids(count, 0);
    for (uint32_t k = 1; k <= count; ++k) {
      const std::string shard = split_file_name(name->prefix, k, count);
      auto id = files.find(shard);
      if (!id) missing.push_back(shard);
      else ids[k - 1] = *id;
    }
    if (!missing.empty()) {
      Error e = make_error(ErrorCode::need_files, files.name(0) + " is shard " + std::to_string(first.split->no + 1) +
                                                      " of " + std::to_string(count) + "; not open: " + missing.front());
      e.need_files = std::move(missing);
      return e;
    }
    std::vector<ByteRange> need;
    for (uint32_t k = 0; k < count; ++k) {
      auto g = ids[k] == 0 ? Result<GgufFile>(first) : parse_gguf(files, ids[k], limits);
      if (!g) {
        if (g.error().code != ErrorCode::need_bytes) return with_file_prefix(files.name(ids[k]), std::move(g).error());
        need.insert(need.end(), g.error().need_bytes.begin(), g.error().need_bytes.end());
        continue;
      }
      if (!g->split || g->split->no != k || g->split->count != count) {
        return make_error(ErrorCode::parse, files.name(ids[k]) + ": its split.no / split.count do not say shard " +
                                                std::to_string(k + 1) + " of " + std::to_string(count));
      }
      shards.emplace_back(ids[k], std::move(g).value());
    }
    if (!need.empty()) {
      Error e = make_error(ErrorCode::need_bytes, "shard headers not yet available");
      e.need_bytes = std::move(need);
      return e;
    }
    model.sharded = true;
  } else {
    if (first.split && first.split->count > 1) {
      model.warnings.push_back("this is shard " + std::to_string(first.split->no + 1) + " of " +
                               std::to_string(first.split->count) +
                               ", but its name does not follow <prefix>-00001-of-00003.gguf: only this shard is shown");
    }
    shards.emplace_back(0, std::move(first));
  }
  std::map<std::string, uint32_t, std::less<>> owner;
  for (auto& [id, g] : shards) {
    model.files[id].header_bytes = g.data_offset;
    for (auto& w : g.warnings) model.warnings.push_back(files.name(id) + ": " + w);
    for (const auto& t : g.tensors) {
      auto [it, inserted] = owner.emplace(t.name, id);
      if (!inserted) {
        return make_error(ErrorCode::parse, "tensor '" + t.name + "' appears in both " + files.name(it->second) +
                                                " and " + files.name(id));
      }
    }
    add_gguf_tensors(g, id, model);
  }
  const GgufFile& head = shards.front().second;
  if (model.sharded && head.split->tensors_count != model.tensors.size()) {
    return make_error(ErrorCode::parse, "split.tensors.count says " + std::to_string(head.split->tensors_count) +
                                            " tensors but the shards hold " + std::to_string(model.tensors.size()));
  }
  model.big_endian = head.big_endian;
  // details_json / details_text stay empty: report/details.cpp writes them from the
  // header kept here when a report asks (most opens never do).
  auto state = std::make_shared<GgufState>();
  state->header = head;
  model.format_state = std::move(state);
  return model;
}

}  // namespace

// The rows' open functions and sniffs (registry.cpp).
namespace detail {

Result<Model> open_safetensors_set(FileSet& files, const ParseLimits& limits) { return open_safetensors(files, limits); }
Result<Model> open_gguf_set(FileSet& files, const ParseLimits& limits) { return open_gguf(files, limits); }
Result<Model> open_npy_file(FileSet& files, const ParseLimits& limits) {
  return with_sibling_config(files, limits, parse_npy(files, 0, limits));
}
Result<Model> open_npz_file(FileSet& files, const ParseLimits& limits) {
  return with_sibling_config(files, limits, parse_npz(files, 0, limits));
}
Result<Model> open_pth_file(FileSet& files, const ParseLimits& limits) {
  return with_sibling_config(files, limits, parse_pth(files, 0, limits));
}
// A ZIP told by content is a torch.save archive when it holds a pickle, else NumPy's savez.
Result<Model> open_zip_or_legacy_pth(FileSet& files, const ParseLimits& limits) {
  AMN_ASSIGN(auto head, files.read(0, 0, std::min(files.size(0), kSafetensorsReadAhead)));
  if (!looks_like_zip(head)) return open_pth_file(files, limits);
  auto archive = zip::read_archive(files, 0, limits, npy::kFirstRead);
  if (!archive) return with_file_prefix(files.name(0), std::move(archive).error());
  const bool torch = std::any_of(archive->entries.begin(), archive->entries.end(), [](const zip::Entry& e) {
    return e.name == "data.pkl" || e.name.ends_with("/data.pkl");
  });
  return torch ? open_pth_file(files, limits) : open_npz_file(files, limits);
}
bool sniff_torch(std::span<const uint8_t> head, uint64_t) { return looks_like_zip(head) || looks_like_legacy_pth(head); }
bool sniff_npy(std::span<const uint8_t> head, uint64_t) { return looks_like_npy(head); }
bool sniff_gguf(std::span<const uint8_t> head, uint64_t) { return looks_like_gguf(head); }
bool sniff_safetensors(std::span<const uint8_t> head, uint64_t size) { return looks_like_safetensors(head, size); }

}  // namespace detail

namespace {

Result<Model> open_by_format(FileSet& files, const ParseLimits& limits) {
  if (files.count() == 0) return make_error(ErrorCode::invalid_argument, "no file to open");
  const std::string& entry = files.name(0);
  if (const FormatRow* row = format_by_extension(entry)) return row->open(files, limits);
  // No trusted extension: decide by content, from the window the safetensors parser
  // reads first (a GGUF without its extension costs one more round trip, no more).
  const uint64_t size = files.size(0);
  AMN_ASSIGN(auto head, files.read(0, 0, std::min(size, kSafetensorsReadAhead)));
  for (const FormatRow& row : format_rows()) {
    if (row.sniff && row.sniff(head, size)) return (row.open_sniffed ? row.open_sniffed : row.open)(files, limits);
  }
  return make_error(ErrorCode::unsupported,
                    entry + ": not a recognised tensor file (supported: " + supported_formats_text() + ")", 0);
}

}  // namespace

Result<Model> open_model(FileSet& files, const ParseLimits& limits) {
  AMN_ASSIGN(auto model, open_by_format(files, limits));
  model.limits = limits;
  return model;
}

std::vector<std::string> model_files_in_folder(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<const FormatRow*> rows;
  for (const FormatRow& row : format_rows()) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const FormatRow* a, const FormatRow* b) { return a->folder_rank < b->folder_rank; });
  std::vector<std::string> out;
  for (const FormatRow* row : rows) {
    if (!out.empty()) break;
    if (row->pick_in_folder) out = row->pick_in_folder(names);
  }
  if (!out.empty()) {
    for (const char* config : kConfigFileNames) {
      if (std::find(names.begin(), names.end(), config) != names.end()) out.push_back(config);
    }
  }
  return out;
}

namespace detail {

// Exactly one *.safetensors.index.json, else every *.safetensors (several indexes are
// ambiguous: fall back to the shards).
std::vector<std::string> pick_safetensors(const std::vector<std::string>& names) {
  std::vector<std::string> out, shards;
  for (const auto& n : names) {
    if (n.ends_with(".safetensors.index.json")) out.push_back(n);
    else if (n.ends_with(".safetensors")) shards.push_back(n);
  }
  if (out.size() > 1) out.clear();
  out.insert(out.end(), shards.begin(), shards.end());
  return out;
}

// The first GGUF; for a split model, shard 1 (the parser asks for the rest).
std::vector<std::string> pick_gguf(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (!n.ends_with(".gguf")) continue;
    auto split = gguf_split_name(n);
    if (!split || split->no == 1) return {n};
  }
  return {};
}

// A PyTorch index (its shards are asked for), else the first PyTorch file.
std::vector<std::string> pick_torch(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n.ends_with(".bin.index.json") || n.ends_with(".pt.index.json") || n.ends_with(".pth.index.json")) return {n};
  }
  for (const auto& n : names) {
    if (is_torch_name(n)) return {n};
  }
  return {};
}

// The first NumPy file (.npz or .npy: one rank for both).
std::vector<std::string> pick_numpy(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (n.ends_with(".npz") || n.ends_with(".npy")) return {n};
  }
  return {};
}

}  // namespace detail

bool entry_is_index(std::string_view name) { return name.ends_with(".index.json"); }

Error no_model_files(std::string_view folder) {
  return make_error(ErrorCode::io, std::string(folder) + " holds no model files (" + model_file_patterns_text() + ")");
}

Error url_not_read_here(std::string_view url) {
  return make_error(ErrorCode::unsupported, "cannot open " + std::string(url) +
                                                ": amn reads local files; npx amn and the npm package read http(s) URLs");
}

Status read_late_config(FileSet& files, const ParseLimits& limits, Model& model) {
  // Into a scratch model first: a need_bytes leaves `model` as it was.
  Model late;
  late.format = model.format;
  if (reads_config(model.format)) AMN_TRY(read_config(files, limits, late));
  for (uint32_t i = static_cast<uint32_t>(model.files.size()); i < files.count(); ++i) {
    model.files.push_back({files.name(i), files.size(i), 0});
  }
  model.config_json = std::move(late.config_json);
  model.quant_config_json = std::move(late.quant_config_json);
  model.quant_config_file = std::move(late.quant_config_file);
  for (auto& w : late.warnings) model.warnings.push_back(std::move(w));
  // What detect_schemes adds besides its detectors' claims (none here: the config did
  // not matter at open): the quantizer config's disagreements with config.json.
  if (model.format == ModelFormat::safetensors) {
    for (auto& w : schemes::choose_quant_config(model).warnings) model.warnings.push_back(std::move(w));
  }
  return {};
}

bool is_config_file_name(std::string_view name) {
  return std::find(kConfigFileNames.begin(), kConfigFileNames.end(), name) != kConfigFileNames.end();
}

}  // namespace amn
