// Small helpers every family's detector uses: names, shapes in messages, config values.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schemes/context.h"

namespace amn::schemes {

inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "[256, 512]", as messages show a shape.
inline std::string dims_text(const std::vector<uint64_t>& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
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
