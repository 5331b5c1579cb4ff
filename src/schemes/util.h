// Small helpers every family's detector uses: names, shapes in messages, config values.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "schemes/context.h"

namespace amn::schemes {

// `name` is a layer's stem followed by `suffix` ("model.q_proj" + ".qweight"): a name that
// is only the suffix names no layer.
inline bool has_stem_and_suffix(std::string_view name, std::string_view suffix) {
  return name.size() > suffix.size() && name.ends_with(suffix);
}

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A string member of the quantization config ("quant_method", "format"), or "".
inline std::string qconfig_string(const SchemeContext& ctx, const char* key) {
  auto q = ctx.quantization_config();
  std::string_view v;
  if (q && (*q)[key].get_string().get(v) == simdjson::SUCCESS) return std::string(v);
  return {};
}

}  // namespace amn::schemes
