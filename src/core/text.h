// Small text helpers for messages and checks, one copy each for every parser, writer and
// report: numbers, names quoted safely, shapes, UTF-8 validity.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace amn {

inline std::string num(uint64_t v) { return std::to_string(v); }

// At most `max_chars` bytes of `s` as they are, control characters as '?' (they would
// garble one-line errors), "..." when cut.
std::string printable(std::string_view s, size_t max_chars);

// 'name' for messages: printable, at most 200 bytes.
std::string quote(std::string_view name);

// "[256, 512]", as messages, tables and the model-info JSON show a shape.
std::string dims_text(const std::vector<uint64_t>& dims);

// Well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);

}  // namespace amn
