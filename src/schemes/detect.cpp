#include "schemes/detect.h"

#include "schemes/context.h"
#include "schemes/quant_config.h"
#include "schemes/util.h"

namespace amn {

SchemeContext::SchemeContext(Model& model, FileSet& files) : model_(model), files_(files) {
  model_.part_of.assign(model_.tensors.size(), Model::kNotPart);
  by_name_.reserve(model_.tensors.size());
  for (uint32_t i = 0; i < model_.tensors.size(); ++i) by_name_.emplace(model_.tensors[i].name, i);
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (!model_.config_json.empty() && config_parser_.parse(model_.config_json).get(root) == simdjson::SUCCESS &&
      root.get_object().get(obj) == simdjson::SUCCESS) {
    config_ = obj;
  }
  auto choice = schemes::choose_quant_config(model_);
  for (auto& w : choice.warnings) model_.warnings.push_back(std::move(w));
  qconfig_source_ = choice.source;
  simdjson::dom::object q;
  if (!choice.json.empty() && parser_.parse(choice.json).get_object().get(q) == simdjson::SUCCESS) qconfig_ = q;
}

std::optional<uint32_t> SchemeContext::find(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end() || claimed(it->second)) return std::nullopt;
  return it->second;
}

void SchemeContext::claim(LogicalTensor l) {
  const auto index = static_cast<int32_t>(model_.logical.size());
  l.stored_bytes = 0;
  for (const auto& [role, record] : l.parts) {
    model_.part_of[record] = index;
    l.stored_bytes += model_.tensors[record].nbytes;
  }
  // A weight whose parts do not add up has no logical shape: count what its first part
  // stores, so parameter counts stay honest.
  if (l.shape.empty() && !l.error.empty() && !l.parts.empty()) l.shape = model_.tensors[l.parts.front().second].shape;
  l.elements = 1;
  for (auto d : l.shape) l.elements *= d;
  model_.logical.push_back(std::move(l));
}

Result<std::vector<std::vector<uint8_t>>> SchemeContext::read_records(std::span<const uint32_t> records) {
  std::vector<ByteRange> ranges;
  for (uint32_t r : records) ranges.push_back(range(r));
  return read_copies(files_, ranges);
}

ByteRange SchemeContext::range(uint32_t record) const {
  const auto& t = model_.tensors[record];
  return ByteRange{t.file, t.offset, t.nbytes};
}

// A model whose records no detector starts from (config_matters_at_open) and that has
// no quantization config anywhere: nothing to find and no config warning to give, so no
// context is built. Its name index over every record was a tenth of opening a
// 1,000-tensor header in Node (docs/benchmarks.md, "Small opens: plain models skip
// scheme detection").
static bool nothing_to_detect(const Model& model) {
  if (!model.config_json.empty() || !model.quant_config_json.empty()) return false;
  for (const auto& [key, value] : model.metadata) {
    if (key == schemes::kQuantizationConfigKey) return false;
  }
  return !config_matters_at_open(model);
}

Status run_detectors(Model& model, FileSet& files) {
  if (model.format != ModelFormat::safetensors) return {};
  SchemeContext ctx(model, files);
  AMN_TRY(detect_fp4(ctx));
  AMN_TRY(detect_bnb(ctx));
  AMN_TRY(detect_gptq(ctx));
  AMN_TRY(detect_awq(ctx));
  AMN_TRY(detect_compressed_tensors(ctx));
  AMN_TRY(detect_mlx(ctx));
  AMN_TRY(detect_fp8(ctx));
  if (model.logical.empty()) model.part_of.clear();
  return {};
}

Status detect_schemes(Model& model, FileSet& files) {
  if (model.format == ModelFormat::safetensors && nothing_to_detect(model)) {
    model.part_of.clear();
    return {};
  }
  return run_detectors(model, files);
}

bool config_matters_at_open(const Model& model) {
  if (model.format != ModelFormat::safetensors) return false;  // detect_schemes reads only these
  for (const auto& t : model.tensors) {
    const bool plain = t.dtype == DType::F16 || t.dtype == DType::BF16 || t.dtype == DType::F32 || t.dtype == DType::F64 ||
                       t.dtype == DType::I64 || t.dtype == DType::BOOL;
    if (!plain || schemes::has_stem_and_suffix(t.name, ".qweight")) return true;
  }
  return false;
}

}  // namespace amn
