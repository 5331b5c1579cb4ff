#include "formats/npy/literal.h"

#include "core/checked.h"

namespace amn::npy {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 99;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string printable(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7F) return std::string("'") + c + "'";
  static const char* kHex = "0123456789abcdef";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

class Parser {
 public:
  Parser(std::string_view text, uint64_t base, const LiteralOptions& options)
      : s_(text), base_(base), options_(options) {}

  Result<PyValue> run() {
    skip_space();
    PyValue v;
    AMN_TRY(value(v, 0));
    skip_space();
    // A bare tuple ("1, 2") is a literal too, at the top level only.
    if (pos_ < s_.size() && s_[pos_] == ',') {
      PyValue t;
      t.kind = PyKind::tuple;
      t.offset = v.offset;
      t.items.push_back(std::move(v));
      while (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        skip_space();
        if (pos_ == s_.size()) break;
        PyValue item;
        AMN_TRY(value(item, 1));
        t.items.push_back(std::move(item));
        skip_space();
      }
      v = std::move(t);
    }
    if (pos_ != s_.size()) return fail("unexpected " + printable(s_[pos_]) + " after the literal", pos_);
    return v;
  }

 private:
  Error fail(std::string what, uint64_t at) const {
    return make_error(ErrorCode::parse,
                      "malformed header literal: " + std::move(what) + " (byte " + std::to_string(at) + " of the header)",
                      base_ + at);
  }

  // Whitespace, comments and line continuations, as Python's tokenizer skips them.
  void skip_space() {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f') {
        ++pos_;
      } else if (c == '\\' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '\n') {
        pos_ += 2;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      skip_space();
      return true;
    }
    return false;
  }

  Status value(PyValue& out, uint32_t depth) {
    skip_space();
    if (pos_ == s_.size()) return fail("unexpected end of the header, a value was expected", pos_);
    out.offset = pos_;
    const char c = s_[pos_];
    if (c == '{' || c == '[' || c == '(') {
      if (depth + 1 > kMaxLiteralDepth) {
        return make_error(ErrorCode::limit,
                          "header literal nests deeper than " + std::to_string(kMaxLiteralDepth) + " levels (byte " +
                              std::to_string(pos_) + " of the header)",
                          base_ + pos_);
      }
      if (c == '{') return dict(out, depth + 1);
      if (c == '[') return sequence(out, depth + 1, ']', PyKind::list);
      return sequence(out, depth + 1, ')', PyKind::tuple);
    }
    if (c == '\'' || c == '"') return strings(out);
    if (is_ident_start(c)) {
      size_t end = pos_;
      while (end < s_.size() && is_ident(s_[end])) ++end;
      const std::string_view word = s_.substr(pos_, end - pos_);
      if (starts_string()) return strings(out);
      if (word == "True" || word == "False") {
        out.kind = PyKind::boolean;
        out.truth = word == "True";
      } else if (word == "None") {
        out.kind = PyKind::none;
      } else {
        return fail("unexpected name '" + std::string(word.substr(0, 40)) + "' (only literals are allowed)", pos_);
      }
      pos_ = end;
      return {};
    }
    if (c == '+' || c == '-') {
      ++pos_;
      skip_space();
      if (pos_ == s_.size() || !(is_digit(s_[pos_]) || s_[pos_] == '.')) {
        return fail("a sign must be followed by a number", pos_);
      }
      AMN_TRY(number(out));
      out.offset = pos_ - 1;
      if (c == '-') out.negative = !out.negative && (out.magnitude != 0 || out.too_big);
      if (c == '-' && out.kind == PyKind::floating) out.text = "-" + out.text;
      return {};
    }
    if (is_digit(c) || (c == '.' && pos_ + 1 < s_.size() && is_digit(s_[pos_ + 1]))) return number(out);
    if (c == '\0') return fail("a NUL byte", pos_);
    return fail("unexpected " + printable(c), pos_);
  }

  Status dict(PyValue& out, uint32_t depth) {
    out.kind = PyKind::dict;
    ++pos_;
    skip_space();
    while (!eat('}')) {
      if (pos_ == s_.size()) return fail("unterminated dict", pos_);
      PyValue key, val;
      if (pos_ < s_.size() && s_[pos_] == '*') return fail("'**' unpacking is not a literal", pos_);
      AMN_TRY(value(key, depth));
      skip_space();
      if (pos_ < s_.size() && (s_[pos_] == ',' || s_[pos_] == '}') && out.keys.empty()) {
        return fail("set literals are not supported in an NPY header", key.offset);
      }
      if (!eat(':')) return fail("expected ':' after a dict key", pos_);
      AMN_TRY(value(val, depth));
      out.keys.push_back(std::move(key));
      out.items.push_back(std::move(val));
      if (eat(',')) continue;
      if (!eat('}')) return fail(pos_ < s_.size() ? "expected ',' or '}' in a dict" : "unterminated dict", pos_);
      break;
    }
    return {};
  }

