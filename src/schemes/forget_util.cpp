#include "schemes/forget_util.h"

#include <algorithm>
#include <vector>

#include "kernels/lethe/torch_ops.h"
#include "schemes/forget.h"

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

float source_absmax(std::span<const uint8_t> source, DType from, uint64_t elements) {
  std::vector<float> chunk;
  float amax = 0;
  const uint64_t step = uint64_t{1} << 16;
  for (uint64_t e = 0; e < elements; e += step) {
    chunk.resize(std::min(step, elements - e));
    load_f32(source, from, e, chunk.size(), chunk.data());
    const float a = lethe::absmax(chunk.data(), chunk.size());
    amax = (a != a || amax != amax) ? a + amax : std::max(amax, a);  // NaN propagates
  }
  return amax;
}

std::string not_forgettable(const TensorRecord& t) {
  if (is_forgettable_dtype(t.dtype) && t.block_type.empty()) return {};
  return "stored as " + std::string(stored_type_name(t)) + " (forget reads F16, BF16 or F32)";
}

std::string module_of(const std::string& name) {
  return name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
}

}  // namespace amn
