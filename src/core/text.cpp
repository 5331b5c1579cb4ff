#include "core/text.h"

#include <simdjson.h>

#include "core/json.h"

namespace amn {

std::string printable(std::string_view s, size_t max_chars) {
  std::string out;
  for (unsigned char c : s.substr(0, max_chars)) out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
  if (s.size() > max_chars) out += "...";
  return out;
}

// By appends: GCC 12 warns (-Wrestrict, a false positive) on "'" + printable(...).
std::string quote(std::string_view name) {
  std::string out = "'";
  out += printable(name, 200);
  out += '\'';
  return out;
}

std::string dims_text(const std::vector<uint64_t>& dims) {
  std::string o;
  append_dims(o, dims);
  return o;
}

// simdjson's validator: the same rule as a hand-written decoder, vectorised natively.
bool valid_utf8(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

}  // namespace amn