  // A list, or a parenthesised tuple / grouping ("(1)" is 1, "(1,)" a tuple).
  Status sequence(PyValue& out, uint32_t depth, char close, PyKind kind) {
    out.kind = kind;
    ++pos_;
    skip_space();
    bool comma = false;
    while (!eat(close)) {
      if (pos_ == s_.size()) return fail(close == ']' ? "unterminated list" : "unterminated tuple", pos_);
      PyValue item;
      AMN_TRY(value(item, depth));
      out.items.push_back(std::move(item));
      if (eat(',')) {
        comma = true;
        continue;
      }
      if (!eat(close)) {
        const char* what = close == ']' ? "expected ',' or ']' in a list" : "expected ',' or ')' in a tuple";
        return fail(pos_ < s_.size() ? what : (close == ']' ? "unterminated list" : "unterminated tuple"), pos_);
      }
      break;
    }
    if (kind == PyKind::tuple && out.items.size() == 1 && !comma) {
      const uint64_t at = out.offset;
      PyValue inner = std::move(out.items.front());
      out = std::move(inner);
      out.offset = at;
    }
    return {};
  }

  // At a string literal: a quote, or up to two prefix letters and a quote.
  bool starts_string() const {
    for (size_t k = 0; k <= 2 && pos_ + k < s_.size(); ++k) {
      const char c = s_[pos_ + k];
      if (c == '\'' || c == '"') return true;
      if (!is_ident_start(c)) return false;
    }
    return false;
  }

  // One or more adjacent string literals, concatenated as Python does.
  Status strings(PyValue& out) {
    bool first = true;
    while (true) {
      bool raw = false, bytes = false;
      const size_t start = pos_;
      while (pos_ < s_.size() && is_ident_start(s_[pos_])) {
        const char p = static_cast<char>(s_[pos_] | 0x20);
        if (p == 'r') raw = true;
        else if (p == 'b') bytes = true;
        else if (p != 'u') return fail("string prefix '" + std::string(s_.substr(start, pos_ - start + 1)) + "' is not a literal", start);
        ++pos_;
      }
      const PyKind kind = bytes ? PyKind::bytes : PyKind::str;
      if (first) out.kind = kind;
      else if (out.kind != kind) return fail("cannot mix bytes and str literals", start);
      first = false;
      AMN_TRY(string_body(out.text, raw, bytes));
      const size_t after = pos_;
      skip_space();
      if (starts_string()) continue;
      pos_ = after;
      return {};
    }
  }

