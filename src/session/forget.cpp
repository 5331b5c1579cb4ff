#include "session/forget.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "core/json.h"
#include "formats/gguf/kv_input.h"
#include "schemes/forget_gguf.h"
#include "schemes/gguf_prune.h"
#include "session/output.h"

namespace amn {
namespace {

// json.dumps(value, indent=2, sort_keys=True): keys sorted by code point (UTF-8 byte
// order), floats as Python's repr, ", " / ": " separators with indent.
void pretty(std::string& out, simdjson::dom::element v, int depth) {
  const std::string pad(static_cast<size_t>(depth + 1) * 2, ' '), close(static_cast<size_t>(depth) * 2, ' ');
  switch (v.type()) {
    case simdjson::dom::element_type::OBJECT: {
      std::vector<std::pair<std::string_view, simdjson::dom::element>> members;
      simdjson::dom::object object;
      if (v.get_object().get(object)) return;
      for (auto kv : object) members.emplace_back(kv.key, kv.value);
      std::stable_sort(members.begin(), members.end(), [](auto& a, auto& b) { return a.first < b.first; });
      if (members.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      for (size_t i = 0; i < members.size(); ++i) {
        out += pad;
        append_json_string(out, members[i].first);
        out += ": ";
        pretty(out, members[i].second, depth + 1);
        out += i + 1 < members.size() ? ",\n" : "\n";
      }
      out += close + "}";
      return;
    }
    case simdjson::dom::element_type::ARRAY: {
      simdjson::dom::array items;
      if (v.get_array().get(items)) return;
      if (items.size() == 0) {
        out += "[]";
        return;
      }
      out += "[\n";
      size_t i = 0;
      for (auto item : items) {
        out += pad;
        pretty(out, item, depth + 1);
        out += ++i < items.size() ? ",\n" : "\n";
      }
      out += close + "]";
      return;
    }
    case simdjson::dom::element_type::STRING: append_json_string(out, v.get_string().value_unsafe()); return;
    case simdjson::dom::element_type::INT64: out += std::to_string(v.get_int64().value_unsafe()); return;
    case simdjson::dom::element_type::UINT64: out += std::to_string(v.get_uint64().value_unsafe()); return;
    case simdjson::dom::element_type::DOUBLE: out += python_float_repr(v.get_double().value_unsafe()); return;
    case simdjson::dom::element_type::BOOL: out += v.get_bool().value_unsafe() ? "true" : "false"; return;
    case simdjson::dom::element_type::NULL_VALUE: out += "null"; return;
    default: out += "null"; return;  // a big integer simdjson keeps as text: not in configs
  }
}

}  // namespace

namespace {

GgufValue gguf_u32(uint32_t v) {
  GgufValue g;
  g.type = GgufType::UINT32;
  g.u = v;
  return g;
}

GgufValue gguf_string(std::string_view text) {
  GgufValue g;
  g.type = GgufType::STRING;
  g.str = std::string(text.substr(0, 127));  // llama-quantize's strncpy into a 128-byte override
  return g;
}

// The KVs llama-quantize's main() adds as overrides when it has an importance matrix.
std::vector<GgufKv> imatrix_kv(const ConvertRequest& request, const ImportanceMatrix& m) {
  std::vector<GgufKv> kv{{"quantize.imatrix.file", gguf_string(request.imatrix)}};
  if (!m.datasets.empty()) kv.push_back({"quantize.imatrix.dataset", gguf_string(m.datasets[0])});
  kv.push_back({"quantize.imatrix.entries_count", gguf_u32(static_cast<uint32_t>(m.entries.size()))});
  if (m.chunk_count > 0) kv.push_back({"quantize.imatrix.chunks_count", gguf_u32(static_cast<uint32_t>(m.chunk_count))});
  return kv;
}

// llama-quantize's prepare_imatrix: --exclude-weights drops the entries whose names
// contain one of the strings, --include-weights keeps only those (never both).
std::shared_ptr<const ImportanceMatrix> select_imatrix(std::shared_ptr<const ImportanceMatrix> m, const ConvertRequest& r) {
  if (!m || (r.include_weights.empty() && r.exclude_weights.empty())) return m;
  auto contains_one = [](const std::string& name, const std::vector<std::string>& parts) {
    return std::any_of(parts.begin(), parts.end(), [&](const std::string& p) { return name.find(p) != std::string::npos; });
  };
  auto out = std::make_shared<ImportanceMatrix>(*m);
  std::erase_if(out->entries, [&](const auto& e) {
    return r.include_weights.empty() ? contains_one(e.first, r.exclude_weights) : !contains_one(e.first, r.include_weights);
  });
  return out;
}

}  // namespace

Result<ForgetPlan> plan_forget_request(const Model& input, const ConvertRequest& request, Surface surface,
                                       std::shared_ptr<const Forgetter> like, std::shared_ptr<const ImportanceMatrix> imatrix) {
  AMN_ASSIGN(auto settings, forget_settings(request, surface));
  if (!request.imatrix.empty() && !imatrix) {
    return make_error(ErrorCode::invalid_argument, option_name(OptionId::imatrix, surface) + ": the importance matrix file was not read");
  }
  imatrix = select_imatrix(std::move(imatrix), request);
  settings.imatrix = imatrix;
  // --prune-layers: everything below sees the pruned, renumbered model, as llama-quantize's
  // loop does; the matrix is looked up by the new names (its KVs still count its entries).
  std::optional<PrunedModel> pruned;
  if (!request.prune_layers.empty()) {
    if (!request.like.empty()) {
      return make_error(ErrorCode::invalid_argument, option_name(OptionId::like, Surface::cli) +
                                                         " takes each tensor from the reference: leave out " +
                                                         option_name(OptionId::prune_layers, Surface::cli));
    }
    auto made = prune_model(input, request.prune_layers);
    if (!made) return option_spelled(std::move(made).error(), surface);
    pruned = std::move(*made);
    if (imatrix) settings.imatrix = std::make_shared<const ImportanceMatrix>(prune_imatrix(*imatrix, pruned->prune));
  }
  const Model& model = pruned ? pruned->model : input;
  ForgetOptions options;
  if (!request.like.empty()) {
    if (!like) return make_error(ErrorCode::unsupported, option_name(OptionId::like, surface) + " is not available here yet");
    // G names each tensor's type: llama-quantize's choices have no say. Spelled as the
    // command line spells them, as the reference's other misfits are (both CLIs print them).
    if (like->gguf_reference_kv()) {
      if (request.to != OutputFormat::gguf) {
        return make_error(ErrorCode::invalid_argument, option_name(OptionId::like, Surface::cli) + ": a GGUF reference writes GGUF (" +
                                                           option_name(OptionId::format, Surface::cli) + " gguf)");
      }
      for (auto [given, id] : {std::pair{request.pure, OptionId::pure}, std::pair{!request.imatrix.empty(), OptionId::imatrix},
                               std::pair{!request.output_tensor_type.empty(), OptionId::output_tensor_type},
                               std::pair{!request.token_embedding_type.empty(), OptionId::token_embedding_type},
                               std::pair{request.leave_output_tensor, OptionId::leave_output_tensor},
                               std::pair{!request.tensor_types.empty(), OptionId::tensor_type},
                               std::pair{!request.tensor_type_file.empty(), OptionId::tensor_type_file}}) {
        if (given) {
          return make_error(ErrorCode::invalid_argument, option_name(OptionId::like, Surface::cli) +
                                                             " takes each tensor's type from the GGUF reference: leave out " + option_name(id, Surface::cli));
        }
      }
    }
    AMN_TRY(like->check_input(model));
    options.forgetter = std::move(like);
  } else {
    AMN_ASSIGN(auto forgetter, make_forgetter(settings));
    if (auto prepared = forgetter->prepare(model); !prepared) return option_spelled(std::move(prepared).error(), surface);
    options.forgetter = std::shared_ptr<const Forgetter>(std::move(forgetter));
  }
  options.skip = request.skip;
  options.only = request.only;
  options.strict = request.strict;
  if (request.to == OutputFormat::gguf) {
    AMN_ASSIGN(options.convert, convert_options(request));
    // llama-quantize's own KVs first, so the request's may still replace them.
    std::vector<GgufKv> kv;
    if (auto ft = gguf_file_type(request.scheme)) {
      kv = {{"general.quantization_version", gguf_u32(ft->quantization_version)}, {"general.file_type", gguf_u32(ft->file_type)}};
    } else if (auto ref_kv = options.forgetter->gguf_reference_kv()) {
      kv = std::move(*ref_kv);  // --like G.gguf: G's
    }
    if (imatrix && !imatrix->entries.empty()) merge_gguf_kv(kv, imatrix_kv(request, *imatrix));
    if (pruned) kv.push_back(pruned->block_count);
    // Set as llama-quantize sets them (moved to the end, in this order); then the pruned
    // per-layer arrays and the request's KVs, where they stand.
    options.convert.gguf_kv_set = std::move(kv);
    if (pruned) {
      std::vector<GgufKv> arrays = std::move(pruned->layer_arrays);
      merge_gguf_kv(arrays, std::move(options.convert.gguf_kv));
      options.convert.gguf_kv = std::move(arrays);
    }
    // llama-quantize writes a GGUF input's tensors in its loader's order (by layer, then
    // name); --keep-split keeps each input file's order, as it does.
    options.loader_order = model.format == ModelFormat::gguf && !request.keep_split;
  }
  auto plan = plan_forget(model, options);
  if (!plan) return option_spelled(std::move(plan).error(), surface);
  return plan;
}

Result<ShardedPlan> forget_output_files(const ForgetPlan& plan, const ConvertRequest& request, std::string_view folder) {
  if (!plan.plan.prepares.empty()) return make_error(ErrorCode::internal, "forget: the output is cut after its prepares");
  ShardOptions shard = shard_options(request, folder);
  shard.llama_quantize_kv = request.keep_split;  // llama-quantize's own split files
  if (request.to == OutputFormat::gguf && !shard.gguf_split()) {  // one GGUF file: never a folder today
    return make_error(ErrorCode::internal, "forget: a GGUF folder without a split");
  }
  return split_plan(plan.plan, request.to, shard);
}

std::string forget_config_json(const Model& model, const Forgetter& forgetter) {
  if (model.config_json.empty() || forgetter.quantization_config_json() == "null") return {};
  // The config with its quantization_config replaced, as one JSON text, then printed.
  simdjson::dom::parser parser;
  simdjson::dom::object config;
  if (parser.parse(model.config_json).get_object().get(config)) return {};
  std::string merged = "{";
  const auto mirrors = forgetter.quantization_config_mirrors();
  auto replaced = [&](std::string_view key) {
    return key == "quantization_config" || std::find(mirrors.begin(), mirrors.end(), key) != mirrors.end();
  };
  for (auto kv : config) {
    if (replaced(kv.key)) continue;
    if (merged.size() > 1) merged += ',';
    append_json_string(merged, kv.key);
    merged += ':' + simdjson::to_string(kv.value);
  }
  if (merged.size() > 1) merged += ',';
  for (const auto& key : mirrors) {
    append_json_string(merged, key);
    merged += ':' + forgetter.quantization_config_json() + ',';
  }
  merged += "\"quantization_config\":" + forgetter.quantization_config_json() + "}";
  simdjson::dom::parser again;
  simdjson::dom::element root;
  if (again.parse(merged).get(root)) return {};
  std::string out;
  pretty(out, root, 0);
  return out + "\n";
}

}  // namespace amn
