// core/json_syntax: the checker that names a JSON fault and its byte when simdjson
// refuses a text. It must agree with simdjson on what is valid (a fault it cannot find
// falls back to words for simdjson's code, never to simdjson's own names).
#include <catch2/catch.hpp>

#include <string>

#include <simdjson.h>

#include "core/json_syntax.h"

using namespace amn;

namespace {

simdjson::error_code simdjson_says(const std::string& text) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  return parser.parse(text.data(), text.size()).get(root);
}

}  // namespace

TEST_CASE("valid JSON has no fault, as simdjson agrees", "[json]") {
  for (const std::string text : {"{}", "[]", " 0 ", "-0.5e+3", "\"a\\u00e9\\n\"", "true", "null",
                                 R"({"a":[1,2,{"b":null}],"c":"h\u00e9","d":-1.25E-2})", "\"h\xc3\xa9 \xf0\x9f\x98\x80\""}) {
    INFO(text);
    CHECK(simdjson_says(text) == simdjson::SUCCESS);
    CHECK_FALSE(find_json_syntax_error(text).found);
  }
}

TEST_CASE("each fault is named with its byte offset", "[json]") {
  struct Case {
    std::string text;
    uint64_t at;
    std::string what;
  };
  const Case cases[] = {
      {"", 0, "the text is empty"},
      {"{\"a\":1,}", 7, "expected a string key, found '}'"},
      {"{\"a\" 1}", 5, "expected ':' after an object key, found '1'"},
      {"{\"a\":1 \"b\":2}", 7, "expected ',' or '}' after an object member, found '\"'"},
      {"[1,2", 4, "the text ends inside an array"},
      {"[1 2]", 3, "expected ',' or ']' after an array element, found '2'"},
      {"{'a':1}", 1, "expected a string key, found '''"},
      {"{\"a\":tru}", 5, "expected a value"},
      {"{\"a\":01}", 6, "expected ',' or '}' after an object member, found '1'"},
      {"[-]", 1, "invalid number: no digit after '-'"},
      {"[1.]", 1, "invalid number: no digit after '.'"},
      {"[1e]", 1, "invalid number: no digit in its exponent"},
      {"\"abc", 0, "unterminated string"},
      {"\"a\tb\"", 2, "control character 0x09 in a string"},
      {"\"a\\qb\"", 2, "invalid escape in a string (\\'q')"},
      {"\"\\u12G4\"", 1, "invalid \\u escape"},
      {"\"\xff\"", 1, "invalid UTF-8 (byte 0xFF)"},
      {"\"\xc0\xaf\"", 1, "invalid UTF-8"},
      {"\"\xed\xa0\x80\"", 1, "invalid UTF-8"},
      {"{} x", 3, "unexpected content after the JSON value"},
      {std::string("{}\0", 3), 2, "unexpected content after the JSON value"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(simdjson_says(c.text) != simdjson::SUCCESS);
    const auto fault = find_json_syntax_error(c.text);
    REQUIRE(fault.found);
    CHECK(fault.offset == c.at);
    CHECK_THAT(fault.what, Catch::StartsWith(c.what));
  }
}

TEST_CASE("describe_json_error: file offsets, and words where there is no position", "[json]") {
  uint64_t at = 99;
  const std::string text = "{\"a\":1,}";
  CHECK(describe_json_error(simdjson_says(text), text, 8, at) == "expected a string key, found '}' at byte 15");
  CHECK(at == 15);
  at = 99;
  CHECK(describe_json_error(simdjson::DEPTH_ERROR, "[[[]]]", 0, at) == "the JSON nests too deep");
  CHECK(at == 99);
  // A fault the checker does not model (an integer beyond 64 bits): words, no simdjson name.
  const std::string big = "[123456789012345678901234567890]";
  const auto err = simdjson_says(big);
  if (err != simdjson::SUCCESS) {
    const std::string words = describe_json_error(err, big, 0, at);
    CHECK(words.find("_ERROR") == std::string::npos);
  }
  // 100,000 nested arrays: no recursion, no stack overflow.
  const std::string deep = std::string(100000, '[') + std::string(99999, ']');
  const auto fault = find_json_syntax_error(deep);
  REQUIRE(fault.found);
  CHECK(fault.offset == deep.size());
}