  Status string_body(std::string& out, bool raw, bool bytes) {
    const char q = s_[pos_];
    const size_t open = pos_;
    if (pos_ + 2 < s_.size() && s_[pos_ + 1] == q && s_[pos_ + 2] == q) {
      return fail("triple-quoted strings are not supported in an NPY header", pos_);
    }
    ++pos_;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n' || s_[pos_] == '\r') return fail("unterminated string", open);
      const char c = s_[pos_];
      if (c == q) {
        ++pos_;
        return {};
      }
      if (c == '\0') return fail("a NUL byte in a string", pos_);
      if (bytes && static_cast<unsigned char>(c) >= 0x80) return fail("a non-ASCII character in a bytes literal", pos_);
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (pos_ + 1 >= s_.size()) return fail("unterminated string", open);
      const char e = s_[pos_ + 1];
      if (raw) {
        // Raw strings keep the backslash; it only stops the next character closing them.
        out += c;
        out += e;
        pos_ += 2;
        continue;
      }
      const size_t esc = pos_;
      pos_ += 2;
      switch (e) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          if (bytes && e != 'x') {
            out += c;
            out += e;
            break;
          }
          const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            if (pos_ >= s_.size() || digit_value(s_[pos_]) > 15) {
              return fail(std::string("truncated \\") + e + " escape", esc);
            }
            cp = cp * 16 + static_cast<uint32_t>(digit_value(s_[pos_++]));
          }
          if (cp > 0x10FFFF) return fail("\\U escape beyond U+10FFFF", esc);
          if (bytes) out += static_cast<char>(cp);
          else append_utf8(out, cp);
          break;
        }
        case 'N':
          if (!bytes) return fail("\\N{...} escapes are not supported in an NPY header", esc);
          out += c;
          out += e;
          break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '7'; ++k) {
              cp = cp * 8 + static_cast<uint32_t>(s_[pos_++] - '0');
            }
            if (bytes) out += static_cast<char>(cp & 0xFF);
            else append_utf8(out, cp);
          } else {
            // Python keeps an unknown escape as written (with a warning).
            out += c;
            out += e;
          }
      }
    }
  }

  Status number(PyValue& out) {
    const size_t start = pos_;
    out.offset = start;
    int radix = 10;
    if (s_[pos_] == '0' && pos_ + 1 < s_.size()) {
      const char p = static_cast<char>(s_[pos_ + 1] | 0x20);
      if (p == 'x') radix = 16;
      else if (p == 'o') radix = 8;
      else if (p == 'b') radix = 2;
      if (radix != 10) pos_ += 2;
    }
    size_t digits = 0;
    bool overflow = false, nonzero_lead = false, leading_zero = false;
    uint64_t v = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == '_') {
        // Underscores only between digits (or right after a radix prefix).
        if (pos_ + 1 >= s_.size() || digit_value(s_[pos_ + 1]) >= radix || (digits == 0 && radix == 10)) {
          return fail("invalid number", start);
        }
        ++pos_;
        continue;
      }
      const int d = digit_value(c);
      if (d >= radix) break;
      if (digits == 0 && radix == 10) leading_zero = d == 0;
      if (d != 0) nonzero_lead = true;
      auto m = checked_mul(v, static_cast<uint64_t>(radix));
      auto a = m ? checked_add(*m, static_cast<uint64_t>(d)) : std::nullopt;
      if (!a) overflow = true;
      else v = *a;
      ++digits;
      ++pos_;
    }
    if (radix == 10 && pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E' ||
                                            s_[pos_] == 'j' || s_[pos_] == 'J')) {
      return floating(out, start);
    }
    if (digits == 0) return fail("invalid number", start);
    if (radix == 10 && leading_zero && nonzero_lead) {
      return fail("leading zeros in a decimal integer are not allowed", start);
    }
    if (options_.allow_long_suffix && pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l') &&
        (pos_ + 1 == s_.size() || !is_ident(s_[pos_ + 1]))) {
      ++pos_;
    }
    if (pos_ < s_.size() && is_ident(s_[pos_])) return fail("invalid number", start);
    out.kind = PyKind::integer;
    out.magnitude = overflow ? 0 : v;
    out.too_big = overflow;
    return {};
  }

  // Floats and imaginary numbers are literals but never valid in a header; they are kept
  // as their spelling so errors can name them.
  Status floating(PyValue& out, size_t start) {
    bool any_digit = false;
    while (pos_ < s_.size() && (is_digit(s_[pos_]) || s_[pos_] == '_')) any_digit = true, ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      while (pos_ < s_.size() && (is_digit(s_[pos_]) || s_[pos_] == '_')) any_digit = true, ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !is_digit(s_[pos_])) return fail("invalid number", start);
      while (pos_ < s_.size() && (is_digit(s_[pos_]) || s_[pos_] == '_')) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'j' || s_[pos_] == 'J')) ++pos_;
    if (!any_digit && pos_ == start) return fail("invalid number", start);
    if (pos_ < s_.size() && is_ident(s_[pos_])) return fail("invalid number", start);
    out.kind = PyKind::floating;
    out.text = std::string(s_.substr(start, pos_ - start));
    return {};
  }

  std::string_view s_;
  uint64_t base_;
  LiteralOptions options_;
  size_t pos_ = 0;
};

void describe_into(std::string& out, const PyValue& v, int budget) {
  if (out.size() > static_cast<size_t>(budget)) return;
  switch (v.kind) {
    case PyKind::str: case PyKind::bytes: {
      out += v.kind == PyKind::bytes ? "b'" : "'";
      for (unsigned char c : std::string_view(v.text).substr(0, 60)) {
        out += (c < 0x20 || c >= 0x7F) ? '?' : static_cast<char>(c);
      }
      if (v.text.size() > 60) out += "...";
      out += "'";
      return;
    }
    case PyKind::integer:
      if (v.negative) out += '-';
      out += v.too_big ? "<an integer beyond 64 bits>" : std::to_string(v.magnitude);
      return;
    case PyKind::floating: out += v.text; return;
    case PyKind::boolean: out += v.truth ? "True" : "False"; return;
    case PyKind::none: out += "None"; return;
    case PyKind::dict:
      out += '{';
      for (size_t i = 0; i < v.keys.size(); ++i) {
        if (i) out += ", ";
        if (out.size() > static_cast<size_t>(budget)) return;
        describe_into(out, v.keys[i], budget);
        out += ": ";
        describe_into(out, v.items[i], budget);
      }
      out += '}';
      return;
    case PyKind::tuple: case PyKind::list:
      out += v.kind == PyKind::list ? '[' : '(';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) out += ", ";
        if (out.size() > static_cast<size_t>(budget)) return;
        describe_into(out, v.items[i], budget);
      }
      if (v.kind == PyKind::tuple && v.items.size() == 1) out += ',';
      out += v.kind == PyKind::list ? ']' : ')';
      return;
  }
}

}  // namespace

Result<PyValue> parse_python_literal(std::string_view text, uint64_t base, const LiteralOptions& options) {
  return Parser(text, base, options).run();
}

std::string describe_literal(const PyValue& v) {
  std::string out;
  describe_into(out, v, 100);
  if (out.size() > 100) out = out.substr(0, 97) + "...";
  return out;
}

}  // namespace amn::npy
