// GGUF metadata supplied by people: one `key=value` argument (the CLI's --gguf-kv), a
// JSON document of KVs (--gguf-metadata, the shape of the info JSON's details.kv), and
// the merge of such overrides over the KVs a conversion would write. Syntax and typing
// rules: docs/formats/gguf-write.md.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "formats/gguf/parse.h"

namespace amn {

using GgufKv = std::pair<std::string, GgufValue>;

// One `key=value` or `key:TYPE=value`:
//  - untyped: `true` / `false` -> BOOL; a JSON integer -> UINT32 when 0 .. 2^32-1, INT32
//    when negative and >= -2^31, else UINT64 / INT64; a JSON number with a fraction or an
//    exponent -> FLOAT32; anything else (the empty string too) -> STRING, as written;
//  - typed: TYPE is a gguf_type_name() (any case); numbers are range-checked, floats
//    parsed correctly rounded (nan, inf accepted), BOOL takes true / false, STRING takes
//    the rest of the argument as is;
//  - arrays: `key:ARRAY[TYPE]=<JSON array>`, nested as ARRAY[ARRAY[TYPE]]; a bare ARRAY
//    (or an inner one) infers its element type from the elements (see below).
// Errors: invalid_argument naming the key; parse for malformed JSON.
Result<GgufKv> parse_gguf_kv_arg(std::string_view arg);

// A JSON object whose members are KVs, in order: `"key": value` with the value typed by
// inference (strings, booleans, numbers as above; arrays of one kind of element: strings,
// booleans, numbers — FLOAT32 if any has a fraction or exponent, else the narrowest of
// UINT32 / INT32 / UINT64 / INT64 that holds them all — or arrays), or
// `"key": {"type": "UINT32", "value": 4096}` with a type as the info JSON writes it
// ("ARRAY[STRING]", "ARRAY[ARRAY[INT32]]"). Float values may also be the strings "nan",
// "inf", "-inf" (the info JSON writes those as null, which is refused).
Result<std::vector<GgufKv>> parse_gguf_kv_json(std::string_view json);

// Each override replaces the value of the same key in `base` where it stands, or is
// appended; later overrides win over earlier ones.
void merge_gguf_kv(std::vector<GgufKv>& base, std::vector<GgufKv> overrides);

}  // namespace amn
