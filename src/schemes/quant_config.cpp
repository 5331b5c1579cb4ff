#include "schemes/quant_config.h"

#include <array>
#include <cctype>
#include <string_view>

#include <simdjson.h>

#include "core/json.h"

namespace amn::schemes {
namespace {

// GPTQModel's QUANT_CONFIG_ARG_SYNONYMS (gptqmodel/quantization/config.py), the entries
// that name something detection reads.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kSynonyms = {{
    {"w_bit", "bits"}, {"wbits", "bits"}, {"q_group_size", "group_size"}}};

std::string_view canonical_key(std::string_view key) {
  for (const auto& [from, to] : kSynonyms) {
    if (key == from) return to;
  }
  return key;
}

// The quantizer's file in transformers' vocabulary (see the header).
std::string normalized(simdjson::dom::object q) {
  std::string out = "{";
  bool has_method = false, awq_keys = false;
  for (auto field : q) {
    const std::string_view key = canonical_key(field.key);
    // A synonym whose canonical key is also present loses to it.
    if (key != field.key && q[key].error() == simdjson::SUCCESS) continue;
    has_method |= key == "quant_method";
    awq_keys |= field.key == "w_bit" || field.key == "q_group_size";
    if (out.size() > 1) out += ',';
    append_json_string(out, key);
    out += ':';
    out += simdjson::minify(field.value);
  }
  if (!has_method) {
    if (out.size() > 1) out += ',';
    out += awq_keys ? "\"quant_method\":\"awq\"" : "\"quant_method\":\"gptq\"";
  }
  return out + "}";
}

// The value of one decoding parameter as text ("" when absent); the format under either
// of its names, versions compared case-insensitively (AutoAWQ writes "GEMM").
std::string value_of(simdjson::dom::object q, std::string_view key) {
  simdjson::dom::element v;
  if (key == "format") {
    if (q["checkpoint_format"].get(v) != simdjson::SUCCESS && q["format"].get(v) != simdjson::SUCCESS) return {};
  } else if (q[key].get(v) != simdjson::SUCCESS) {
    return {};
  }
  std::string text = simdjson::minify(v);
  if (key == "version") {
    for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return text;
}

}  // namespace

QuantConfigChoice choose_quant_config(const Model& model) {
  QuantConfigChoice out;
  simdjson::dom::parser config_parser, quant_parser;
  simdjson::dom::object from_config;
  bool has_from_config = false;
  simdjson::dom::element root;
  if (!model.config_json.empty() && config_parser.parse(model.config_json).get(root) == simdjson::SUCCESS) {
    has_from_config = root["quantization_config"].get_object().get(from_config) == simdjson::SUCCESS ||
                      root["quantization"].get_object().get(from_config) == simdjson::SUCCESS;
  }
  simdjson::dom::object own;
  if (!model.quant_config_json.empty() &&
      quant_parser.parse(model.quant_config_json).get_object().get(own) == simdjson::SUCCESS) {
    out.json = normalized(own);
    out.source = model.quant_config_file;
  } else if (has_from_config) {
    out.json = simdjson::minify(from_config);
    out.source = "config.json";
    return out;
  } else {
    // Neither file: the file's own record, as a forget output keeps it (convert/plan_forget.cpp).
    simdjson::dom::parser meta_parser;
    simdjson::dom::object from_metadata;
    for (const auto& [key, value] : model.metadata) {
      if (key != kQuantizationConfigKey) continue;
      if (meta_parser.parse(value).get_object().get(from_metadata) != simdjson::SUCCESS) break;
      out.json = simdjson::minify(from_metadata);
      out.source = kQuantizationConfigMetadataSource;
      break;
    }
    return out;
  }
  if (!has_from_config) return out;
  simdjson::dom::parser chosen_parser;
  simdjson::dom::object chosen;
  if (chosen_parser.parse(out.json).get_object().get(chosen) != simdjson::SUCCESS) return out;
  for (std::string_view key : {"quant_method", "bits", "group_size", "format", "sym", "desc_act", "zero_point", "version"}) {
    const std::string a = value_of(chosen, key), b = value_of(from_config, key);
    if (a.empty() || b.empty() || a == b) continue;
    out.warnings.push_back(out.source + " and config.json's quantization_config disagree on " +
                           std::string(key == "format" ? "checkpoint_format" : key) + " (" + a + " vs " + b + "); " +
                           out.source + " is used, as GPTQModel does");
  }
  return out;
}

}  // namespace amn::schemes
