// core/json.h's writers: what they write reads back, through simdjson, as what was
// written. append_json_string escapes in runs (the bytes between escapes are appended at
// once), so strings are tried with escapes at the start, the end, side by side and alone.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <simdjson.h>

#include "core/json.h"

using namespace amn;

namespace {

std::string read_back_string(const std::string& json) {
  simdjson::dom::parser parser;
  std::string_view s;
  REQUIRE(parser.parse(json).get_string().get(s) == simdjson::SUCCESS);
  return std::string(s);
}

}  // namespace

TEST_CASE("append_json_string: every string reads back as itself", "[json]") {
  std::vector<std::string> cases = {"", "plain", "\"", "\\", "\"\"", "a\"b", "\\end\\", "\n", "tab\there",
                                    "\x01\x1f", "mixed \"q\" \\ \b\f\r\n\t \x7f", "h\xc3\xa9 \xf0\x9f\x98\x80"};
  std::string controls;  // every byte below 0x20, each between plain characters
  for (int c = 0; c < 0x20; ++c) controls += std::string("x") + static_cast<char>(c);
  cases.push_back(controls);
  cases.push_back(std::string("\0mid\0", 5));
  for (const auto& s : cases) {
    std::string out = "prefix:";
    append_json_string(out, s);
    INFO(out);
    REQUIRE(out.rfind("prefix:", 0) == 0);
    CHECK(read_back_string(out.substr(7)) == s);
  }
  std::string out;
  append_json_string(out, "a\"b\n");
  CHECK(out == R"("a\"b\n")");
  out.clear();
  append_json_string(out, std::string("\x01", 1));
  CHECK(out == R"("\u0001")");
}

TEST_CASE("append_uint, append_int and append_dims write decimal integers", "[json]") {
  std::string out;
  append_uint(out, 0);
  out += ' ';
  append_uint(out, std::numeric_limits<uint64_t>::max());
  out += ' ';
  append_int(out, std::numeric_limits<int64_t>::min());
  out += ' ';
  append_int(out, -7);
  out += ' ';
  append_dims(out, {});
  append_dims(out, {4096, 11008});
  CHECK(out == "0 18446744073709551615 -9223372036854775808 -7 [][4096, 11008]");
  JsonWriter w;
  w.begin_array().value(uint64_t{12345678901234567890u}).value(int64_t{-42}).end_array();
  CHECK(w.str() == "[12345678901234567890,-42]");
}
