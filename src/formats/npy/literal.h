// The Python literal an NPY header holds (NumPy reads it with ast.literal_eval). We parse
// it as the literal it is, never by substring search: a key inside a string, a second
// 'descr', a nested dict must not fool us. Only the literal kinds a header can use are
// modelled; the others (sets, complex numbers, triple-quoted strings) are refused.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace amn::npy {

enum class PyKind : uint8_t { dict, tuple, list, str, bytes, integer, floating, boolean, none };

struct PyValue {
  PyKind kind = PyKind::none;
  uint64_t offset = 0;     // of the value's first byte, within the parsed text
  std::string text;        // str / bytes contents (escapes decoded); a float's spelling
  // integer: |value|, its sign, and whether it does not fit 64 bits (Python ints are unbounded)
  uint64_t magnitude = 0;
  bool negative = false;
  bool too_big = false;
  bool truth = false;      // boolean
  std::vector<PyValue> items;  // tuple / list items; dict values
  std::vector<PyValue> keys;   // dict keys, in text order (keys[i] maps to items[i])
};

inline constexpr uint32_t kMaxLiteralDepth = 32;  // a header dict needs 4 (structured descr)

struct LiteralOptions {
  // NPY 1.0 / 2.0 headers may come from Python 2, whose long ints read "3L"; NumPy drops
  // the 'L' before evaluating (format.py _filter_header). Not for 3.0.
  bool allow_long_suffix = false;
};

// Parses `text` as one Python literal (surrounding whitespace allowed). Errors are parse
// errors whose offset is `base` + the position in text, or a limit error for nesting
// deeper than kMaxLiteralDepth.
Result<PyValue> parse_python_literal(std::string_view text, uint64_t base, const LiteralOptions& options);

// A short Python-like rendering for error messages (strings quoted, long values cut).
std::string describe_literal(const PyValue& v);

}  // namespace amn::npy
