// Plain-words JSON errors. simdjson says *that* a text is not JSON, with names such as
// TAPE_ERROR and no position; users need what is wrong and where. When simdjson rejects
// a text, describe_json_error() re-reads it with a small RFC 8259 checker that stops at
// the first fault and says what it found, at which byte. Only ever run on the error path.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include <simdjson.h>

namespace amn {

// What simdjson's DOM parser allocates per byte of input: a 4-byte structural index,
// an 8-byte tape entry and 5/3 of a byte of string buffer (dom_parser_implementation
// and document::allocate), rounded up. Charged against max_total_bytes.
inline constexpr uint64_t kJsonDomBytesPerByte = 14;

struct JsonSyntaxError {
  bool found = false;
  uint64_t offset = 0;  // byte offset in the text
  std::string what;     // "expected ',' or '}' after an object member", ...
};

// The first RFC 8259 fault of `text` (strings must be valid UTF-8). found == false when
// the text is valid JSON.
JsonSyntaxError find_json_syntax_error(std::string_view text);

// Why simdjson refused `text`, in words, with where when it can tell: "expected ':'
// after an object key at byte 17". `base` is the text's offset in its file, so the byte
// named (and `offset`, which receives it) is a file offset; `offset` stays unchanged
// when there is no position (a depth or size limit of the parser).
// simdjson's code in words, for when there is no text to re-read (no position).
const char* json_error_words(simdjson::error_code err);

std::string describe_json_error(simdjson::error_code err, std::string_view text, uint64_t base, uint64_t& offset);

}  // namespace amn
