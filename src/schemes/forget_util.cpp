#include "schemes/forget_util.h"

namespace amn {

std::string linear_keep_reason(const TensorRecord& t) {
  const std::string_view n = t.name;
  if (!n.ends_with(".weight")) return "not a layer weight";
  if (t.shape.size() != 2) return "not a 2-D linear weight";
  if (n.find("embed") != std::string_view::npos || n.ends_with("wte.weight") || n.ends_with("wpe.weight") ||
      n == "shared.weight" || n == "token_embd.weight") {
    return "an embedding (transformers quantizes nn.Linear layers only)";
  }
  if (n == "lm_head.weight" || n.ends_with(".lm_head.weight") || n == "output.weight") {
    return "the output layer (transformers keeps lm_head)";
  }
  return {};
}

std::string module_of(const std::string& name) {
  return name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
}

}  // namespace amn
