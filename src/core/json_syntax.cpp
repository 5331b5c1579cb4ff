#include "core/json_syntax.h"

#include <cstdio>
#include <vector>

namespace amn {
namespace {

// One pass, no recursion (a header may be 100 MB of '['): containers are a stack of
// their opening bytes.
class Checker {
 public:
  explicit Checker(std::string_view text) : s_(text) {}

  JsonSyntaxError run() {
    ws();
    if (pos_ >= s_.size()) return fail(0, "the text is empty: no JSON value");
    std::vector<char> open;
    for (;;) {
      // A value starts at pos_.
      if (!value(open)) return err_;
      // After a value: close containers or go on to their next member.
      for (;;) {
        ws();
        if (open.empty()) {
          if (pos_ != s_.size()) return fail(pos_, "unexpected content after the JSON value");
          return {};
        }
        if (pos_ >= s_.size()) {
          return fail(pos_, open.back() == '{' ? "the text ends inside an object (expected ',' or '}')"
                                               : "the text ends inside an array (expected ',' or ']')");
        }
        const char c = s_[pos_];
        if (c == (open.back() == '{' ? '}' : ']')) {
          ++pos_;
          open.pop_back();
          continue;
        }
        if (c != ',') {
          return fail(pos_, open.back() == '{' ? "expected ',' or '}' after an object member, found " + shown(pos_)
                                               : "expected ',' or ']' after an array element, found " + shown(pos_));
        }
        ++pos_;
        ws();
        if (open.back() == '{' && !member_key()) return err_;
        break;
      }
    }
  }

 private:
  JsonSyntaxError fail(uint64_t at, std::string what) {
    err_ = {true, at, std::move(what)};
    return err_;
  }

  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  // The byte at `at`, for messages: 'x', or 0xNN when it is not printable ASCII.
  std::string shown(uint64_t at) const {
    if (at >= s_.size()) return "the end of the text";
    const auto c = static_cast<unsigned char>(s_[at]);
    if (c >= 0x21 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02X", c);
    return buf;
  }

  // "key": with pos_ at the key; leaves pos_ at the member's value.
  bool member_key() {
    if (pos_ >= s_.size()) return fail(pos_, "the text ends where an object key was expected"), false;
    if (s_[pos_] != '"') return fail(pos_, "expected a string key, found " + shown(pos_)), false;
    if (!string()) return false;
    ws();
    if (pos_ >= s_.size() || s_[pos_] != ':') return fail(pos_, "expected ':' after an object key, found " + shown(pos_)), false;
    ++pos_;
    ws();
    return true;
  }

  bool value(std::vector<char>& open) {
    for (;;) {
      if (pos_ >= s_.size()) return fail(pos_, "the text ends where a value was expected"), false;
      const char c = s_[pos_];
      if (c == '{' || c == '[') {
        ++pos_;
        ws();
        if (pos_ < s_.size() && s_[pos_] == (c == '{' ? '}' : ']')) {
          ++pos_;
          return true;  // empty
        }
        open.push_back(c);
        if (c == '{' && !member_key()) return false;
        continue;  // the first member's value
      }
      if (c == '"') return string();
      if (c == '-' || (c >= '0' && c <= '9')) return number();
      for (std::string_view word : {"true", "false", "null"}) {
        if (s_.substr(pos_, word.size()) == word) {
          pos_ += word.size();
          return true;
        }
      }
      return fail(pos_, "expected a value (object, array, string, number, true, false or null), found " + shown(pos_)), false;
    }
  }

  bool digits() {
    const uint64_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }

  bool number() {
    const uint64_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (!digits()) {
      return fail(start, "invalid number: no digit after '-'"), false;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!digits()) return fail(start, "invalid number: no digit after '.'"), false;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!digits()) return fail(start, "invalid number: no digit in its exponent"), false;
    }
    return true;
  }

  static bool hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

  // One UTF-8 sequence at pos_ (its first byte >= 0x80): RFC 3629, no overlongs, no surrogates.
  bool utf8() {
    const auto b = [&](uint64_t i) { return i < s_.size() ? static_cast<unsigned char>(s_[i]) : 0u; };
    const unsigned c = b(pos_);
    unsigned len = 0, lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = (c == 0xE0 ? 0xA0 : 0x80), hi = (c == 0xED ? 0x9F : 0xBF);
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = (c == 0xF0 ? 0x90 : 0x80), hi = (c == 0xF4 ? 0x8F : 0xBF);
    if (len == 0) return fail(pos_, "invalid UTF-8 (byte " + shown(pos_) + ")"), false;
    for (unsigned i = 1; i < len; ++i) {
      const unsigned x = b(pos_ + i);
      if (i == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) {
        return fail(pos_, "invalid UTF-8 (a sequence starting with byte " + shown(pos_) + ")"), false;
      }
    }
    pos_ += len;
    return true;
  }

  bool string() {
    const uint64_t start = pos_++;
    for (;;) {
      if (pos_ >= s_.size()) return fail(start, "unterminated string"), false;
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return fail(pos_, "control character " + shown(pos_) + " in a string (it must be escaped)"), false;
      if (c >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      if (c == '\\') {
        const char e = pos_ + 1 < s_.size() ? s_[pos_ + 1] : '\0';
        if (e == 'u') {
          for (uint64_t i = pos_ + 2; i < pos_ + 6; ++i) {
            if (i >= s_.size() || !hex(s_[i])) return fail(pos_, "invalid \\u escape in a string (4 hex digits expected)"), false;
          }
          pos_ += 6;
          continue;
        }
        if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos || e == '\0') {
          return fail(pos_, "invalid escape in a string (\\" + (e ? shown(pos_ + 1) : std::string("end")) + ")"), false;
        }
        pos_ += 2;
        continue;
      }
      ++pos_;
    }
  }

  std::string_view s_;
  uint64_t pos_ = 0;
  JsonSyntaxError err_;
};

// What simdjson's code means, for faults the checker does not model (limits of the
// parser, numbers out of range, surrogate escapes).
const char* words_for_code(simdjson::error_code err) {
  switch (err) {
    case simdjson::DEPTH_ERROR: return "the JSON nests too deep";
    case simdjson::CAPACITY:
    case simdjson::MEMALLOC: return "the JSON text is too large for the parser";
    case simdjson::NUMBER_ERROR:
    case simdjson::BIGINT_ERROR:
    case simdjson::NUMBER_OUT_OF_RANGE: return "a number is malformed or out of range";
    case simdjson::UTF8_ERROR: return "invalid UTF-8";
    case simdjson::STRING_ERROR: return "a string holds an invalid escape (for example a lone \\u surrogate)";
    case simdjson::UNCLOSED_STRING: return "unterminated string";
    case simdjson::UNESCAPED_CHARS: return "a string holds a control character that must be escaped";
    case simdjson::EMPTY: return "the text is empty: no JSON value";
    default: return "the text is not valid JSON";
  }
}

}  // namespace

JsonSyntaxError find_json_syntax_error(std::string_view text) { return Checker(text).run(); }

const char* json_error_words(simdjson::error_code err) { return words_for_code(err); }

std::string describe_json_error(simdjson::error_code err, std::string_view text, uint64_t base, uint64_t& offset) {
  if (err != simdjson::DEPTH_ERROR && err != simdjson::CAPACITY && err != simdjson::MEMALLOC) {
    JsonSyntaxError found = find_json_syntax_error(text);
    if (found.found) {
      offset = base + found.offset;
      return found.what + " at byte " + std::to_string(offset);
    }
  }
  return words_for_code(err);
}

}  // namespace amn
