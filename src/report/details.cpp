// A model's "details": stored by the formats that write them at open (NumPy, PyTorch),
// written on demand for GGUF, whose open keeps its parsed header (GgufState) instead.
#include "formats/gguf/describe.h"
#include "report/report.h"

namespace amn {
namespace {

const GgufFile* gguf_header(const Model& model) {
  if (model.format != ModelFormat::gguf || !model.format_state) return nullptr;
  return &static_cast<const GgufState&>(*model.format_state).header;
}

}  // namespace

std::string details_json_of(const Model& model) {
  if (!model.details_json.empty()) return model.details_json;
  if (const GgufFile* g = gguf_header(model)) return gguf_details_json(*g);
  return "null";
}

std::vector<std::pair<std::string, std::string>> details_text_of(const Model& model) {
  if (!model.details_text.empty()) return model.details_text;
  if (const GgufFile* g = gguf_header(model)) return gguf_details_text(*g);
  return {};
}

}  // namespace amn
